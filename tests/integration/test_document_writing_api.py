"""Document writing over HTTP: edit proposals validated against the version they name and applied into a new
version (a dry run writes nothing); replacements of uploaded files that change nothing until approved, then
become the file's next version through the upload path and are extracted and indexed again."""

import threading
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.auth import Role, with_role
from shared.services.artifacts import ContentInput
from tests.integration.api_steps import REPORT, create, indexed, search
from tests.integration.files_stack import Stack


def propose(stack: Stack, token: str, artifact_id: str, base: int, operations: list[Any], *, dry: bool = False) -> Any:
    body = {"baseVersion": base, "operations": operations, "dryRun": dry}
    return stack.json("POST", f"/v1/artifacts/{artifact_id}/proposals", token, body)


def blocks(stack: Stack, token: str, artifact_id: str, version: int | None = None) -> list[Any]:
    query = f"?version={version}" if version else ""
    status, shown = stack.json("GET", f"/v1/artifacts/{artifact_id}{query}", token)
    assert status == 200
    return shown["content"]["blocks"]  # type: ignore[no-any-return]


def test_every_operation_applies_in_order_into_a_new_version_and_a_dry_run_writes_nothing(stack: Stack) -> None:
    token = stack.token()
    artifact_id = create(stack, token, {"markdown": REPORT})["artifactId"]
    # b1 heading, b2 paragraph, b3 heading "Risks", b4/b5 list items, b6 table
    operations = [
        {"op": "insert", "after": "b2", "markdown": "A new paragraph.\n\nAnd another."},
        {
            "op": "replace",
            "blockId": "b4",
            "blocks": [{"kind": "list_item", "text": "Supply chain (Asia)", "depth": 0}],
        },
        {"op": "delete", "blockId": "b5"},
        {"op": "move", "blockId": "b6", "after": "b1"},
        {"op": "set_cell", "blockId": "b6", "row": 2, "column": 1, "text": "9.5"},
        {"op": "rename_heading", "blockId": "b3", "text": "Risks and mitigations"},
    ]
    status, dry = propose(stack, token, artifact_id, 1, operations, dry=True)
    assert status == 200 and dry["dryRun"] and dry["version"] is None and dry["proposalId"] is None
    assert [change["op"] for change in dry["changes"]] == [
        "insert",
        "insert",
        "replace",
        "delete",
        "move",
        "set_cell",
        "rename_heading",
    ]
    assert stack.json("GET", f"/v1/artifacts/{artifact_id}/versions", token)[1]["latestVersion"] == 1
    status, applied = propose(stack, token, artifact_id, 1, operations)
    assert status == 201 and applied["version"] == 2 and applied["proposalId"]
    assert applied["changes"] == [{**change} for change in dry["changes"]]  # the writer is deterministic
    after = blocks(stack, token, artifact_id, 2)
    assert [(block["id"], block.get("text", "")) for block in after] == [
        ("b1", "Quarterly report"),
        ("b6", ""),
        ("b2", "Revenue grew in every region."),
        ("b7", "A new paragraph."),
        ("b8", "And another."),
        ("b3", "Risks and mitigations"),
        ("b4", "Supply chain (Asia)"),
    ]
    assert after[1]["table"]["rows"][2] == ["South", "9.5"]
    assert after[6]["headingPath"] == ["Quarterly report", "Risks and mitigations"]
    history = stack.json("GET", f"/v1/artifacts/{artifact_id}/versions", token)[1]["versions"]
    provenance = history[1]["provenance"]
    assert provenance["producer"] == "POST /v1/artifacts/{id}/proposals"
    assert provenance["proposalId"] == applied["proposalId"] and provenance["inputs"]["baseVersion"] == 1
    # The original version is as it was.
    assert [block["id"] for block in blocks(stack, token, artifact_id, 1)] == ["b1", "b2", "b3", "b4", "b5", "b6"]
    row = stack.container.database
    with row.tenant_transaction("acme") as conn:
        stored = conn.execute(
            "SELECT base_version, result_version, jsonb_array_length(operations) FROM artifact_proposals"
            " WHERE proposal_id = %s",
            (applied["proposalId"],),
        ).fetchone()
    assert stored == (1, 2, 6)


