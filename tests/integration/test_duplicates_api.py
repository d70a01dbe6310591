"""Duplicates end to end (issue 37): identical texts collapsed into one search hit with the other places under
`alsoIn` (HTTP, the search tool, every mode), never a place the caller cannot read; and `duplicateOf` on the
upload's ticket and the file view when the same bytes are already in the collection."""

import base64
import copy
import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest

from shared.adapters.postgres.database import Database
from tests.integration.api_steps import indexed, search
from tests.integration.files_stack import Stack
from tests.integration.tool_steps import result

PUBLIC_PDF = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "data"
    / "pdfs"
    / "sample-files"
    / "026-latex-multicolumn"
    / "multicolumn.pdf"
)
CLAUSE = b"""# Terms

## Liability

Neither party is liable for indirect damages arising from late delivery of the goods.
"""
OTHER = b"""# Notes

Deliveries arrive on Tuesdays; the warehouse closes at noon on Fridays.
"""


def uploaded_pdf(stack: Stack, token: str, content: bytes, name: str, collection: str = "docs") -> dict[str, Any]:
    ticket = stack.upload(token, name, "application/pdf", content, collection=collection)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200 and record["current"]["processingState"] == "indexed", record
    return record  # type: ignore[no-any-return]


@pytest.mark.skipif(not PUBLIC_PDF.exists(), reason="../shared/data/pdfs is not present on this machine")
@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_the_same_pdf_uploaded_twice_into_one_collection_gives_a_first_page_without_pairs(
    stack: Stack, mode: str
) -> None:
    tenant = f"d{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    content = PUBLIC_PDF.read_bytes()
    first = uploaded_pdf(stack, token, content, "multicolumn.pdf")
    second = uploaded_pdf(stack, token, content, "multicolumn (1).pdf")
    chunks = first["current"]["indexing"]["chunkCount"]
    assert chunks == second["current"]["indexing"]["chunkCount"] >= 10

    page = search(stack, token, "lorem ipsum dolor sit amet consectetuer", mode=mode, limit=10)
    assert page["outcome"] == "found"
    hits = page["hits"]
    excerpts = [hit["excerpt"] for hit in hits]
    assert len(set(excerpts)) == len(excerpts), "a pair of identical hits on the first page"
    # Both copies were candidates (or were found by their text): each hit names the other copy, at the same place.
    files = {first["fileId"]: second["fileId"], second["fileId"]: first["fileId"]}
    for hit in hits:
        (other,) = hit["alsoIn"]
        assert other["fileId"] == files[hit["citation"]["fileId"]]
        assert other["filename"] in ("multicolumn.pdf", "multicolumn (1).pdf")
        assert other["page"] == hit["citation"]["page"] and other["pageEnd"] == hit["citation"]["pageEnd"]
        assert other["versionId"] != hit["citation"]["versionId"]
        assert "excerpt" not in other and "retrievedAt" not in other
    # The lanes rank the copies alike: the first upload is the one cited, whichever a lane listed first.
    assert {hit["citation"]["fileId"] for hit in hits} == {first["fileId"]}
    # Collapsing comes before the limit: the page is full while the document has the texts to fill it.
    everything = search(stack, token, "lorem ipsum dolor sit amet consectetuer", mode=mode, limit=50)["hits"]
    assert len(hits) == min(10, len(everything))
    assert len({hit["excerpt"] for hit in everything}) == len(everything)


def test_identical_text_under_different_headings_collapses_and_each_place_keeps_its_own_heading(
    stack: Stack,
) -> None:
    tenant = f"d{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    contract = indexed(stack, token, "contract.md", CLAUSE)
    annex = indexed(stack, token, "annex.md", CLAUSE.replace(b"# Terms", b"# Annex B").replace(b"Liability", b"Limits"))
    indexed(stack, token, "notes.md", OTHER)

    for mode in ("hybrid", "keyword", "semantic"):
        found = search(stack, token, "liable for indirect damages from late delivery", mode=mode)
        clause = [hit for hit in found["hits"] if "indirect damages" in hit["excerpt"]]
        assert len(clause) == 1, mode
        (other,) = clause[0]["alsoIn"]
        cited = {clause[0]["citation"]["fileId"]: clause[0]["citation"]["headingPath"], other["fileId"]: None}
        assert set(cited) == {contract["fileId"], annex["fileId"]}
        headings = {clause[0]["citation"]["fileId"]: clause[0]["citation"]["headingPath"]}
        headings[other["fileId"]] = other["headingPath"]
        assert headings == {contract["fileId"]: ["Terms", "Liability"], annex["fileId"]: ["Annex B", "Limits"]}


