"""Chunks' situating sentences through the local pipeline (issue 37 item 1, the AWS part, with a fake situator in
place of Bedrock): upload → chunk → embed (each chunk's sentence written, metered, kept in chunk_situations) →
index, found by a word only the sentence holds and never quoted; a re-index pays for nothing; deleting the file
deletes its sentences. The real PostgreSQL cache and ledger, the real local S3 and MiniLM."""

import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from shared.adapters.postgres.chunk_situations import PostgresSituationCache
from shared.adapters.postgres.database import Database
from shared.bootstrap import Container, overridden
from shared.bootstrap.adapters import adapters_for
from shared.domain.chunk_situations import GeneratedSituation, SituationRequest
from tests.fakes import FakeSituator
from tests.integration.api_steps import indexed, search
from tests.integration.files_stack import Stack
from tests.integration.limited_stack import stack_with

# The fake situator's model and prompt, as sentences are cached under them and versions record them.
SITUATED_BY = "fake.situator-v1#fake-1"

REPORT = b"""# Northwind Traders: Q3 2025 report

## Results

Revenue rose 9% this quarter, led by the company's northern stores.

## Outlook

The company expects margins to hold through the winter.
"""


class NamingSituator(FakeSituator):
    """A fake situator whose every sentence holds a word no document does: what is found by it was found by the
    sentence alone."""

    def situate(self, request: SituationRequest) -> GeneratedSituation:
        written = super().situate(request)
        return written.model_copy(update={"text": f"Zephyrine ledger: {written.text}"})


def file_of(database: Database, tenant: str) -> uuid.UUID:
    """A file row of `tenant` (no version): what the situation cache's rows belong to."""
    file_id = uuid.uuid4()
    with database.tenant_transaction(tenant) as conn:
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
            " VALUES (%s, %s, 'docs', %s, 't')",
            (tenant, file_id, f"{tenant}.pdf"),
        )
    return file_id


@pytest.fixture
def situator() -> NamingSituator:
    return NamingSituator(input_tokens=700, output_tokens=25)


@pytest.fixture
def situating_stack(stack: Stack, situator: NamingSituator) -> Iterator[Stack]:
    yield from stack_with(stack, situator=situator)


def cached(stack: Stack, tenant: str, file_id: str) -> list[str]:
    with stack.container.database.tenant_transaction(tenant) as conn:
        rows = conn.execute(
            "SELECT situation FROM chunk_situations WHERE tenant_id = %s AND file_id = %s ORDER BY situation",
            (tenant, UUID(file_id)),
        ).fetchall()
    return [row[0] for row in rows]


def context_usage(stack: Stack, tenant: str, file_id: str) -> list[tuple[str, int, int, int]]:
    with stack.container.database.tenant_transaction(tenant) as conn:
        rows = conn.execute(
            "SELECT step, attempt, input_tokens, output_tokens FROM usage_records"
            " WHERE tenant_id = %s AND file_id = %s AND step LIKE 'context#%%' ORDER BY attempt, step",
            (tenant, UUID(file_id)),
        ).fetchall()
    return [tuple(row) for row in rows]


