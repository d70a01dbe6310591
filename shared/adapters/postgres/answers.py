"""AnswerStore over PostgreSQL (migrations/0020): answers, their claims, citations and the links between them,
and feedback, tenant-scoped and RLS-forced, appended and never rewritten (the application role may only INSERT
and SELECT). An answer is read back exactly as it was saved; a claim's `supported` is derived from the
citations that name it, never stored.

The index version is derived from per-collection generation counters that triggers on knowledge_chunks bump
in the same transaction as any change to a collection's chunks: one primary-key read per collection.
"""

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from shared.adapters.postgres.database import Database
from shared.domain.answers import (
    Answer,
    AnswerCitation,
    AnswerClaim,
    AnswerFeedback,
    AnswerHit,
    Confidence,
    Refusal,
    StoredAnswer,
)
from shared.domain.errors import InvalidRequest
from shared.domain.search import Citation
from shared.ports import AnswerStore

_ANSWER_COLUMNS = (
    "answer_id, subject, question, cache_key, outcome, method, refusal_reason, refusal_sentence, assumptions,"
    " needs_review, confidence, withheld, fallback, vector_available, model, prompt_version, index_version,"
    " collection_ids, created_at, hits"
)
# The version's characters: 16 hex digits of a SHA-256 (64 bits), short enough for a cache key, and a collision
# between two states of the same collections is not a practical concern.
_INDEX_VERSION_LENGTH = 16


def _answer_uuid(answer_id: str) -> UUID | None:
    try:
        return UUID(answer_id)
    except ValueError:
        return None


class PostgresAnswerStore(AnswerStore):
    def __init__(self, database: Database) -> None:
        self._database = database

    def index_version(self, tenant_id: str, collections: frozenset[str]) -> str:
        """Derived from each collection's index generation (0 for one never indexed). Generations only grow, so
        the version of a changed state is never that of an earlier one. Read it before retrieving: a change
        committed while the answer is computed then makes the saved answer's key one nobody asks for again."""
        ordered = sorted(collections)
        with self._database.tenant_transaction(tenant_id) as conn:
            generations = dict(
                conn.execute(
                    "SELECT collection_id, generation FROM collection_index_generations"
                    " WHERE tenant_id = %s AND collection_id = ANY(%s)",
                    (tenant_id, ordered),
                ).fetchall()
            )
        state = "\n".join(f"{collection}={generations.get(collection, 0)}" for collection in ordered)
        return hashlib.sha256(state.encode()).hexdigest()[:_INDEX_VERSION_LENGTH]

    def save(self, stored: StoredAnswer) -> None:
        """The answer, its claims, its citations and their links, in one transaction (all or nothing)."""
        answer = stored.answer
        answer_id = _answer_uuid(answer.answer_id)
        if answer_id is None or str(answer_id) != answer.answer_id:
            # Canonical only: the id read back is str(uuid), and must equal the one saved.
            raise ValueError(f"an answer id is a UUID in canonical form, not {answer.answer_id!r}")
        if answer.cached:
            raise ValueError("a cached answer is already stored: save the answer computed, not the one served")
        if answer.created_at.tzinfo is None:
            raise ValueError("an answer's created_at must carry its time zone")
        with self._database.tenant_transaction(stored.tenant_id) as conn:
            conn.execute(
                f"INSERT INTO answers (tenant_id, {_ANSWER_COLUMNS})"  # noqa: S608 - a constant column list
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    stored.tenant_id,
                    answer_id,
                    stored.subject,
                    answer.question,
                    stored.cache_key,
                    answer.outcome.value,
                    answer.method.value if answer.method else None,
                    answer.refusal.reason.value if answer.refusal else None,
                    answer.refusal.sentence if answer.refusal else None,
                    list(answer.assumptions),
                    answer.needs_review,
                    Jsonb(answer.confidence.model_dump(mode="json")),
                    answer.withheld,
                    answer.fallback,
                    answer.vector_available,
                    answer.model,
                    answer.prompt_version,
                    answer.index_version,
                    sorted(stored.collections),
                    answer.created_at,
                    Jsonb([hit.model_dump(mode="json") for hit in answer.hits]),
                ),
            )
            self._insert_citations(conn, stored.tenant_id, answer_id, answer.citations)
            self._insert_claims(conn, stored.tenant_id, answer_id, answer.claims)

    @staticmethod
    def _insert_citations(
        conn: psycopg.Connection[Any], tenant_id: str, answer_id: UUID, citations: Sequence[AnswerCitation]
    ) -> None:
        if not citations:
            return
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO answer_citations (tenant_id, answer_id, number, chunk_id, file_id, version_id,"
                " collection_id, citation, score) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        tenant_id,
                        answer_id,
                        cited.number,
                        cited.chunk_id,
                        cited.citation.file_id,
                        cited.citation.version_id,
                        cited.citation.collection_id,
                        Jsonb(cited.citation.model_dump(mode="json")),
                        cited.score,
                    )
                    for cited in citations
                ],
            )

    @staticmethod
    def _insert_claims(
        conn: psycopg.Connection[Any], tenant_id: str, answer_id: UUID, claims: Sequence[AnswerClaim]
    ) -> None:
        if not claims:
            return
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO answer_claims (tenant_id, answer_id, position, text, kind, quote)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (tenant_id, answer_id, position, claim.text, claim.kind.value, claim.quote)
                    for position, claim in enumerate(claims)
                ],
            )
            links = [
                (tenant_id, answer_id, position, rank, number)
                for position, claim in enumerate(claims)
                for rank, number in enumerate(claim.citations)
            ]
            if links:
                cursor.executemany(
                    "INSERT INTO answer_claim_citations (tenant_id, answer_id, position, rank, number)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    links,
                )

    def cached(self, tenant_id: str, cache_key: str, *, not_before: datetime) -> StoredAnswer | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            row = cursor.execute(
                f"SELECT {_ANSWER_COLUMNS} FROM answers"  # noqa: S608 - a constant column list
                " WHERE tenant_id = %s AND cache_key = %s AND created_at >= %s"
                " ORDER BY created_at DESC, answer_id DESC LIMIT 1",
                (tenant_id, cache_key, not_before),
            ).fetchone()
            return None if row is None else _assemble(cursor, tenant_id, row)

    def get(self, tenant_id: str, subject: str, answer_id: str) -> StoredAnswer | None:
        key = _answer_uuid(answer_id)
        if key is None:
            return None
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            row = cursor.execute(
                f"SELECT {_ANSWER_COLUMNS} FROM answers"  # noqa: S608 - a constant column list
                " WHERE tenant_id = %s AND answer_id = %s AND subject = %s",
                (tenant_id, key, subject),
            ).fetchone()
            return None if row is None else _assemble(cursor, tenant_id, row)

    def add_feedback(self, tenant_id: str, subject: str, answer_id: str, feedback: AnswerFeedback) -> str | None:
        """None for an answer that is not the caller's (or unknown, or not an id); InvalidRequest for a citation
        number the caller's own answer does not have (asked only once the answer is known to be theirs)."""
        key = _answer_uuid(answer_id)
        if key is None:
            return None
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "SELECT coalesce((SELECT array_agg(c.number ORDER BY c.number) FROM answer_citations c"
                " WHERE c.tenant_id = a.tenant_id AND c.answer_id = a.answer_id), '{}') FROM answers a"
                " WHERE a.tenant_id = %s AND a.answer_id = %s AND a.subject = %s",
                (tenant_id, key, subject),
            ).fetchone()
            if row is None:
                return None
            numbers: list[int] = row[0]
            if feedback.citation is not None and feedback.citation not in numbers:
                raise InvalidRequest(
                    f"citation {feedback.citation} is not one of this answer's citations"
                    f" ({', '.join(map(str, numbers)) or 'it has none'})"
                )
            created = conn.execute(
                "INSERT INTO answer_feedback (tenant_id, answer_id, subject, verdict, note, citation)"
                " VALUES (%s, %s, %s, %s, %s, %s) RETURNING feedback_id",
                (tenant_id, key, subject, feedback.verdict.value, feedback.note, feedback.citation),
            ).fetchone()
        assert created is not None
        return str(created[0])


