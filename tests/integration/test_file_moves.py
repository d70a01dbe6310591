"""Moving a file to another collection (POST /v1/files/{id}/move): permissions follow at once.

On real PostgreSQL and moto's S3 server: the file row, its chunks (subjects, postings, both collections' BM25
statistics) and its replacements change in one transaction, so a reader of the old collection loses the file in
listing, reads, the document and every search mode the moment the call returns, a reader of the new one gains it,
and a search racing the moves sees the file in exactly one collection, never two, never none.
"""

import threading
import uuid
from typing import Any

import psycopg

from shared.adapters.local.jwt_tokens import LocalTokenIssuer
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.domain.auth import Principal, Role
from shared.domain.knowledge import IndexingResult, IndexWrite
from shared.domain.search import SearchFilters
from shared.local.chunk_rows import new_indexing_version
from tests.integration.api_steps import indexed, search
from tests.integration.files_stack import SECRET, Stack
from tests.integration.knowledge_rows import FAKE_MODEL, chunk_rows, index_texts, unit_vector

NO_FILTERS = SearchFilters()
# Four sections, so the file has several chunks and a search returns more than one of them.
HANDOVER = b"""# Okapi handover

## Budget

The okapi zephyr budget for the Kessler programme is 400 EUR a quarter.

## Contacts

The okapi zephyr contact at Kessler is the finance office in Bremen.

## Risks

The okapi zephyr risk register lists currency and supply chain exposure.

## Timeline

The okapi zephyr handover closes at the end of the third quarter.
"""
QUERY = "okapi zephyr Kessler"


def new_tenant() -> str:
    return f"m{uuid.uuid4().hex[:10]}"


def token_with(tenant: str, sub: str, *, read: tuple[str, ...], admin: tuple[str, ...]) -> str:
    """A token reading some collections and administering others."""
    principal = Principal(tenant_id=tenant, subject=sub, collections=frozenset(read), administered=frozenset(admin))
    return LocalTokenIssuer(SECRET).issue(principal)


def move(stack: Stack, token: str, file_id: str, collection: str) -> tuple[int, Any]:
    return stack.json("POST", f"/v1/files/{file_id}/move", token, {"collectionId": collection})


def what_reader_sees(stack: Stack, token: str, file_id: str) -> dict[str, Any]:
    """Every way a reader reaches a file: its record, its bytes, its document, the listing and each search mode."""
    listing = stack.json("GET", "/v1/files?limit=100", token)[1]
    seen: dict[str, Any] = {
        "get": stack.call("GET", f"/v1/files/{file_id}", token)[0],
        "content": stack.call("GET", f"/v1/files/{file_id}/content", token)[0],
        "document": stack.call("GET", f"/v1/files/{file_id}/document", token)[0],
        "listed": file_id in {f["fileId"] for f in listing["files"]},
    }
    for mode in ("hybrid", "keyword", "semantic"):
        hits = [h for h in search(stack, token, QUERY, mode=mode).get("hits", []) if h["citation"]["fileId"] == file_id]
        seen[mode] = sorted({h["citation"]["collectionId"] for h in hits})
    return seen


def sees_it(collection: str) -> dict[str, Any]:
    return {
        "get": 200,
        "content": 200,
        "document": 200,
        "listed": True,
        "hybrid": [collection],
        "keyword": [collection],
        "semantic": [collection],
    }


NOTHING = {"get": 404, "content": 404, "document": 404, "listed": False, "hybrid": [], "keyword": [], "semantic": []}


# --- through the API ------------------------------------------------------------------------------------------