def test_each_chunk_is_found_by_its_sentence_never_quoted_metered_and_cached(
    situating_stack: Stack, situator: NamingSituator
) -> None:
    tenant = f"situated-{uuid.uuid4().hex[:8]}"
    token = situating_stack.token(tenant)
    record = indexed(situating_stack, token, "report.md", REPORT)
    current = record["current"]
    assert current["indexing"]["contextGap"] is None
    chunks = current["indexing"]["chunkCount"]
    assert chunks >= 2 and len(situator.calls) == chunks

    hits = search(situating_stack, token, "zephyrine", mode="keyword")["hits"]
    assert {hit["citation"]["fileId"] for hit in hits} == {record["fileId"]}
    assert len(hits) == chunks
    for hit in hits:  # found by the sentence, quoted by the body alone
        assert "Zephyrine" not in hit["excerpt"] and "Zephyrine" not in hit["citation"]["excerpt"]
    assert any("Revenue rose 9%" in hit["excerpt"] for hit in hits)

    sentences = cached(situating_stack, tenant, record["fileId"])
    assert len(sentences) == chunks and all(sentence.startswith("Zephyrine ledger: ") for sentence in sentences)
    [(step, _, input_tokens, output_tokens)] = context_usage(situating_stack, tenant, record["fileId"])
    assert (step, input_tokens, output_tokens) == ("context#00000", 700 * chunks, 25 * chunks)
    spent = situating_stack.container.usage_ledger.spent_since(tenant, datetime.now(UTC) - timedelta(hours=1))
    assert spent.generation_tokens == 725 * chunks

    # Situated by the configured model without a gap, the version is not stale; for another model it is.
    container = situating_stack.container
    version_id = UUID(current["versionId"])
    embedding_model = container.embedder.model_id
    stale = container.knowledge.versions_to_reindex
    assert stale(tenant, None, embedding_model, 10, context_model=SITUATED_BY) == []
    assert stale(tenant, None, embedding_model, 10, context_model="another.model") == [
        (UUID(record["fileId"]), version_id)
    ]

    # A re-index cuts the same chunks again and finds every sentence in the cache: no call, nothing metered.
    assert container.reindexer.start_version(tenant, UUID(record["fileId"]), version_id)
    container.workflow.drain()  # type: ignore[attr-defined]
    status, again = situating_stack.json("GET", f"/v1/files/{record['fileId']}", token)
    assert status == 200 and again["current"]["processingState"] == "indexed", again
    assert len(situator.calls) == chunks
    assert len(context_usage(situating_stack, tenant, record["fileId"])) == 1
    assert len(search(situating_stack, token, "zephyrine", mode="keyword")["hits"]) == chunks

    # Deleting the file deletes what was derived from its text.
    status, _ = situating_stack.json("DELETE", f"/v1/files/{record['fileId']}", token)
    assert status in {200, 202, 204}
    assert cached(situating_stack, tenant, record["fileId"]) == []


def test_over_the_generation_limit_the_version_is_indexed_without_sentences_and_says_why(stack: Stack) -> None:
    situator = NamingSituator()
    settings = stack.container.settings.model_copy(update={"limit_generation_tokens_per_day": 50})
    container = Container(settings, adapters_for(settings, situator=situator))
    assert container.spend_limits is not None
    with overridden(container):
        try:
            limited = replace(stack, container=container)
            tenant = f"limited-{uuid.uuid4().hex[:8]}"
            token = limited.token(tenant)
            record = indexed(limited, token, "report.md", REPORT)
            gap = record["current"]["indexing"]["contextGap"]
            assert gap is not None and "daily generation limit of 50 tokens" in gap, record["current"]
            assert record["current"]["indexing"]["embeddedChunkCount"] == record["current"]["indexing"]["chunkCount"]
            assert situator.calls == []
            # A gap puts the version on the re-index work list, which asks again once the limit allows.
            assert container.knowledge.versions_to_reindex(
                tenant, None, container.embedder.model_id, 10, context_model=SITUATED_BY
            ) == [(UUID(record["fileId"]), UUID(record["current"]["versionId"]))]
            assert search(limited, token, "zephyrine", mode="keyword").get("hits", []) == []
            assert search(limited, token, "northern stores", mode="keyword")["hits"]
        finally:
            container.workflow.drain()  # type: ignore[attr-defined]
            container.database.close()


def test_locally_no_model_situates_and_status_says_so(stack: Stack) -> None:
    status = stack.container.capabilities()
    chunk_context = [value for key, value in status.items() if key.value == "chunk_context"]
    assert len(chunk_context) == 1 and not chunk_context[0].available
    assert chunk_context[0].reason == (
        "no model writes chunks' situating sentences locally: chunks keep their title and heading context"
    )


def test_the_cache_keeps_the_first_sentence_per_file_and_model_and_shows_no_other_tenant_or_file(
    app_database: Database,
) -> None:
    cache = PostgresSituationCache(app_database)
    tenant, other = f"cache-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}"
    mine, sibling, theirs = (
        file_of(app_database, tenant),
        file_of(app_database, tenant),
        file_of(app_database, other),
    )
    key, second = "a" * 64, "b" * 64
    cache.keep(tenant, mine, SITUATED_BY, {key: "The Q3 results.", second: "The outlook."})
    cache.keep(tenant, mine, SITUATED_BY, {key: "Written again by a redelivered task."})
    assert cache.find(tenant, mine, SITUATED_BY, [key, second, "c" * 64]) == {
        key: "The Q3 results.",
        second: "The outlook.",
    }
    assert cache.find(tenant, mine, "another.model#1", [key]) == {}
    assert cache.find(tenant, sibling, SITUATED_BY, [key]) == {}  # per file: deleting one deletes its own
    assert cache.find(other, theirs, SITUATED_BY, [key]) == {}
    assert cache.find(other, mine, SITUATED_BY, [key]) == {}  # another tenant naming this file sees nothing
    assert cache.find(tenant, mine, SITUATED_BY, []) == {}
