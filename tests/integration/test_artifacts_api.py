"""Artifacts over HTTP: create from Markdown or blocks, history with provenance, compare-and-set versions,
restore, citations from search, isolation probes and crash injection, against the real database and S3."""

import threading
import uuid
from typing import Any

import pytest

from shared.domain.artifacts import content_hash
from tests.integration.api_steps import REPORT, RUNBOOK, create, indexed, search
from tests.integration.files_stack import Stack


def new_version(stack: Stack, token: str, artifact_id: str, expected: int, markdown: str) -> tuple[int, Any]:
    body = {"expectedLatestVersion": expected, "markdown": markdown}
    return stack.json("POST", f"/v1/artifacts/{artifact_id}/versions", token, body)


def test_markdown_becomes_located_blocks_with_ids_and_the_server_records_provenance(stack: Stack) -> None:
    token = stack.token()
    made = create(stack, token, {"markdown": REPORT})
    assert made["latestVersion"] == 1 and made["version"]["version"] == 1
    blocks = made["content"]["blocks"]
    assert [block["kind"] for block in blocks] == ["heading", "paragraph", "heading", "list_item", "list_item", "table"]
    assert [block["id"] for block in blocks] == ["b1", "b2", "b3", "b4", "b5", "b6"]
    assert blocks[5]["table"]["rows"] == [["Region", "Revenue"], ["North", "12"], ["South", "9"]]
    assert blocks[5]["headingPath"] == ["Quarterly report", "Risks"]
    provenance = made["version"]["provenance"]
    assert provenance["producer"] == "POST /v1/artifacts"
    assert provenance["inputs"]["contentFormat"] == "markdown"
    assert provenance["inputs"]["name"] == "Q3"
    assert made["createdBy"] == "ann"
    status, shown = stack.json("GET", f"/v1/artifacts/{made['artifactId']}", token)
    assert status == 200 and shown["content"]["blocks"] == blocks
    assert "| North | 12 |" in shown["content"]["markdown"]


def test_blocks_are_accepted_as_the_document_route_returns_them_and_bad_content_is_refused(stack: Stack) -> None:
    token = stack.token()
    made = create(
        stack,
        token,
        {"blocks": [{"kind": "heading", "text": "Title", "level": 1}, {"kind": "paragraph", "text": "Body."}]},
    )
    assert [block["text"] for block in made["content"]["blocks"]] == ["Title", "Body."]
    # Exactly one of markdown and blocks.
    both = create(stack, token, {"markdown": "x", "blocks": []}, expect=400)
    assert "exactly one" in both["message"]
    create(stack, token, {}, expect=400)
    # A block that is not one says where.
    bad = create(stack, token, {"blocks": [{"kind": "paragraph", "text": "ok"}, {"kind": "poem"}]}, expect=400)
    assert bad["message"].startswith("blocks[1].kind")
    # An image reference is never taken from a caller (it would be a storage key).
    image = create(stack, token, {"blocks": [{"kind": "image", "text": "alt", "image_ref": "tenants/x/files/y"}]})
    assert "image_ref" not in image["content"]["blocks"][0]
    # Markers need citations when the content carries any; a name has a limit.
    create(stack, token, {"markdown": "x", "name": "n" * 201}, expect=400)


def test_a_new_version_is_a_compare_and_set_and_a_stale_writer_gets_409_with_the_current_version(
    stack: Stack,
) -> None:
    token = stack.token()
    artifact_id = create(stack, token, {"markdown": "# One\n"})["artifactId"]
    status, second = new_version(stack, token, artifact_id, 1, "# Two\n")
    assert status == 201 and second["latestVersion"] == 2
    status, stale = new_version(stack, token, artifact_id, 1, "# Stale\n")
    assert status == 409 and stale["error"] == "version_conflict" and stale["latestVersion"] == 2
    status, history = stack.json("GET", f"/v1/artifacts/{artifact_id}/versions", token)
    assert status == 200 and [v["version"] for v in history["versions"]] == [1, 2]
    assert history["versions"][1]["provenance"]["inputs"]["expectedLatestVersion"] == 1