def test_a_reader_of_the_old_collection_loses_the_file_everywhere_and_a_reader_of_the_new_one_gains_it(
    stack: Stack,
) -> None:
    tenant = new_tenant()
    admin = stack.token(tenant=tenant, collections=("docs", "board"), sub="ada", role=Role.ADMIN)
    old_reader = stack.token(tenant=tenant, collections=("docs",), sub="olga", role=Role.READ)
    new_reader = stack.token(tenant=tenant, collections=("board",), sub="nils", role=Role.READ)
    record = indexed(stack, admin, "handover.md", HANDOVER)
    file_id = record["fileId"]
    assert record["current"]["indexing"]["chunkCount"] >= 3
    assert what_reader_sees(stack, old_reader, file_id) == sees_it("docs")
    assert what_reader_sees(stack, new_reader, file_id) == NOTHING

    status, moved = move(stack, admin, file_id, "board")

    assert status == 200, moved
    assert moved["fileId"] == file_id and moved["collectionId"] == "board"
    assert [v["versionId"] for v in moved["versions"]] == [record["current"]["versionId"]]
    assert what_reader_sees(stack, old_reader, file_id) == NOTHING
    assert what_reader_sees(stack, new_reader, file_id) == sees_it("board")
    # And back: the same call, the other way round.
    assert move(stack, admin, file_id, "docs")[0] == 200
    assert what_reader_sees(stack, old_reader, file_id) == sees_it("docs")
    assert what_reader_sees(stack, new_reader, file_id) == NOTHING


def test_moving_to_the_collection_the_file_is_in_changes_nothing_and_answers_200(stack: Stack) -> None:
    tenant = new_tenant()
    admin = stack.token(tenant=tenant, collections=("docs",), role=Role.ADMIN)
    record = indexed(stack, admin, "handover.md", HANDOVER)
    status, same = move(stack, admin, record["fileId"], "docs")
    assert status == 200 and same["collectionId"] == "docs"
    assert same == stack.json("GET", f"/v1/files/{record['fileId']}", admin)[1]


def test_only_an_admin_of_both_collections_may_move_and_a_refusal_changes_nothing(stack: Stack) -> None:
    tenant = new_tenant()
    admin = stack.token(tenant=tenant, collections=("docs", "board"), sub="ada", role=Role.ADMIN)
    file_id = indexed(stack, admin, "handover.md", HANDOVER)["fileId"]
    writer = stack.token(tenant=tenant, collections=("docs", "board"), sub="wes", role=Role.WRITE)
    source_admin = stack.token(tenant=tenant, collections=("docs",), sub="sam", role=Role.ADMIN)
    # Admin of the source, only a reader of the destination.
    source_admin_board_reader = token_with(tenant, "sid", read=("board",), admin=("docs",))
    destination_admin = token_with(tenant, "dan", read=("docs",), admin=("board",))
    elsewhere = stack.token(tenant=tenant, collections=("elsewhere", "board"), sub="eve", role=Role.ADMIN)
    intruder = stack.token(tenant=new_tenant(), collections=("docs", "board"), sub="ivan", role=Role.ADMIN)

    status, body = move(stack, writer, file_id, "board")
    assert status == 403 and "admin role in collection 'docs'" in body["message"], body
    status, body = move(stack, source_admin_board_reader, file_id, "board")
    assert status == 403 and "admin role in collection 'board'" in body["message"], body
    status, body = move(stack, destination_admin, file_id, "board")
    assert status == 403 and "admin role in collection 'docs'" in body["message"], body
    # The destination is named by the caller: one it cannot read is not found, and says which field.
    assert move(stack, source_admin, file_id, "board") == (
        404,
        {"error": "not_found", "message": "Not found", "field": "collectionId"},
    )
    # A caller who cannot see the file gets the answer of a random id, byte for byte.
    random_id = str(uuid.uuid4())
    for outsider in (elsewhere, intruder):
        assert stack.call("POST", f"/v1/files/{file_id}/move", outsider, {"collectionId": "board"}) == stack.call(
            "POST", f"/v1/files/{random_id}/move", outsider, {"collectionId": "board"}
        )
        assert move(stack, outsider, file_id, "board")[0] == 404
    assert stack.json("GET", f"/v1/files/{file_id}", admin)[1]["collectionId"] == "docs"
    # A body without the destination is refused naming the field, as every body is.
    status, body = stack.json("POST", f"/v1/files/{file_id}/move", admin, {"collection": "board"})
    assert status == 422 and {"loc": ["body", "collectionId"], "type": "missing"} in body["detail"], body


