"""POST /v1/search, GET /v1/coverage and POST /v1/reindex end to end: browser upload → extract → chunk →
embed (the real local MiniLM) → index → cited hits, over HTTP, as tenants and collections would use it."""

import re
import uuid
from pathlib import Path
from typing import Any

import psycopg

from shared.adapters.local.unavailable import UnavailableEmbedder
from shared.domain.citations import excerpt_is_at_location, regions_are_blocks
from shared.domain.search import Citation
from shared.local.api_client import media_type_for
from shared.local.demo import DEMO_QUERIES
from shared.local.demo_corpus import write_demo_corpus
from shared.services.indexing import Indexer, IndexTarget
from tests.integration.api_steps import RUNBOOK, indexed, search
from tests.integration.files_stack import Stack

HANDBOOK = b"""# Handbook

## Leave

Employees in Germany get thirty days of annual leave; in France twenty-five.
"""
SECRET_PLAN = b"Project Falcon: the acquisition of Kessler Antriebe closes in Q3-2026.\n"


def test_an_exact_identifier_and_a_paraphrase_are_found_with_citations_to_the_lines(stack: Stack) -> None:
    tenant = f"s{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant, collections=("docs",))
    runbook = indexed(stack, token, "runbook.md", RUNBOOK)
    indexed(stack, token, "handbook.md", HANDBOOK)
    assert runbook["current"]["indexing"]["embeddedChunkCount"] == runbook["current"]["indexing"]["chunkCount"] >= 2

    exact = search(stack, token, "ERR-4021")
    assert exact["outcome"] == "found" and exact["vectorAvailable"] is True
    top = exact["hits"][0]
    assert top["lexicalScore"] is not None
    citation = top["citation"]
    assert citation["fileId"] == runbook["fileId"]
    assert citation["versionId"] == runbook["current"]["versionId"]
    assert citation["filename"] == "runbook.md"
    assert citation["headingPath"] == ["Payments runbook", "Incident ERR-4021"]
    assert "certificate on the payments load balancer expired" in top["excerpt"]
    lines = RUNBOOK.decode().splitlines()
    cited = "\n".join(lines[citation["lineStart"] - 1 : citation["lineEnd"]])
    assert all(line in cited for line in top["excerpt"].splitlines() if line.strip())

    # Few shared words: the semantic lane finds it.
    paraphrase = search(stack, token, "why were buyers unable to complete their purchases", mode="semantic")
    assert paraphrase["hits"][0]["citation"]["headingPath"][-1] == "Incident ERR-4021"
    assert paraphrase["hits"][0]["vectorScore"] > 0.55

    leave = search(stack, token, "how much vacation do German staff receive")
    assert leave["hits"][0]["citation"]["filename"] == "handbook.md"


def test_search_sees_only_the_callers_tenant_and_collections_and_says_why_it_is_empty(stack: Stack) -> None:
    tenant, other = f"s{uuid.uuid4().hex[:10]}", f"s{uuid.uuid4().hex[:10]}"
    writer = stack.token(tenant=tenant, collections=("docs", "board"))
    indexed(stack, writer, "plan.md", SECRET_PLAN, collection="board")
    indexed(stack, writer, "runbook.md", RUNBOOK, collection="docs")

    staff = stack.token(tenant=tenant, collections=("docs",))
    answer = search(stack, staff, "Project Falcon acquisition Kessler")
    assert all(hit["citation"]["collectionId"] == "docs" for hit in answer.get("hits", []))
    # Nothing of the board's plan, but for the query's own words echoed in how it was read.
    assert answer["interpretedQuery"]["text"] == "Project Falcon acquisition Kessler"
    assert "Falcon" not in str({key: value for key, value in answer.items() if key != "interpretedQuery"})
    outsider = stack.token(tenant=other, collections=("docs", "board"))
    assert search(stack, outsider, "Project Falcon acquisition")["outcome"] in ("no_match", "below_floor")

    nobody = stack.token(tenant=tenant, collections=())
    refused = search(stack, nobody, "Project Falcon")
    assert refused == {
        "outcome": "no_access",
        "message": "You have access to no collection this search could look in.",
        "vectorAvailable": True,
        "interpretedQuery": {"text": "Project Falcon", "phrases": [], "excluded": [], "identifiers": []},
    }
    # Naming a collection one cannot read is the same answer as naming one that does not exist.
    assert search(stack, staff, "Falcon", filters={"collections": ["board"]})["outcome"] == "no_access"
    assert search(stack, staff, "Falcon", filters={"collections": ["no-such"]})["outcome"] == "no_access"

    nothing = search(stack, staff, "xylophone", mode="keyword")
    assert nothing["outcome"] == "no_match" and "hits" not in nothing


