"""The CLI's metadata options read locally (issue 33): how a `--meta` value is typed, that what `quire files` shows
reads back as the same value, and that a malformed `--meta`, `--meta-json`, `--where` or `quire meta` is a usage
error (exit 2) before any client is made (the commands against the API: tests/integration/test_metadata_cli.py)."""

from typing import Any

import pytest

from shared import cli
from shared.cli import common, files, metadata
from shared.cli.metadata import meta_value, metadata_line, metadata_text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12", 12),
        ("-3.5", -3.5),
        ("true", True),
        ('["nda","q3"]', ["nda", "q3"]),
        ('"12"', "12"),
        ("acme", "acme"),
        ("02139", "02139"),
        ("2026-01-01", "2026-01-01"),
        ("NaN", "NaN"),
        ("", ""),
        ("a=b", "a=b"),
    ],
)
def test_a_meta_value_is_json_when_a_number_boolean_list_or_quoted_string_else_the_text(text: str, value: Any) -> None:
    parsed = meta_value(text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize(
    "value", ["acme", "12", "true", "null", "{}", "", "hello world", "2026-01-01", 12, 2.5, False, ["a b", "c"]]
)
def test_a_shown_value_reads_back_as_the_same_value(value: Any) -> None:
    assert meta_value(metadata_text(value)) == value
    assert type(meta_value(metadata_text(value))) is type(value)


def test_a_files_line_shows_metadata_keys_sorted() -> None:
    assert metadata_line({"region": "emea", "customer": "acme", "amount": 7}) == "amount=7 customer=acme region=emea"
    assert metadata_line({}) == ""


@pytest.fixture
def no_client(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Records any attempt to make an API client: a usage error must come before one."""
    made: list[Any] = []

    def refuse(*args: Any) -> None:
        made.append(args)
        raise AssertionError("a client was made")

    for module in (common, files, metadata):
        monkeypatch.setattr(module, "collections_client", refuse)
    return made


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["upload", "a.md", "--meta", "customer"], "argument --meta: 'customer' is not key=value"),
        (["upload", "a.md", "--meta", "=acme"], "argument --meta: '=acme' is not key=value"),
        (["upload", "a.md", "--meta", "x=null"], "argument --meta: x: null is not a metadata value"),
        (["upload", "a.md", "--meta", "x={}"], "argument --meta: x: {} is not a metadata value"),
        (["upload", "a.md", "--meta", "x=1e400"], "argument --meta: x: 1e400 is not a finite number"),
        (["upload", "a.md", "--meta-json", "[1]"], "argument --meta-json: must be a JSON object"),
        (["upload", "a.md", "--meta", "a=1", "--meta", "a=2"], "metadata key 'a' is given twice"),
        (["upload", "a.md", "--meta", "a=1", "--meta-json", '{"a": 2}'], "metadata key 'a' is given twice"),
        (["files", "--where", "{customer: acme}"], "argument --where: not JSON"),
        (["search", "q", "--where", '"acme"'], "argument --where: must be a JSON object"),
        (["ask", "q", "--where", "nope"], "argument --where: not JSON"),
        (["meta", "F", "set"], "set needs one or more KEY=VALUE pairs"),
        (["meta", "F", "rm"], "rm needs one or more keys"),
        (["meta", "F", "set", "customer"], "set: 'customer' is not key=value"),
        (["meta", "F", "--expect", "1"], "need an action: set or rm"),
        (["meta", "F", "clear"], "invalid choice: 'clear'"),
    ],
)
def test_a_malformed_option_is_a_usage_error_before_any_request(
    argv: list[str], message: str, no_client: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = cli.main(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        status = int(str(exit_.code))
    assert status == 2
    assert message in capsys.readouterr().err
    assert no_client == []
