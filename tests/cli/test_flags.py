import pytest

from llmbench.cli.flags import int_list, parse_assignments, parse_list
from llmbench.errors import SpecError


def test_parse_assignments():
    assert parse_assignments(["compile=true,false", "kv_cache=static", "kv_block_size=16"], "-o") == {
        "compile": [True, False], "kv_cache": "static", "kv_block_size": 16}
    with pytest.raises(SpecError):
        parse_assignments(["novalue"], "-o")


def test_int_list_names_its_flag():
    assert int_list("1, 4,16", "--batch-size") == [1, 4, 16]
    assert parse_list("a,,b") == ["a", "b"]
    with pytest.raises(SpecError) as e:
        int_list("1,x", "--batch-size")
    assert e.value.problems == [("--batch-size", "'1,x' must be a comma-separated list of integers")]
    assert int_list(",", "--concurrency") == []
    with pytest.raises(SpecError) as e:
        int_list(",", "--concurrency", at_least_one=True)
    assert e.value.problems[0][0] == "--concurrency"