def test_of_concurrent_writers_holding_the_same_version_exactly_one_wins(stack: Stack) -> None:
    token = stack.token()
    artifact_id = create(stack, token, {"markdown": "# Base\n"})["artifactId"]
    results: list[tuple[int, Any]] = []
    barrier = threading.Barrier(6)

    def write(number: int) -> None:
        barrier.wait()
        results.append(new_version(stack, token, artifact_id, 1, f"# Writer {number}\n"))

    writers = [threading.Thread(target=write, args=(number,)) for number in range(6)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    statuses = sorted(status for status, _ in results)
    assert statuses == [201, 409, 409, 409, 409, 409]
    assert all(body["latestVersion"] == 2 for status, body in results if status == 409)
    _, history = stack.json("GET", f"/v1/artifacts/{artifact_id}/versions", token)
    assert [v["version"] for v in history["versions"]] == [1, 2]


def test_restore_makes_a_new_version_that_reuses_the_restored_content(stack: Stack) -> None:
    token = stack.token()
    made = create(stack, token, {"markdown": "# First draft\n"})
    artifact_id = made["artifactId"]
    new_version(stack, token, artifact_id, 1, "# Second draft\n")
    status, restored = stack.json(
        "POST", f"/v1/artifacts/{artifact_id}/restore", token, {"version": 1, "expectedLatestVersion": 2}
    )
    assert status == 201 and restored["latestVersion"] == 3
    assert restored["version"]["contentHash"] == made["version"]["contentHash"]
    assert restored["version"]["provenance"]["restoredFrom"] == 1
    assert restored["content"]["blocks"][0]["text"] == "First draft"
    store = stack.container.artifact_store
    versions = store.versions("acme", uuid.UUID(artifact_id), after=None, limit=10)
    assert versions[2].content_key == versions[0].content_key  # one object, shared: content is immutable
    # An older version is still readable as it was.
    status, second = stack.json("GET", f"/v1/artifacts/{artifact_id}?version=2", token)
    assert status == 200 and second["content"]["blocks"][0]["text"] == "Second draft"
    status, missing = stack.json(
        "POST", f"/v1/artifacts/{artifact_id}/restore", token, {"version": 9, "expectedLatestVersion": 3}
    )
    assert status == 400 and "no version 9" in missing["message"]


def test_citations_come_from_stored_chunks_and_their_file_versions_join_the_provenance(stack: Stack) -> None:
    token = stack.token()
    record = indexed(stack, token, "runbook.md", RUNBOOK)
    hit = search(stack, token, "ERR-4021 certificate")["hits"][0]
    made = create(
        stack,
        token,
        {
            "markdown": "# Incident summary\n\nThe certificate expired [1].\n",
            "citations": [{"chunkId": hit["chunkId"]}],
            "sources": [{"fileId": record["fileId"]}],
        },
    )
    (citation,) = made["content"]["citations"]
    assert citation["number"] == 1 and citation["chunkId"] == hit["chunkId"]
    assert citation["citation"]["filename"] == "runbook.md"
    assert citation["citation"]["versionId"] == record["current"]["versionId"]
    (source,) = made["version"]["provenance"]["sources"]
    assert source == {
        "fileId": record["fileId"],
        "versionId": record["current"]["versionId"],
        "chunkIds": [hit["chunkId"]],
        "metadata": {},
        "metadataRevision": 0,
    }
    # A marker with no citation behind it is refused, naming the block.
    status, refused = stack.json(
        "POST",
        "/v1/artifacts",
        token,
        {"collectionId": "docs", "name": "x", "markdown": "See [2].", "citations": [{"chunkId": hit["chunkId"]}]},
    )
    assert status == 400 and "[2]" in refused["message"]
    # A chunk or file the caller cannot read is not found, exactly like one that does not exist.
    outsider = stack.token(collections=("elsewhere",))
    for body in (
        {"markdown": "x [1]", "citations": [{"chunkId": hit["chunkId"]}]},
        {"markdown": "x", "sources": [{"fileId": record["fileId"]}]},
    ):
        status, theirs = stack.json(
            "POST", "/v1/artifacts", outsider, {"collectionId": "elsewhere", "name": "x", **body}
        )
        status_random, random = stack.json(
            "POST",
            "/v1/artifacts",
            outsider,
            {
                "collectionId": "elsewhere",
                "name": "x",
                **(
                    {"markdown": "x [1]", "citations": [{"chunkId": f"{uuid.uuid4()}:0"}]}
                    if "citations" in body
                    else {"markdown": "x", "sources": [{"fileId": str(uuid.uuid4())}]}
                ),
            },
        )
        assert (status, theirs) == (status_random, random) and status == 404


@pytest.mark.parametrize(
    "caller",
    [{"tenant": "other-co", "collections": ("docs",)}, {"tenant": "acme", "collections": ("elsewhere",)}],
    ids=["other tenant", "other collection"],
)
def test_every_artifact_route_answers_an_unentitled_caller_exactly_as_for_a_random_id(
    stack: Stack, caller: dict[str, Any]
) -> None:
    owner = stack.token()
    artifact_id = create(stack, owner, {"markdown": "# Secret plan\n"})["artifactId"]
    intruder = stack.token(**caller)
    probes = [
        ("GET", "/v1/artifacts/{id}", None),
        ("GET", "/v1/artifacts/{id}?version=1", None),
        ("GET", "/v1/artifacts/{id}/versions", None),
        ("POST", "/v1/artifacts/{id}/versions", {"expectedLatestVersion": 1, "markdown": "# Mine now\n"}),
        ("POST", "/v1/artifacts/{id}/restore", {"version": 1, "expectedLatestVersion": 1}),
    ]
    for method, path, body in probes:
        theirs = stack.json(method, path.format(id=artifact_id), intruder, body)
        random = stack.json(method, path.format(id=uuid.uuid4()), intruder, body)
        malformed = stack.json(method, path.format(id="not-a-uuid"), intruder, body)
        assert theirs == random == malformed and theirs[0] == 404, (method, path, theirs)
    # Their listing does not show it, and nothing changed.
    status, listed = stack.json("GET", "/v1/artifacts", intruder)
    assert status == 200 and artifact_id not in {a["artifactId"] for a in listed["artifacts"]}
    status, history = stack.json("GET", f"/v1/artifacts/{artifact_id}/versions", owner)
    assert [v["version"] for v in history["versions"]] == [1]
    # Creating in a collection the caller cannot see is refused the same way.
    status, _ = stack.json("POST", "/v1/artifacts", intruder, {"collectionId": "docs", "name": "x", "markdown": "x"})
    assert status == (404 if caller["tenant"] == "acme" else 201)


def test_a_crash_between_the_content_and_the_row_leaves_no_row_and_no_row_ever_points_at_missing_content(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = stack.token(tenant="crashes")
    store = stack.container.artifact_store
    content = stack.container.content

    def crash(*_: Any, **__: Any) -> None:
        raise ConnectionError("the database went away after the content was written")

    written: list[str] = []
    real_put = content.put

    def recording_put(key: str, body: bytes, *, content_type: str) -> Any:
        written.append(key)
        return real_put(key, body, content_type=content_type)

    monkeypatch.setattr(content, "put", recording_put)
    monkeypatch.setattr(store, "create", crash)
    with pytest.raises(ConnectionError):
        stack.container.artifacts.create(
            principal(stack, "crashes"),
            collection_id="docs",
            name="half",
            body=content_input("# Half written\n"),
            producer="test",
        )
    monkeypatch.undo()
    # The content object exists (waste, not corruption) and no artifact refers to anything.
    assert len(written) == 1 and content.head(written[0]) is not None
    status, listed = stack.json("GET", "/v1/artifacts", token)
    assert status == 200 and listed["artifacts"] == []
    # The reverse order can never happen: when the content cannot be written, no row is made.
    monkeypatch.setattr(content, "put", crash)
    with pytest.raises(ConnectionError):
        stack.container.artifacts.create(
            principal(stack, "crashes"), collection_id="docs", name="x", body=content_input("# X\n"), producer="test"
        )
    monkeypatch.undo()
    assert stack.json("GET", "/v1/artifacts", token)[1]["artifacts"] == []
    # Every version row of the tenant names content that exists and matches its hash.
    made = create(stack, token, {"markdown": "# Whole\n"})
    for version in store.versions("crashes", uuid.UUID(made["artifactId"]), after=None, limit=10):
        raw = content.get(version.content_key, max_bytes=10_000_000)
        assert content_hash(raw) == version.content_hash


def test_content_over_a_limit_is_refused_naming_it(stack: Stack) -> None:
    token = stack.token()
    limits = stack.container.artifacts.limits
    too_many = [{"kind": "paragraph", "text": "x"}] * (limits.max_blocks + 1)
    status, answer = stack.json(
        "POST", "/v1/artifacts", token, {"collectionId": "docs", "name": "big", "blocks": too_many}
    )
    assert status in (400, 413) and str(limits.max_blocks) in answer["message"]
    wide = {"kind": "table", "table": {"rows": [["c"] * (limits.max_table_columns + 1)]}}
    status, answer = stack.json("POST", "/v1/artifacts", token, {"collectionId": "docs", "name": "w", "blocks": [wide]})
    assert status == 413 and str(limits.max_table_columns) in answer["message"]


def principal(stack: Stack, tenant: str) -> Any:
    from shared.domain.auth import Role, with_role

    return with_role(tenant, "ann", {"docs"}, Role.ADMIN)


def content_input(markdown: str) -> Any:
    from shared.services.artifacts import ContentInput

    return ContentInput(markdown=markdown)


CONTRACT = b"# Supply contract\n\nThe supplier delivers turbine blades every quarter under this agreement.\n"


def upload_with_metadata(stack: Stack, token: str, filename: str, metadata: dict[str, Any]) -> Any:
    return stack.processed_markdown(token, filename, CONTRACT, metadata)


def test_each_version_keeps_its_sources_metadata_as_it_was_when_the_version_was_made(stack: Stack) -> None:
    token = stack.token(tenant=f"p{uuid.uuid4().hex[:10]}")  # its own tenant: metadata key types are per collection
    ticket = upload_with_metadata(stack, token, "contract.md", {"customer": "acme", "tags": ["nda"]})
    hit = search(stack, token, "turbine blades")["hits"][0]
    body = {"markdown": "Blades ship quarterly [1].\n", "citations": [{"chunkId": hit["chunkId"]}]}
    first = create(stack, token, {**body, "sources": [{"fileId": ticket["fileId"]}]})
    was = {"fileId": ticket["fileId"], "versionId": ticket["versionId"], "chunkIds": [hit["chunkId"]]}
    acme = {"metadata": {"customer": "acme", "tags": ["nda"]}, "metadataRevision": 0}
    assert first["version"]["provenance"]["sources"] == [{**was, **acme}]
    status, patched = stack.json(
        "PATCH", f"/v1/files/{ticket['fileId']}/metadata", token, {"set": {"customer": "globex"}, "remove": ["tags"]}
    )
    assert status == 200 and patched["metadataRevision"] == 1, patched
    artifact_id = first["artifactId"]
    status, second = stack.json(
        "POST", f"/v1/artifacts/{artifact_id}/versions", token, {**body, "expectedLatestVersion": 1}
    )
    assert status == 201, second
    globex = {"metadata": {"customer": "globex"}, "metadataRevision": 1}
    assert second["version"]["provenance"]["sources"] == [{**was, **globex}]
    assert second["content"]["citations"][0]["citation"]["metadata"] == {"customer": "globex"}
    # Version 1 is evidence of what it was made from: the patch did not reach it, nor its citation.
    status, history = stack.json("GET", f"/v1/artifacts/{artifact_id}/versions", token)
    assert status == 200
    assert [v["provenance"]["sources"] for v in history["versions"]] == [[{**was, **acme}], [{**was, **globex}]]
    status, shown = stack.json("GET", f"/v1/artifacts/{artifact_id}?version=1", token)
    assert shown["content"]["citations"][0]["citation"]["metadataRevision"] == 0
    # A restore is version 1's content again, with version 1's provenance.
    status, restored = stack.json(
        "POST", f"/v1/artifacts/{artifact_id}/restore", token, {"version": 1, "expectedLatestVersion": 2}
    )
    assert status == 201 and restored["version"]["provenance"]["sources"] == [{**was, **acme}]
