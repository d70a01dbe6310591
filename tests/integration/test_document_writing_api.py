"""Document writing over HTTP: edit proposals validated against the version they name and applied into a new
version (a dry run writes nothing); replacements of uploaded files that change nothing until approved, then
become the file's next version through the upload path and are extracted and indexed again."""

import threading
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.integration.files_stack import Stack
from tests.integration.test_artifacts_api import REPORT, create
from tests.integration.test_search_api import indexed, search


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
    assert after[6]["heading_path"] == ["Quarterly report", "Risks and mitigations"]
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
