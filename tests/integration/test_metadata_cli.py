"""The CLI's metadata (issue 33) against the session's API: `quire upload --meta/--meta-json`, `quire meta FILE_ID
[set|rm]` with and without `--expect`, and `--where` on `quire files`, `quire search` and `quire ask`. The commands
run in this process (`cli.main`), through the real HTTP API, S3 stand-in and pipeline; only where the stack is
found is pointed at the session's API (the usage errors, which make no request, are tests/unit/test_cli_metadata.py).
"""

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared import cli
from tests.integration.files_stack import Stack

Run = Callable[..., tuple[int, str, str]]

CONTRACT = "# Supply contract\n\nThe supplier delivers turbine blades every quarter under this agreement.\n"
POLICY = "# Travel policy\n\nStaff book turbine inspection travel through the portal.\n"


@pytest.fixture
def run(stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """`quire ...` for a tenant of this test's own, with a token holding every role in `docs`."""
    monkeypatch.setattr("shared.local.stack.running_state", lambda paths: {"api": stack.api})
    token = stack.token(tenant=f"c{uuid.uuid4().hex[:10]}")

    def quire(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = cli.main([*argv, "--token", token])
        out, err = capsys.readouterr()
        return status, out, err

    return quire


def _upload(run: Run, path: Path, *meta: str) -> dict[str, Any]:
    status, out, err = run("upload", str(path), "--collection", "docs", *meta)
    assert status == 0, err
    file_id = out.split()[0]
    status, out, err = run("meta", file_id, "--json")
    assert status == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_upload_meta_types_values_and_where_filters_files_search_and_ask(
    stack: Stack, run: Run, tmp_path: Path
) -> None:
    (tmp_path / "contract.md").write_text(CONTRACT)
    (tmp_path / "policy.md").write_text(POLICY)
    contract = _upload(
        run,
        tmp_path / "contract.md",
        *("--meta", "customer=acme", "--meta", "amount=12", "--meta", "signed=true", "--meta", 'tags=["nda","q3"]'),
        *("--meta", 'code="12"', "--meta", "zip=02139", "--meta", "effective=2026-01-01"),
    )
    # As documented: JSON numbers, booleans, lists and quoted strings as JSON; anything else the text as written.
    assert contract["metadata"] == {
        "customer": "acme",
        "amount": 12,
        "signed": True,
        "tags": ["nda", "q3"],
        "code": "12",
        "zip": "02139",
        "effective": "2026-01-01",
    }
    assert contract["metadataRevision"] == 0
    policy = _upload(run, tmp_path / "policy.md", "--meta-json", '{"customer": "globex", "amount": 3.5}')
    assert policy["metadata"] == {"customer": "globex", "amount": 3.5}

    # The listing line shows the metadata compactly, in the form --meta reads back.
    status, out, _ = run("files")
    line = next(line for line in out.splitlines() if line.startswith(contract["fileId"]))
    shown = 'amount=12 code="12" customer=acme effective=2026-01-01 signed=true tags=["nda","q3"] zip=02139'
    assert line.endswith(f"contract.md  {shown}")

    status, out, _ = run("files", "--where", '{"greaterThan": {"key": "amount", "value": 5}}', "--json")
    assert status == 0
    assert [(record["fileId"], record["metadata"]["customer"]) for record in json.loads(out)] == [
        (contract["fileId"], "acme")
    ]
    # The effective date compares as a date: the string "2026-01-01" was read as one.
    status, out, _ = run("files", "--where", '{"lessThan": {"key": "effective", "value": "2026-01-02"}}', "--json")
    assert [record["fileId"] for record in json.loads(out)] == [contract["fileId"]]

    stack.container.workflow.drain()  # type: ignore[attr-defined]
    globex_only = '{"equals": {"key": "customer", "value": "globex"}}'
    acme_only = '{"equals": {"key": "customer", "value": "acme"}}'
    status, out, err = run("search", "turbine", "--where", globex_only, "--json")
    assert status == 0, err
    found = json.loads(out)
    assert found["outcome"] == "found"
    assert {hit["citation"]["fileId"] for hit in found["hits"]} == {policy["fileId"]}
    status, out, _ = run("search", "turbine", "--where", '{"equals": {"key": "customer", "value": "initech"}}')
    assert status == 0 and "no match" in out and "initech" in out
    status, out, err = run("ask", "How do staff book turbine inspection travel?", "--where", globex_only, "--json")
    assert status == 0, err
    assert {citation["fileId"] for citation in json.loads(out)["citations"]} == {policy["fileId"]}
    status, out, err = run("ask", "How do staff book turbine inspection travel?", "--where", acme_only, "--json")
    assert status == 0, err
    assert {citation["fileId"] for citation in json.loads(out)["citations"]} <= {contract["fileId"]}

    # The server's refusal of a filter, printed as it is: it names the path.
    status, _, err = run("files", "--where", '{"between": {"key": "amount", "value": 1}}')
    assert status == 1 and "filter.between: is not an operator" in err
    status, _, err = run("search", "turbine", "--where", '{"greaterThan": {"key": "customer", "value": true}}')
    assert status == 1 and "filter.greaterThan.value" in err


def test_meta_shows_sets_and_removes_keys_with_and_without_an_expected_revision(run: Run, tmp_path: Path) -> None:
    (tmp_path / "contract.md").write_text(CONTRACT)
    file_id = _upload(run, tmp_path / "contract.md", "--meta", "customer=acme")["fileId"]

    status, out, _ = run("meta", file_id)
    assert status == 0
    assert out.splitlines() == [f"{file_id}  contract.md  metadata revision 0", "  customer=acme"]

    status, out, err = run("meta", file_id, "set", "region=emea", "amount=7", "--expect", "0")
    assert status == 0, err
    assert out.splitlines()[0].endswith("metadata revision 1")
    assert "  amount=7" in out.splitlines() and "  region=emea" in out.splitlines()

    # A stale revision: nothing written, exit 1, and the current revision named.
    status, out, err = run("meta", file_id, "rm", "region", "--expect", "0")
    assert status == 1 and out == ""
    assert "at revision 1, not 0" in err and "--expect 1" in err

    status, out, err = run("meta", file_id, "rm", "region", "--json")
    assert status == 0, err
    after = json.loads(out)
    assert after["metadata"] == {"customer": "acme", "amount": 7}
    assert after["metadataRevision"] == 2

    # The server's 400s are printed as they are, naming the field.
    status, _, err = run("meta", file_id, "set", "amount=many")
    assert status == 1 and "amount: is a string, but amount is a number in this collection" in err
    status, _, err = run("meta", file_id, "set", "Customer=acme")
    assert status == 1 and "metadata.set.Customer" in err
    status, _, err = run("upload", str(tmp_path / "contract.md"), "--collection", "docs", "--meta", "amount=lots")
    assert status == 1 and "metadata.amount: is a string, but amount is a number" in err


def test_upload_language_declares_the_document_s_language(run: Run, tmp_path: Path) -> None:
    # An unknown code is a usage error before any request: tests/unit/test_cli_upload.py.
    (tmp_path / "hinweis.md").write_text("# Hinweis\n\nOK.\n")  # too short to detect: only the declaration tells
    status, out, err = run("upload", str(tmp_path / "hinweis.md"), "--collection", "docs", "--language", "de")
    assert status == 0, err
    status, out, err = run("meta", out.split()[0], "--json")
    assert status == 0, err
    assert json.loads(out)["current"]["declaredLanguage"] == "de"