def test_a_deleted_file_is_unsearchable_at_once_and_its_citation_still_stands(stack: Stack) -> None:
    tenant = f"s{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    record = indexed(stack, token, "runbook.md", RUNBOOK)
    saved = search(stack, token, "ERR-4021")["hits"][0]["citation"]

    status, _ = stack.json("DELETE", f"/v1/files/{record['fileId']}", token)
    assert status == 202

    assert search(stack, token, "ERR-4021", mode="keyword")["outcome"] == "no_match"
    # The snapshot names what was read, and where, without a lookup that would now fail.
    assert saved["filename"] == "runbook.md" and saved["fileId"] == record["fileId"]
    assert "ERR-4021" in " ".join(saved["headingPath"]) and saved["excerpt"] and saved["retrievedAt"]


def test_a_new_version_replaces_the_files_chunks(stack: Stack) -> None:
    tenant = f"s{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    record = indexed(stack, token, "notes.md", b"# Notes\n\nThe launch code is ALPHA-17.\n")
    status, ticket = stack.json(
        "POST",
        f"/v1/files/{record['fileId']}/versions",
        token,
        {"filename": "notes.md", "mediaType": "text/markdown", "byteSize": 38},
    )
    assert status == 201
    assert stack.post_bytes(ticket, b"# Notes\n\nThe launch code is BRAVO-42.\n", "text/markdown") in (200, 204)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    assert search(stack, token, "ALPHA-17", mode="keyword")["outcome"] == "no_match"
    hit = search(stack, token, "BRAVO-42", mode="keyword")["hits"][0]
    assert hit["citation"]["versionId"] == ticket["versionId"]


def test_chunks_stored_without_vectors_are_reported_and_embedded_by_a_reindex(stack: Stack) -> None:
    tenant = f"s{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    record = indexed(stack, token, "runbook.md", RUNBOOK)
    # The embedder was down when this version was indexed: its chunks are keyword-only, and say why.
    found = stack.container.file_metadata.find_version(tenant, uuid.UUID(record["current"]["versionId"]))
    assert found is not None
    file, version = found
    down = Indexer(
        stack.container.knowledge,
        UnavailableEmbedder("the model is down", dimension=384),
        stack.container.adapters.language_detector,
    )
    target = IndexTarget(
        tenant_id=tenant,
        file_id=file.file_id,
        version_id=version.version_id,
        collection_id=file.collection_id,
        filename=version.filename,
        media_type=version.media_type,
        uploaded_at=version.created_at,
    )
    down.index(target, stack.container.documents.read(version), attempt=None)
    indexing = stack.json("GET", f"/v1/files/{record['fileId']}", token)[1]["current"]["indexing"]
    assert indexing["embeddedChunkCount"] == 0 and indexing["embeddingGap"] == "the model is down"
    coverage = stack.json("GET", "/v1/coverage", token)[1]
    assert coverage["collections"] == [
        {"collectionId": "docs", "files": 1, "indexed": 1, "failed": 0, "inProgress": 0, "stale": 0, "lexicalOnly": 1}
    ]
    # Keyword search still finds it; the semantic lane has nothing embedded to offer.
    assert search(stack, token, "ERR-4021", mode="keyword")["outcome"] == "found"

    # A re-index is started, not done, by the call: it returns with the version queued for the local worker.
    before = {line["step"]: line["calls"] for line in stack.json("GET", "/v1/usage", token)[1]["lines"]}
    status, batch = stack.json("POST", "/v1/reindex", token)
    assert status == 202
    assert (batch["queued"], batch["remaining"]) == (1, 0)
    # Queued versions leave the list: asking again starts nothing twice.
    assert stack.json("POST", "/v1/reindex", token)[1]["queued"] == 0
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    # The embedding ran through the pipeline's embed step, metered (and, on Bedrock, paid for) again.
    after = {line["step"]: line["calls"] for line in stack.json("GET", "/v1/usage", token)[1]["lines"]}
    assert after["embed"] > before.get("embed", 0)
    assert "extract" not in after or after["extract"] == before.get("extract", 0)
    assert stack.json("GET", "/v1/coverage", token)[1]["collections"][0]["lexicalOnly"] == 0
    again = search(stack, token, "why were buyers unable to complete their purchases", mode="semantic")
    assert again["hits"][0]["vectorScore"] is not None


def test_a_malformed_search_gets_a_clear_refusal(stack: Stack) -> None:
    token = stack.token()
    status, answer = stack.json(
        "POST",
        "/v1/search",
        token,
        {"query": "x", "filters": {"uploadedAfter": "2026-02-01T00:00:00Z", "uploadedBefore": "2026-01-01T00:00:00Z"}},
    )
    assert (status, answer["error"]) == (400, "invalid_request")
    assert "uploadedAfter must be earlier than uploadedBefore" in answer["message"]
    status, _ = stack.json("POST", "/v1/search", token, {"query": "x" * 2001})
    assert status == 422
    status, _ = stack.json("POST", "/v1/search", None, {"query": "x"})
    assert status == 401