def test_a_stale_base_is_409_and_a_bad_operation_names_itself_and_writes_nothing(stack: Stack) -> None:
    token = stack.token()
    artifact_id = create(stack, token, {"markdown": "# Title\n\nBody.\n"})["artifactId"]
    assert propose(stack, token, artifact_id, 1, [{"op": "delete", "blockId": "b2"}])[0] == 201
    status, stale = propose(stack, token, artifact_id, 1, [{"op": "delete", "blockId": "b1"}])
    assert status == 409 and stale["latestVersion"] == 2
    for operation, words in (
        ({"op": "delete", "blockId": "b2"}, "operations[0] (delete): the version has no block 'b2'"),
        ({"op": "rename_heading", "blockId": "b9", "text": "x"}, "no block 'b9'"),
        ({"op": "set_cell", "blockId": "b1", "row": 0, "column": 0, "text": "x"}, "is a heading, not a table"),
        ({"op": "explode", "blockId": "b1"}, "operations[0]"),
    ):
        status, refused = propose(stack, token, artifact_id, 2, [operation])
        assert status == 400 and words in refused["message"], refused
    assert stack.json("GET", f"/v1/artifacts/{artifact_id}/versions", token)[1]["latestVersion"] == 2
    # Two proposals on the same base at once: exactly one version.
    results: list[int] = []
    barrier = threading.Barrier(4)

    def write() -> None:
        barrier.wait()
        results.append(
            propose(stack, token, artifact_id, 2, [{"op": "rename_heading", "blockId": "b1", "text": "Y"}])[0]
        )

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [201, 409, 409, 409]


def test_a_replacement_changes_nothing_until_approved_then_becomes_the_next_indexed_version(stack: Stack) -> None:
    token = stack.token(tenant="replacing")
    original = b"# Policy\n\nExpenses above 500 EUR need approval.\n"
    record = indexed(stack, token, "policy.md", original)
    file_id = record["fileId"]
    status, pending = stack.json(
        "POST",
        f"/v1/files/{file_id}/replacements",
        token,
        {"markdown": "# Policy\n\nExpenses above 900 EUR need approval from Zephyrine.\n"},
    )
    assert status == 201 and pending["state"] == "pending" and pending["newVersionId"] is None
    # Nothing changed: the same version, the same bytes, the same search results.
    status, file = stack.json("GET", f"/v1/files/{file_id}", token)
    assert file["current"]["versionId"] == record["current"]["versionId"] and len(file["versions"]) == 1
    assert search(stack, token, "Zephyrine")["outcome"] != "found"
    # Approved: the next version, through the upload path, extracted and indexed again.
    status, approved = stack.json("POST", f"/v1/replacements/{pending['replacementId']}/approve", token)
    assert status == 200 and approved["state"] == "approved" and approved["decidedBy"] == "ann"
    stack.events.join()
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, file = stack.json("GET", f"/v1/files/{file_id}", token)
    assert file["current"]["versionId"] == approved["newVersionId"]
    assert file["current"]["processingState"] == "indexed" and len(file["versions"]) == 2
    hit = search(stack, token, "Zephyrine")["hits"][0]
    assert hit["citation"]["versionId"] == approved["newVersionId"]
    # The first version is still there, unchanged.
    status, signed = stack.json("GET", f"/v1/files/{file_id}/content?versionId={record['current']['versionId']}", token)
    with urllib.request.urlopen(signed["url"], timeout=20) as response:
        assert response.read() == original
    # A decision is made once.
    status, again = stack.json("POST", f"/v1/replacements/{pending['replacementId']}/approve", token)
    assert status == 200 and again["newVersionId"] == approved["newVersionId"]
    status, late = stack.json("POST", f"/v1/replacements/{pending['replacementId']}/reject", token)
    assert status == 409 and "already approved" in late["message"]


