"""cache.atomic_dir: a folder appears whole or not at all, whoever writes it."""
import pytest

from llmbench.cache import atomic_dir


def _writes(text):
    def build(d):
        (d / "config.json").write_text(text)
    return build


def test_a_failed_build_leaves_neither_the_folder_nor_its_temporary(tmp_path):
    def broken(d):
        (d / "half.bin").write_text("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_dir(tmp_path / "model", broken, "config.json")
    assert list(tmp_path.iterdir()) == []


def test_the_loser_of_a_race_keeps_the_winners_folder(tmp_path):
    target = tmp_path / "model"
    atomic_dir(target, _writes("first"), "config.json")
    atomic_dir(target, _writes("second"), "config.json")     # rename onto a full folder fails
    assert (target / "config.json").read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]   # the loser's temporary is gone


def test_a_folder_in_the_way_without_the_done_file_is_an_error(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "stray").write_text("?")
    with pytest.raises(OSError):
        atomic_dir(tmp_path / "model", _writes("new"), "config.json")
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