def comparable(answer: dict[str, Any]) -> dict[str, Any]:
    """A search answer without the moment it was read at (every citation's retrievedAt)."""
    cleaned = copy.deepcopy(answer)
    for hit in cleaned.get("hits", []):
        hit["citation"].pop("retrievedAt")
    return cleaned


def test_a_copy_in_a_collection_the_caller_cannot_read_is_never_listed_and_changes_nothing_observable(
    stack: Stack,
) -> None:
    tenant = f"d{uuid.uuid4().hex[:10]}"
    writer = stack.token(tenant=tenant, collections=("docs", "board"))
    reader = stack.token(tenant=tenant, collections=("docs",), sub="rob")
    # An older copy in the collection the reader cannot read: were it visible, the oldest upload would be kept.
    hidden = indexed(stack, writer, "board-terms.md", CLAUSE, collection="board")
    visible = indexed(stack, writer, "terms.md", CLAUSE)
    indexed(stack, writer, "notes.md", OTHER)
    queries = [("liable for indirect damages", mode) for mode in ("hybrid", "keyword", "semantic")]
    queries.append(("Tuesdays warehouse", "hybrid"))

    def answers(token: str) -> list[dict[str, Any]]:
        return [comparable(search(stack, token, query, mode=mode)) for query, mode in queries]

    with_hidden = answers(reader)
    for answer in with_hidden:
        assert hidden["fileId"] not in str(answer) and "board" not in str(answer)
    liable = with_hidden[0]["hits"][0]
    assert liable["citation"]["fileId"] == visible["fileId"] and liable["alsoIn"] == []
    # The writer, who reads both, is told of the other place (and is cited from the older upload).
    both = search(stack, writer, "liable for indirect damages")["hits"][0]
    assert both["citation"]["fileId"] == hidden["fileId"]
    assert [place["fileId"] for place in both["alsoIn"]] == [visible["fileId"]]
    # The search tool answers the reader as HTTP does.
    tool = result(stack, reader, "search_files", query="liable for indirect damages")
    assert tool["hits"][0]["alsoIn"] == [] and hidden["fileId"] not in str(tool)

    # Without the hidden copy (deleted), and with a newer one in its place: the reader's answers are the same,
    # scores and all.
    status, _ = stack.json("DELETE", f"/v1/files/{hidden['fileId']}", writer)
    assert status == 202
    assert answers(reader) == with_hidden
    indexed(stack, writer, "board-terms-2.md", CLAUSE, collection="board")
    assert answers(reader) == with_hidden


def test_the_search_tool_lists_the_other_places_with_their_section_fenced(stack: Stack) -> None:
    tenant = f"d{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    first = indexed(stack, token, "contract.md", CLAUSE)
    second = indexed(stack, token, "contract-copy.md", CLAUSE)
    hit = result(stack, token, "search_files", query="indirect damages", limit=5)["hits"][0]
    assert hit["citation"]["fileId"] == first["fileId"]
    (place,) = hit["alsoIn"]
    assert place["fileId"] == second["fileId"] and place["versionId"] == second["current"]["versionId"]
    assert "Terms > Liability" in place["section"] and place["section"] != "Terms > Liability"  # fenced
    assert "contract-copy.md" in place["filename"] and place["filename"] != "contract-copy.md"  # fenced


def test_a_chunks_text_key_is_the_sha256_of_its_body(stack: Stack, app_database: Database) -> None:
    tenant = f"d{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    record = indexed(stack, token, "zurich.md", "# Zürich\n\nDie Straße am Fluss ist gesperrt.\n".encode())
    with app_database.tenant_transaction(tenant) as conn:
        rows = conn.execute(
            "SELECT substr(content, body_offset + 1), text_sha256 FROM knowledge_chunks WHERE version_id = %s",
            (record["current"]["versionId"],),
        ).fetchall()
    assert rows and all(digest == hashlib.sha256(body.encode()).hexdigest() for body, digest in rows)
    assert any("Straße" in body for body, _ in rows)