def test_every_citation_points_at_text_that_contains_its_excerpt_in_every_format(stack: Stack, tmp_path: Path) -> None:
    # Given the demo corpus (PDF, DOCX, XLSX, PPTX, HTML, Markdown, CSV, text) ingested through the API
    tenant = f"s{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    documents = {}
    for path in write_demo_corpus(tmp_path):
        media_type = media_type_for(path)
        ticket = stack.upload(token, path.name, media_type, path.read_bytes())
        documents[ticket["fileId"]] = path.name
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    formats_cited = set()
    # When searches touch every document
    for query in [*DEMO_QUERIES, "supplier contract end dates", "password rules for administrators", "VPN code"]:
        answer = search(stack, token, query, limit=10)
        for hit in answer.get("hits", []):
            citation = hit["citation"]
            found = stack.container.file_metadata.find_version(tenant, uuid.UUID(citation["versionId"]))
            assert found is not None
            document = stack.container.documents.read(found[1])
            # Then the cited location's text contains every line of the excerpt, a page citation names one
            # page, and each cited region holds a block of the document (on its page and inside its box)
            cited = Citation.model_validate(_snake(citation))
            assert excerpt_is_at_location(document, cited), (query, citation)
            assert cited.page == cited.page_end, (query, citation)
            assert cited.regions and regions_are_blocks(document, cited), (query, citation)
            formats_cited.add(citation["mediaType"])
    assert len(formats_cited) >= 6, formats_cited


def _snake(value: Any) -> Any:
    """The API's camelCase keys in snake case, inside lists and nested objects too (a citation's regions)."""
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): _snake(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_snake(item) for item in value]
    return value


def test_a_stack_started_after_its_local_model_changed_re_embeds_what_the_old_one_embedded(
    stack: Stack, owner_connection: psycopg.Connection
) -> None:
    """An upgrade: chunks embedded by torch's fp32 MiniLM (another model id) are invisible to the vector lane
    until re-embedded; the local stack queues them itself as it starts."""
    from shared.local.supervisor import Supervisor

    tenant = f"s{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    record = indexed(stack, token, "runbook.md", RUNBOOK)
    owner_connection.execute(
        "UPDATE file_versions SET embedding_model = 'sentence-transformers/all-MiniLM-L6-v2' WHERE version_id = %s",
        (record["current"]["versionId"],),
    )
    owner_connection.execute(
        "UPDATE knowledge_chunks SET embedding_model = 'sentence-transformers/all-MiniLM-L6-v2' WHERE version_id = %s",
        (record["current"]["versionId"],),
    )
    question = "why were buyers unable to complete their purchases"
    assert search(stack, token, question, mode="semantic")["outcome"] == "no_match"
    assert stack.json("GET", "/v1/coverage", token)[1]["collections"][0]["stale"] == 1
    Supervisor._reembed_what_another_model_embedded(stack.container)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    assert stack.json("GET", "/v1/coverage", token)[1]["collections"][0]["stale"] == 0
    assert search(stack, token, question, mode="semantic")["hits"][0]["vectorScore"] is not None


def test_a_search_grouped_by_file_answers_with_the_best_files_each_with_its_best_hits(stack: Stack) -> None:
    tenant = f"g{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    sections = "\n\n".join(
        f"## Outage {number}\n\nCheckout failed for {number} minutes because the payments certificate expired."
        for number in range(1, 7)
    )
    indexed(stack, token, "outages.md", f"# Outage log\n\n{sections}\n".encode())
    indexed(stack, token, "runbook.md", RUNBOOK)
    indexed(stack, token, "handbook.md", HANDBOOK)
    # Another tenant's file on the same subject is never a group.
    indexed(stack, stack.token(tenant=f"o{uuid.uuid4().hex[:10]}"), "theirs.md", RUNBOOK)
    answer = search(stack, token, "checkout failed certificate expired", groupBy="file", hitsPerFile=2, limit=2)
    groups = answer["groups"]
    assert [group["filename"] for group in groups] == ["outages.md", "runbook.md"]
    assert [len(group["hits"]) for group in groups] == [2, 1]  # the runbook has one chunk on it
    for group in groups:
        assert group["score"] == group["hits"][0]["score"]
        assert all(hit["citation"]["fileId"] == group["fileId"] for hit in group["hits"])
    assert answer["hits"] == [hit for group in groups for hit in group["hits"]]
    assert search(stack, token, "checkout failed").get("groups") is None  # ungrouped unless asked
    status, refused = stack.json("POST", "/v1/search", token, {"query": "x", "groupBy": "file", "hitsPerFile": 11})
    assert status == 422 and refused["message"] == "hitsPerFile: at most 10", refused
    status, refused = stack.json("POST", "/v1/search", token, {"query": "x", "groupBy": "folder"})
    assert status == 422 and "groupBy" in refused["message"], refused