def _assemble(cursor: psycopg.Cursor[dict[str, Any]], tenant_id: str, row: dict[str, Any]) -> StoredAnswer:
    """The stored answer from its row, its claims (each with its citation numbers, in order) and citations."""
    answer_id = row["answer_id"]
    claims = cursor.execute(
        "SELECT c.text, c.kind, c.quote, coalesce(array_agg(l.number ORDER BY l.rank)"
        " FILTER (WHERE l.number IS NOT NULL), '{}') AS citations"
        " FROM answer_claims c LEFT JOIN answer_claim_citations l ON l.tenant_id = c.tenant_id"
        " AND l.answer_id = c.answer_id AND l.position = c.position"
        " WHERE c.tenant_id = %s AND c.answer_id = %s GROUP BY c.position, c.text, c.kind, c.quote"
        " ORDER BY c.position",
        (tenant_id, answer_id),
    ).fetchall()
    citations = cursor.execute(
        "SELECT number, chunk_id, score, citation FROM answer_citations"
        " WHERE tenant_id = %s AND answer_id = %s ORDER BY number",
        (tenant_id, answer_id),
    ).fetchall()
    refusal = (
        None
        if row["refusal_reason"] is None
        else Refusal(reason=row["refusal_reason"], sentence=row["refusal_sentence"])
    )
    answer = Answer(
        answer_id=str(answer_id),
        question=row["question"],
        outcome=row["outcome"],
        method=row["method"],
        claims=tuple(
            AnswerClaim(
                text=claim["text"], citations=tuple(claim["citations"]), kind=claim["kind"], quote=claim["quote"]
            )
            for claim in claims
        ),
        citations=tuple(
            AnswerCitation(
                number=cited["number"],
                chunk_id=cited["chunk_id"],
                score=cited["score"],
                citation=Citation.model_validate(cited["citation"]),
            )
            for cited in citations
        ),
        assumptions=tuple(row["assumptions"]),
        needs_review=row["needs_review"],
        confidence=Confidence.model_validate(row["confidence"]),
        refusal=refusal,
        withheld=row["withheld"],
        fallback=row["fallback"],
        vector_available=row["vector_available"],
        model=row["model"],
        prompt_version=row["prompt_version"],
        index_version=row["index_version"],
        created_at=row["created_at"],
        hits=tuple(AnswerHit.model_validate(hit) for hit in row["hits"]),
    )
    return StoredAnswer(
        tenant_id=tenant_id,
        subject=row["subject"],
        cache_key=row["cache_key"],
        collections=frozenset(row["collection_ids"]),
        answer=answer,
    )