def ticket_for(stack: Stack, token: str, name: str, content: bytes, **options: Any) -> tuple[int, Any]:
    body = {"collectionId": "docs", "filename": name, "mediaType": "text/markdown", "byteSize": len(content)}
    return stack.json("POST", "/v1/uploads", token, {**body, **options})


def test_the_same_bytes_again_are_taken_and_named_by_the_ticket_and_the_file_view(stack: Stack) -> None:
    tenant = f"d{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant, collections=("docs", "board"))
    digest = hashlib.sha256(CLAUSE).hexdigest()
    first = indexed(stack, token, "terms.md", CLAUSE)
    indexed(stack, token, "board-terms.md", OTHER, collection="board")
    assert first["current"]["sha256"] == digest and first["current"]["duplicateOf"] is None

    # Declared at ticket time: the earlier version is named before any byte arrives, and the POST carries the hash.
    status, ticket = ticket_for(stack, token, "terms-again.md", CLAUSE, sha256=digest.upper())
    assert status == 201, ticket
    assert ticket["duplicateOf"] == {
        "fileId": first["fileId"],
        "versionId": first["current"]["versionId"],
        "filename": "terms.md",
    }
    checksum = base64.b64encode(hashlib.sha256(CLAUSE).digest()).decode()
    assert ticket["upload"]["fields"]["x-amz-checksum-sha256"] == checksum
    assert stack.post_bytes(ticket, CLAUSE, "text/markdown") in (200, 204)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, again = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200 and again["current"]["processingState"] == "indexed"  # taken, processed, searchable
    assert again["current"]["duplicateOf"] == ticket["duplicateOf"] and again["current"]["sha256"] == digest
    assert again["versions"][0]["duplicateOf"] == ticket["duplicateOf"]
    status, listed = stack.json("GET", "/v1/files?collectionId=docs", token)
    by_id = {record["fileId"]: record["current"]["duplicateOf"] for record in listed["files"]}
    assert by_id == {first["fileId"]: None, ticket["fileId"]: ticket["duplicateOf"]}

    # Without a declaration the ticket cannot know; the file view does once the bytes are read.
    plain = indexed(stack, token, "terms-plain.md", CLAUSE)
    assert plain["current"]["duplicateOf"] == ticket["duplicateOf"]
    # Bytes nobody uploaded here before (OTHER is in board, another collection): nothing is named.
    status, fresh = ticket_for(stack, token, "other.md", OTHER, sha256=hashlib.sha256(OTHER).hexdigest())
    assert status == 201 and fresh["duplicateOf"] is None
    # An upload by parts is told as well.
    status, session = ticket_for(stack, token, "terms-parts.md", CLAUSE, sha256=digest, multipart=True)
    assert status == 201 and session["uploadId"] and session["duplicateOf"] == ticket["duplicateOf"]


def test_a_new_version_with_the_bytes_of_an_earlier_one_names_it(stack: Stack) -> None:
    tenant = f"d{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    first = indexed(stack, token, "terms.md", CLAUSE)
    body = {"filename": "terms.md", "mediaType": "text/markdown", "byteSize": len(CLAUSE)}
    status, ticket = stack.json(
        "POST", f"/v1/files/{first['fileId']}/versions", token, {**body, "sha256": hashlib.sha256(CLAUSE).hexdigest()}
    )
    assert status == 201, ticket
    assert ticket["duplicateOf"]["versionId"] == first["current"]["versionId"]


def test_a_declared_hash_is_checked_for_shape_and_the_file_view_goes_by_the_bytes(stack: Stack) -> None:
    tenant = f"d{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    indexed(stack, token, "terms.md", CLAUSE)
    status, refused = ticket_for(stack, token, "x.md", CLAUSE, sha256="not-a-hash")
    assert status == 400 and "sha256: must be the SHA-256 of the file's bytes as 64 hexadecimal" in str(refused)
    # Declared as CLAUSE, posted as OTHER: the local S3 takes it (S3 would refuse it: BadDigest); the ticket said
    # what was declared, the file view says what the bytes are.
    status, ticket = ticket_for(stack, token, "other.md", OTHER, sha256=hashlib.sha256(CLAUSE).hexdigest())
    assert status == 201 and ticket["duplicateOf"] is not None
    assert stack.post_bytes(ticket, OTHER, "text/markdown") in (200, 204)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert record["current"]["sha256"] == hashlib.sha256(OTHER).hexdigest()
    assert record["current"]["duplicateOf"] is None
