"""The project's typed errors. The CLI turns every one of them into a message and exit code 2
(bad input) or 1 (a run that failed); never a traceback."""

from __future__ import annotations


class LLMBenchError(Exception):
    """Base of every error llmbench raises on purpose."""

    exit_code = 1


class SpecError(LLMBenchError):
    """Bad input: invalid YAML, unknown keys, wrong types, impossible combinations.

    `problems` holds one (field, message) pair per bad field so that all are reported at once.
    """

    exit_code = 2

    def __init__(self, problems: list[tuple[str, str]] | str, *, points: list | None = None):
        if isinstance(problems, str):
            problems = [("", problems)]
        self.problems = list(dict.fromkeys(problems))  # each problem once, in order
        #: the points that the valid rest of a spec expands into, so that later checks
        #: (models, engines) can report their problems in the same pass
        self.points = points
        super().__init__(self.render())

    def render(self) -> str:
        lines = []
        for field, msg in self.problems:
            lines.append(f"  {field}: {msg}" if field else f"  {msg}")
        return "invalid input:\n" + "\n".join(lines)


def did_you_mean(word: object, choices, n: int = 1) -> str:
    """' (did you mean 'x'?)' for a near miss among `choices`, else ''."""
    import difflib

    if not isinstance(word, str):
        return ""
    lower = [str(c).lower() for c in choices]
    # a part of the full name ('H200' for 'NVIDIA H200') first, then the near misses
    part = sorted((c for c in lower if word and word.lower() in c), key=len)
    close = list(dict.fromkeys(part + difflib.get_close_matches(word.lower(), lower, n=n, cutoff=0.6)))[:n]
    by_lower = {str(c).lower(): str(c) for c in choices}
    return f" (did you mean {' or '.join(repr(by_lower[c]) for c in close)}?)" if close else ""


class EngineNotInstalled(SpecError):
    """A backend's engine package is missing; names the extra that installs it."""

    def __init__(self, backend: str, package: str, extra: str, how: str | None = None):
        super().__init__([(f"backend {backend!r}",
                           f"needs the Python package {package!r}, which is not installed "
                           f"({how or f'pip install {chr(39)}llmbench[{extra}]{chr(39)}'})")])


class ModelError(SpecError):
    """Unknown model or model files that cannot be prepared."""


class EngineError(LLMBenchError):
    """The engine failed while running a point; fails that point, not the sweep."""


class ServerNotStarted(EngineError):
    """A server llmbench launched never became healthy: nothing was measured, so the exit
    status is 2, as for a server URL where nothing answers (not 1, which the CLI never lists)."""

    exit_code = 2


class StoreWriteError(LLMBenchError):
    """A record could not be written (e.g. the disk is full); names the point and the file."""