def test_a_search_racing_the_moves_sees_the_file_in_exactly_one_collection(stack: Stack) -> None:
    tenant = new_tenant()
    admin = stack.token(tenant=tenant, collections=("docs", "board"), sub="ada", role=Role.ADMIN)
    docs_reader = stack.token(tenant=tenant, collections=("docs",), sub="olga", role=Role.READ)
    file_id = indexed(stack, admin, "handover.md", HANDOVER)["fileId"]
    stop = threading.Event()
    # (caller, mode, the collection ids of the file's hits, how many of its chunks came back, all chunk ids)
    seen: list[tuple[str, str, list[str], int, list[str]]] = []
    errors: list[BaseException] = []

    def keep_searching() -> None:
        try:
            while not stop.is_set():
                for caller, token in (("both", admin), ("docs", docs_reader)):
                    for mode in ("keyword", "hybrid"):
                        answer = search(stack, token, QUERY, mode=mode, limit=20)
                        hits = [h for h in answer.get("hits", []) if h["citation"]["fileId"] == file_id]
                        seen.append(
                            (
                                caller,
                                mode,
                                [h["citation"]["collectionId"] for h in hits],
                                len(hits),
                                [h["chunkId"] for h in answer.get("hits", [])],
                            )
                        )
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    searchers = [threading.Thread(target=keep_searching) for _ in range(2)]
    for searcher in searchers:
        searcher.start()
    try:
        for turn in range(30):
            status, body = move(stack, admin, file_id, "board" if turn % 2 == 0 else "docs")
            assert status == 200, body
    finally:
        stop.set()
        for searcher in searchers:
            searcher.join(timeout=60)
    assert not errors, errors
    assert len(seen) >= 20, len(seen)
    for caller, mode, collections, count, chunk_ids in seen:
        assert len(chunk_ids) == len(set(chunk_ids)), ("a chunk came back twice", caller, mode, chunk_ids)
        # All hits of one answer agree on the file's collection.
        assert len(set(collections)) <= 1, (caller, mode, collections)
        if caller == "both":
            # A caller of both always finds it, in one collection (never in neither: the move is atomic).
            assert count >= 3 and collections[0] in ("docs", "board"), (caller, mode, collections)
        else:
            assert set(collections) <= {"docs"}, (caller, mode, collections)


# --- the adapter, on PostgreSQL ------------------------------------------------------------------------------


def keyword_statistics(conn: psycopg.Connection, tenant: str) -> tuple[Any, ...]:
    """(terms, collections, postings) as recorded, and the same recomputed from the chunks: equal when exact."""

    def rows(query: str) -> set[tuple[Any, ...]]:
        return set(conn.execute(query, (tenant,)).fetchall())

    return (
        rows("SELECT collection_id, term, chunk_count FROM keyword_terms WHERE tenant_id = %s"),
        rows(
            "SELECT collection_id, chunk_count, total_length FROM keyword_collections WHERE tenant_id = %s"
            " AND chunk_count > 0"
        ),
        rows("SELECT collection_id, term, chunk_id, frequency FROM keyword_postings WHERE tenant_id = %s"),
    ), (
        rows(
            "SELECT c.collection_id, t.lexeme, count(*)::int FROM knowledge_chunks c, unnest(c.search_vector) t"
            " WHERE c.tenant_id = %s GROUP BY c.collection_id, t.lexeme"
        ),
        rows(
            "SELECT collection_id, count(*), sum(lexical_length) FROM knowledge_chunks WHERE tenant_id = %s"
            " GROUP BY collection_id"
        ),
        rows(
            "SELECT c.collection_id, t.lexeme, c.chunk_id, cardinality(t.positions) FROM knowledge_chunks c,"
            " unnest(c.search_vector) t WHERE c.tenant_id = %s"
        ),
    )


