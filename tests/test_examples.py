"""Every example sweep in examples/ validates (the same checks a real run makes first)."""

from pathlib import Path

import pytest

from llmbench.kinds.inference.kind import validate
from llmbench.kinds.inference.spec import load_spec

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_validates(path):
    from llmbench.backends import installed

    spec = load_spec(path)
    if not all(installed(b) for b in spec.backends):
        pytest.skip(f"{path.name} needs {spec.backends}")
    points = spec.points()
    assert points
    validate(points)


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


def test_readme_sweep_validates(tmp_path):
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("```yaml") + len("```yaml")
    spec_file = tmp_path / "readme.yaml"
    spec_file.write_text(readme[start:readme.index("```", start)])
    validate(load_spec(spec_file).points())