def test_rejected_expired_and_stale_replacements_change_nothing(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    token = stack.token(tenant="replacing-no")
    record = indexed(stack, token, "notes.md", b"# Notes\n\nOriginal.\n")
    file_id = record["fileId"]

    def replacement(markdown: str) -> Any:
        status, made = stack.json("POST", f"/v1/files/{file_id}/replacements", token, {"markdown": markdown})
        assert status == 201, made
        return made

    rejected = replacement("# Notes\n\nRejected.\n")
    assert stack.json("POST", f"/v1/replacements/{rejected['replacementId']}/reject", token)[1]["state"] == "rejected"
    status, refused = stack.json("POST", f"/v1/replacements/{rejected['replacementId']}/approve", token)
    assert status == 409 and "already rejected" in refused["message"]
    expiring = replacement("# Notes\n\nToo late.\n")
    writer = stack.container.document_writer
    monkeypatch.setattr(writer, "_clock", lambda: datetime.now(UTC) + timedelta(days=8))
    status, expired = stack.json("POST", f"/v1/replacements/{expiring['replacementId']}/approve", token)
    monkeypatch.undo()
    assert status == 409 and "expired" in expired["message"]
    assert stack.json("GET", f"/v1/replacements/{expiring['replacementId']}", token)[1]["state"] == "expired"
    # A replacement made against a version that is no longer current is refused at approval.
    stale = replacement("# Notes\n\nStale.\n")
    newer = replacement("# Notes\n\nNewer.\n")
    status, approved = stack.json("POST", f"/v1/replacements/{newer['replacementId']}/approve", token)
    assert status == 200
    stack.events.join()
    status, conflict = stack.json("POST", f"/v1/replacements/{stale['replacementId']}/approve", token)
    assert status == 409 and "newer version" in conflict["message"]
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, file = stack.json("GET", f"/v1/files/{file_id}", token)
    assert len(file["versions"]) == 2 and file["current"]["versionId"] == approved["newVersionId"]
    # A format Quire cannot write says how to replace it instead.
    image = stack.upload(token, "chart.png", "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    status, unsupported = stack.json("POST", f"/v1/files/{image['fileId']}/replacements", token, {"markdown": "x"})
    assert status == 415 and f"/v1/files/{image['fileId']}/versions" in unsupported["message"]


@pytest.mark.parametrize(
    "caller",
    [{"tenant": "other-co", "collections": ("docs",)}, {"tenant": "acme", "collections": ("elsewhere",)}],
    ids=["other tenant", "other collection"],
)
def test_every_writing_route_answers_an_unentitled_caller_exactly_as_for_a_random_id(
    stack: Stack, caller: dict[str, Any]
) -> None:
    owner = stack.token()
    artifact_id = create(stack, owner, {"markdown": "# Mine\n"})["artifactId"]
    source = stack.upload(owner, "mine.md", "text/markdown", b"# Mine\n")
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, pending = stack.json("POST", f"/v1/files/{source['fileId']}/replacements", owner, {"markdown": "# New\n"})
    assert status == 201, pending
    intruder = stack.token(**caller)
    probes = [
        (
            "POST",
            "/v1/artifacts/{id}/proposals",
            artifact_id,
            {"baseVersion": 1, "operations": [{"op": "delete", "blockId": "b1"}]},
        ),
        ("POST", "/v1/files/{id}/replacements", source["fileId"], {"markdown": "# Theirs\n"}),
        ("GET", "/v1/replacements/{id}", pending["replacementId"], None),
        ("POST", "/v1/replacements/{id}/approve", pending["replacementId"], None),
        ("POST", "/v1/replacements/{id}/reject", pending["replacementId"], None),
    ]
    for method, path, real_id, body in probes:
        theirs = stack.json(method, path.format(id=real_id), intruder, body)
        random = stack.json(method, path.format(id=uuid.uuid4()), intruder, body)
        assert theirs == random and theirs[0] == 404, (path, theirs)
    assert stack.json("GET", f"/v1/replacements/{pending['replacementId']}", owner)[1]["state"] == "pending"


def test_reconciliation_accounts_for_artifact_content_and_staged_replacements_and_reports_orphans(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = stack.token(tenant="reconciled")
    artifact_id = create(stack, token, {"markdown": "# Kept\n"})["artifactId"]
    record = indexed(stack, token, "kept.md", b"# Kept\n")
    status, pending = stack.json("POST", f"/v1/files/{record['fileId']}/replacements", token, {"markdown": "# New\n"})
    assert status == 201
    # Content whose row was never written (a crash between the two) is waste, and reported as such.
    store = stack.container.artifact_store

    def crash(*_: Any, **__: Any) -> None:
        raise ConnectionError("gone before the row")

    monkeypatch.setattr(store, "add_version", crash)
    with pytest.raises(ConnectionError):
        stack.container.artifacts.add_version(
            with_role("reconciled", "ann", {"docs"}, Role.ADMIN),
            uuid.UUID(artifact_id),
            expected_latest=1,
            body=ContentInput(markdown="# Orphaned\n"),
            producer="test",
        )
    monkeypatch.undo()
    report = stack.container.reconciler.run(datetime.now(UTC)).as_dict()
    unexplained = [entry["key"] for entry in report["bytesWithoutRow"] if "/tenants/reconciled/" in f"/{entry['key']}"]
    assert [key for key in unexplained if "/replacements/" in key] == []
    artifact_keys = [key for key in unexplained if "/artifacts/" in key]
    assert len(artifact_keys) == 1 and artifact_id in artifact_keys[0]  # only the orphan
    assert pending["replacementId"]


def test_many_cell_edits_on_a_large_table_carry_only_the_cells_that_changed(stack: Stack) -> None:
    token = stack.token()
    rows = [["Item", "Qty"], *([f"item-{i}-" + "x" * 60, str(i)] for i in range(5_000))]
    made = create(stack, token, {"blocks": [{"kind": "table", "table": {"rows": rows, "header_rows": 1}}]})
    operations = [{"op": "set_cell", "blockId": "b1", "row": row, "column": 1, "text": "0"} for row in range(1, 501)]
    status, applied = propose(stack, token, made["artifactId"], 1, operations)
    assert status == 201 and len(applied["changes"]) == 500
    assert all(change["before"] is None and change["after"] is None for change in applied["changes"])
    second = {key: value for key, value in applied["changes"][1].items() if value is not None}
    assert applied["changes"][0]["textBefore"] == "0" and second == {
        "operation": 1, "op": "set_cell", "blockId": "b1", "position": 0, "row": 2, "column": 1,
        "textBefore": "1", "textAfter": "0",
    }  # fmt: skip
    table = blocks(stack, token, made["artifactId"], 2)[0]["table"]["rows"]
    assert [row[1] for row in table[1:502]] == ["0"] * 500 + ["500"]


def test_a_replacement_that_cannot_be_written_in_the_files_format_is_a_4xx_with_a_sentence(stack: Stack) -> None:
    token = stack.token(tenant="replacing-csv")
    ticket = stack.upload(token, "rates.csv", "text/csv", b"a,b\n1,2\n")
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, refused = stack.json("POST", f"/v1/files/{ticket['fileId']}/replacements", token, {"markdown": "# x\n"})
    assert status == 422 and "has none" in refused["message"] and refused["retryable"] is False
    status, made = stack.json(
        "POST", f"/v1/files/{ticket['fileId']}/replacements", token, {"markdown": "| a | b |\n| - | - |\n| 3 | 4 |\n"}
    )
    assert status == 201 and made["mediaType"] == "text/csv"
    # Half of a surrogate pair is not text: refused naming where, never a 500.
    status, answer = stack.json(
        "POST", "/v1/artifacts", token, {"collectionId": "docs", "name": "x", "markdown": "\ud800"}
    )
    assert status == 400 and "surrogate" in answer["message"] and "markdown" in answer["message"]


def test_an_artifact_cites_only_its_own_collection(stack: Stack) -> None:
    reader_of_both = stack.token(tenant="two-collections", collections=("hr", "legal"))
    record = indexed(stack, reader_of_both, "contract.md", b"# Contract\n\nThe notice period is 90 days.\n", "legal")
    hit = search(stack, reader_of_both, "notice period")["hits"][0]
    status, refused = stack.json(
        "POST",
        "/v1/artifacts",
        reader_of_both,
        {"collectionId": "hr", "name": "x", "markdown": "Notice [1].", "citations": [{"chunkId": hit["chunkId"]}]},
    )
    assert status == 400 and "'legal', not the artifact's 'hr'" in refused["message"]
    status, refused = stack.json(
        "POST",
        "/v1/artifacts",
        reader_of_both,
        {"collectionId": "hr", "name": "x", "markdown": "x", "sources": [{"fileId": record["fileId"]}]},
    )
    assert status == 400 and "sources[0]" in refused["message"]
    assert "two-collections" in stack.container.file_metadata.tenant_ids()
    # A tenant with only artifacts is in the registry the sweeps walk.
    create(stack, stack.token(tenant="artifacts-only"), {"markdown": "# Only\n"})
    assert "artifacts-only" in stack.container.file_metadata.tenant_ids()


def test_edits_on_an_empty_or_huge_table_and_a_deeply_nested_body_are_4xx_with_bounded_answers(stack: Stack) -> None:
    token = stack.token()
    made = create(stack, token, {"markdown": "# Title\n"})
    empty = {"op": "insert", "after": "b1", "blocks": [{"kind": "table", "table": {"rows": []}}]}
    status, refused = propose(
        stack,
        token,
        made["artifactId"],
        1,
        [empty, {"op": "set_cell", "blockId": "b2", "row": 0, "column": 0, "text": "x"}],
    )
    assert status == 400 and "0 rows" in refused["message"]
    rows = [["c" * 200] * 4 for _ in range(400)]
    big = create(stack, token, {"blocks": [{"kind": "table", "table": {"rows": rows}}]})
    status, deleted = propose(stack, token, big["artifactId"], 1, [{"op": "delete", "blockId": "b1"}])
    assert status == 201
    assert deleted["changes"][0]["before"] == {
        "id": "b1",
        "kind": "table",
        "bytes": deleted["changes"][0]["before"]["bytes"],
        "truncated": True,
    }
    # A body that nests past the parser's recursion limit (and holds an escape that makes the API read it).
    nested = '{"markdown": "\\ud800", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    request = urllib.request.Request(
        f"{stack.api}/v1/artifacts",
        data=nested.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        urllib.request.urlopen(request, timeout=20)
        status = 200
    except urllib.error.HTTPError as error:
        status = error.code
    assert status == 400


def test_a_replacement_refuses_citations_and_sources_instead_of_dropping_them(stack: Stack) -> None:
    token = stack.token(tenant="replacing-cited")
    record = indexed(stack, token, "policy.md", b"# Policy\n\nExpenses need approval.\n")
    for extra in ({"citations": [{"chunkId": "c-1"}]}, {"sources": [{"fileId": str(uuid.uuid4())}]}):
        status, refused = stack.json(
            "POST", f"/v1/files/{record['fileId']}/replacements", token, {"markdown": "# Policy\n\nNew.\n", **extra}
        )
        assert status == 400 and "carries no citations or sources" in refused["message"], refused
    status, _ = stack.json("GET", f"/v1/files/{record['fileId']}", token)
    assert status == 200