def test_a_move_carries_every_chunk_its_postings_and_both_collections_statistics(
    app_database: Database, owner_connection: psycopg.Connection
) -> None:
    tenant = new_tenant()
    index = PostgresKnowledgeIndex(app_database)
    vector = unit_vector((0, 1.0))
    moved, _ = index_texts(app_database, tenant, "docs", ["okapi alpha", "okapi beta gamma"], vectors=[vector] * 2)
    index_texts(app_database, tenant, "docs", ["okapi delta"])
    index_texts(app_database, tenant, "board", ["okapi epsilon"])
    before = owner_connection.execute(
        "SELECT chunk_id, content, embedding::text, created_at, lexical_length FROM knowledge_chunks"
        " WHERE tenant_id = %s AND file_id = %s ORDER BY chunk_id",
        (tenant, moved),
    ).fetchall()

    assert PostgresFileMetadataStore(app_database).move_file(
        tenant, moved, from_collection="docs", to_collection="board"
    )

    recorded, recomputed = keyword_statistics(owner_connection, tenant)
    assert recorded == recomputed
    assert {row[:2] for row in recorded[1]} == {("docs", 1), ("board", 3)}
    rows = owner_connection.execute(
        "SELECT chunk_id, content, embedding::text, created_at, lexical_length, collection_id, subjects"
        " FROM knowledge_chunks WHERE tenant_id = %s AND file_id = %s ORDER BY chunk_id",
        (tenant, moved),
    ).fetchall()
    # Every stored column as it was; only the collection and the subjects changed.
    assert [row[:5] for row in rows] == before
    assert {(row[5], tuple(row[6])) for row in rows} == {("board", ("board",))}

    def keyword(collections: set[str]) -> int:
        hits = index.search(tenant, frozenset(collections), "alpha beta", limit=10, filters=NO_FILTERS, k1=1.2, b=0.75)
        return len(hits)

    def nearest(collections: set[str]) -> int:
        found = index.nearest(
            tenant, frozenset(collections), vector, embedding_model=FAKE_MODEL, limit=10, filters=NO_FILTERS
        )
        return len([hit for hit in found if hit.score > 0.99])

    assert (keyword({"docs"}), keyword({"board"}), nearest({"docs"}), nearest({"board"})) == (0, 2, 0, 2)
    assert len(index.snapshots(tenant, frozenset({"docs"}), [row[0] for row in rows])) == 0
    assert {s.collection_id for s in index.snapshots(tenant, frozenset({"board"}), [row[0] for row in rows])} == {
        "board"
    }


def test_chunks_a_pipeline_writes_after_the_move_carry_the_new_collection(
    app_database: Database, owner_connection: psycopg.Connection
) -> None:
    # Given a version the index step holds, its chunks made while the file was still in `docs`
    tenant = new_tenant()
    file_id, version_id, attempt = new_indexing_version(app_database, tenant, "docs")
    stale = chunk_rows(file_id, version_id, "docs", ["okapi written late"])
    # When the file moves before the index step writes
    assert PostgresFileMetadataStore(app_database).move_file(
        tenant, file_id, from_collection="docs", to_collection="board"
    )
    written = PostgresKnowledgeIndex(app_database).replace_chunks(
        tenant,
        version_id,
        stale,
        IndexingResult(chunk_count=1, embedded_count=0, embedding_model=None),
        attempt=attempt,
    )
    # Then they are indexed where the file is now
    assert written is IndexWrite.STORED
    assert owner_connection.execute(
        "SELECT collection_id, subjects FROM knowledge_chunks WHERE tenant_id = %s AND file_id = %s",
        (tenant, file_id),
    ).fetchall() == [("board", ["board"])]
    recorded, recomputed = keyword_statistics(owner_connection, tenant)
    assert recorded == recomputed


def test_a_file_being_deleted_keeps_its_collection_and_its_chunks_stay_gone(
    app_database: Database, owner_connection: psycopg.Connection
) -> None:
    tenant = new_tenant()
    metadata = PostgresFileMetadataStore(app_database)
    file_id, _ = index_texts(app_database, tenant, "docs", ["okapi"])
    assert metadata.begin_delete_file(tenant, file_id) == 1
    assert not metadata.move_file(tenant, file_id, from_collection="docs", to_collection="board")
    assert owner_connection.execute(
        "SELECT count(*) FROM knowledge_chunks WHERE tenant_id = %s", (tenant,)
    ).fetchone() == (0,)
