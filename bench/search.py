"""Search at scale, in an embedded PostgreSQL of its own (a temporary directory, stopped even on error).

- Load: 100,000 chunks of 384 dimensions over 100 tenants of Zipf-skewed sizes (1-3 collections each), in six
  languages (40% English, 12% each German, Spanish, Russian, Chinese, Arabic: every collection holds all six),
  written through the KnowledgeStore's bulk path (`replace_chunks`, up to 200 chunks per version) with
  the HNSW index dropped, then the index rebuilt from the migration's own definition; then the rate of
  further writes with the index in place.
- Recall: the vector lane (`nearest`, exactly as `Retrieval.lanes` calls it) against an exact scan with
  the same tenant, collection and model filters, overall and per tenant-size bucket, with the plan the
  planner chose for each query.
- Latency: hybrid search through `Retrieval.search` (query embeddings from a FAKE embedder that returns
  the bench's own synthetic vector for each query text: the index and the fusion are measured, not
  MiniLM), and each lane alone.
- Answers: evidence-only answers through AnswerService over the same database, their stage times and the
  answer cache (bench/answers.py).
- Indexing end to end: SciFact abstracts chunked, embedded by the real local MiniLM and written.

The synthetic corpus is bench/search_corpus.py's. For comparison, the same corpus in English only (the same
vectors, queries and Zipf ranks) is loaded into a second server before the latency runs, and its hybrid and keyword
lanes are timed in turn with the mixed corpus's, run by run (QUIRE_BENCH_SEARCH_ENGLISH_ONLY=0 leaves it out).

When recall misses the target somewhere, the bench also measures the adapter's vector query under
other GUCs (in its own transactions), the keyword lane's SQL without row-level security, and, last, the
HNSW index rebuilt with ef_construction 128 (QUIRE_BENCH_SEARCH_ALTERNATIVES=1 forces these).

QUIRE_BENCH_SEARCH_CHUNKS and QUIRE_BENCH_SEARCH_QUERIES shrink the run while developing; `python -m
bench.search` runs only this bench and writes .bench/search.json (never over `make bench`'s results).
"""

import json
import os
import secrets
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector import Vector

from bench.answers import figures as answer_figures
from bench.search_corpus import (
    AREA_NOISE,
    AREAS,
    BUCKETS,
    CENTROIDS,
    CHUNK_NOISE,
    DIMENSION,
    ENGLISH_ONLY,
    FAKE_MODEL,
    LARGE_FROM,
    OFF_DOMAIN_SHARE,
    QUERY_NOISE,
    RESTRICTED_QUERY_SHARE,
    SMALL_BELOW,
    TENANT_SIZE_EXPONENT,
    TENANTS,
    VOCABULARY,
    WORDS_PER_CHUNK,
    BenchQuery,
    Corpus,
    FakeQueryEmbedder,
    make_corpus,
    make_queries,
)
from shared.adapters.language_detection import Py3LangidDetector
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.adapters.postgres.vector_lane import vector_scan_settings

REPO_ROOT = Path(__file__).resolve().parent.parent
SCIFACT = REPO_ROOT.parent / "shared" / "data" / "scifact"

CHUNKS = int(os.environ.get("QUIRE_BENCH_SEARCH_CHUNKS", "100000"))
QUERIES = int(os.environ.get("QUIRE_BENCH_SEARCH_QUERIES", "300"))
ENGLISH_COMPARISON = os.environ.get("QUIRE_BENCH_SEARCH_ENGLISH_ONLY", "1") != "0"
ENGLISH_ONLY_SUFFIX = ", english-only corpus"
CHUNKS_PER_VERSION = 200
INCREMENTAL_CHUNKS = 2_000
SCIFACT_DOCUMENTS = 200
RUNS = 3
SEED = 20_240_601
RECALL_TARGET = 0.95
HYBRID_P95_TARGET_MS = 50.0
APP_ROLE = "quire_bench_app"
HNSW_INDEX = "knowledge_chunks_embedding"

Result = Callable[..., dict[str, Any]]


# --- the server -----------------------------------------------------------------------------------------


@contextmanager
def embedded_server() -> Iterator[tuple[str, str]]:
    """(owner URL, application URL) of a migrated PostgreSQL in a temporary directory."""
    from migrations.runner import apply_migrations
    from shared.local.embedded_postgres import EmbeddedPostgres
    from shared.local.supervisor import app_url_from_owner, set_app_role_password

    with tempfile.TemporaryDirectory(prefix="quire-bench-search-") as scratch:
        root = Path(scratch)
        server = EmbeddedPostgres(root / "pgdata", secrets_file=root / "admin.secret")
        try:
            owner = server.owner_url(server.start())
            with psycopg.connect(owner, autocommit=True) as conn:
                # The index (about 200 MB at 100k x 384) should fit in shared buffers, as it would on Aurora.
                conn.execute("ALTER SYSTEM SET shared_buffers = '512MB'")
                conn.execute("ALTER SYSTEM SET maintenance_work_mem = '512MB'")
            server.stop()
            owner = server.owner_url(server.start())
            apply_migrations(owner, embedding_dimension=DIMENSION, app_role=APP_ROLE)
            password = secrets.token_urlsafe(16)
            set_app_role_password(owner, password, role=APP_ROLE)
            yield owner, app_url_from_owner(owner, password, role=APP_ROLE)
        finally:
            server.stop()


def server_settings(owner_url: str) -> dict[str, str]:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name IN ('shared_buffers',"
            " 'maintenance_work_mem', 'work_mem', 'max_parallel_maintenance_workers', 'server_version')"
        ).fetchall()
        pgvector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return {**dict(rows), "pgvector": pgvector[0] if pgvector else "absent"}


# --- loading --------------------------------------------------------------------------------------------


@dataclass
class LoadTimes:
    chunks: int = 0
    versions: int = 0
    write_seconds: float = 0.0  # inside replace_chunks
    claim_seconds: float = 0.0  # creating and claiming the versions
    build_rows_seconds: float = 0.0  # building the IndexedChunk values in Python

    @property
    def write_rate(self) -> float:
        return self.chunks / self.write_seconds

    @property
    def end_to_end_rate(self) -> float:
        return self.chunks / (self.write_seconds + self.claim_seconds + self.build_rows_seconds)


def write_versions(database: Database, corpus: Corpus, plan: Sequence[tuple[str, str, np.ndarray]]) -> LoadTimes:
    """Each planned (tenant, collection, chunks) as one new claimed version, written by replace_chunks."""
    from shared.domain.knowledge import IndexingResult, IndexWrite
    from shared.local.chunk_rows import new_indexing_version, paragraph_drafts, stored_rows

    knowledge = PostgresKnowledgeIndex(database)
    times = LoadTimes()
    for tenant, collection, chunks in plan:
        begun = time.perf_counter()
        file_id, version_id, attempt = new_indexing_version(database, tenant, collection)
        claimed = time.perf_counter()
        rows = stored_rows(
            file_id,
            version_id,
            collection,
            paragraph_drafts(
                [corpus.text(int(chunk)) for chunk in chunks], [corpus.language(int(chunk)) for chunk in chunks]
            ),
            vectors=[tuple(corpus.vectors[int(chunk)].tolist()) for chunk in chunks],
            embedding_model=FAKE_MODEL,
            filename=f"doc-{version_id.hex[:8]}.txt",
        )
        built = time.perf_counter()
        written = knowledge.replace_chunks(
            tenant,
            version_id,
            rows,
            IndexingResult(chunk_count=len(rows), embedded_count=len(rows), embedding_model=FAKE_MODEL),
            attempt=attempt,
        )
        done = time.perf_counter()
        if written is not IndexWrite.STORED:
            raise RuntimeError(f"replace_chunks answered {written} for a freshly claimed version")
        times.claim_seconds += claimed - begun
        times.build_rows_seconds += built - claimed
        times.write_seconds += done - built
        times.chunks += len(rows)
        times.versions += 1
    return times


def version_plan(corpus: Corpus) -> list[tuple[str, str, np.ndarray]]:
    plan = []
    start = 0
    for rank, size in enumerate(corpus.sizes):
        own = np.arange(start, start + size)
        for index, collection in enumerate(corpus.collections[rank]):
            members = own[corpus.collection_of[start : start + size] == index]
            for first in range(0, len(members), CHUNKS_PER_VERSION):
                plan.append((corpus.tenant(rank), collection, members[first : first + CHUNKS_PER_VERSION]))
        start += size
    return plan


def drop_hnsw(owner_url: str) -> str:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_get_indexdef(%s::regclass)", (HNSW_INDEX,)).fetchone()
        assert row is not None
        conn.execute(f"DROP INDEX {HNSW_INDEX}")
    return str(row[0])


def build_hnsw(owner_url: str, definition: str) -> float:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        begun = time.perf_counter()
        # The migration's own definition, read back from the catalogue.
        conn.execute(definition)
        return time.perf_counter() - begun


def vacuum_analyze(owner_url: str) -> float:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        begun = time.perf_counter()
        for table in (
            "knowledge_chunks",
            "keyword_postings",
            "keyword_terms",
            "keyword_collections",
            "file_versions",
            "files",
        ):
            conn.execute(f"VACUUM (ANALYZE) {table}")
        return time.perf_counter() - begun


# --- measuring ------------------------------------------------------------------------------------------


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


_EXACT = (
    "SELECT chunk_id, embedding <=> %(embedding)s::vector FROM knowledge_chunks"
    " WHERE tenant_id = %(tenant)s AND subjects && %(collections)s AND embedding_model = %(model)s"
    # `+ 0`: an expression the HNSW index cannot order by, so this is always an exact scan.
    " ORDER BY (embedding <=> %(embedding)s::vector) + 0, chunk_id LIMIT %(limit)s"
)


def lane_params(query: BenchQuery, limit: int) -> dict[str, Any]:
    return {
        "tenant": query.tenant,
        "collections": sorted(query.searchable),
        "embedding": Vector(list(query.vector)),
        "model": FAKE_MODEL,
        "limit": limit,
    }


def exact_nearest(database: Database, query: BenchQuery, limit: int) -> list[tuple[str, float]]:
    """(chunk id, cosine) of the exact nearest, through the application role (RLS applies)."""
    with database.tenant_transaction(query.tenant) as conn:
        return [(row[0], 1 - float(row[1])) for row in conn.execute(_EXACT, lane_params(query, limit)).fetchall()]


def adapter_nearest(query: BenchQuery, limit: int) -> tuple[str, dict[str, Any]]:
    """The statement and parameters PostgresKnowledgeIndex.nearest runs for `query` (to EXPLAIN it, or run
    it under other settings)."""
    from shared.adapters.postgres.vector_lane import nearest_query
    from shared.domain.search import SearchFilters

    return nearest_query(
        query.tenant, query.searchable, query.vector, embedding_model=FAKE_MODEL, limit=limit, filters=SearchFilters()
    )


def set_local(conn: psycopg.Connection[Any], settings: dict[str, str]) -> None:
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, true)", (name, value))


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def plan_label(plan: dict[str, Any]) -> str:
    indexes = {node.get("Index Name") for node in plan_nodes(plan)} - {None}
    if HNSW_INDEX in indexes:
        return "hnsw"
    if indexes:
        return "btree/gin: " + ",".join(sorted(str(name) for name in indexes))
    return "seq scan"


def explain(database: Database, query: BenchQuery, limit: int, *, analyze: bool) -> dict[str, Any]:
    options = "ANALYZE, BUFFERS, FORMAT JSON" if analyze else "FORMAT JSON"
    with database.tenant_transaction(query.tenant) as conn:
        set_local(conn, vector_scan_settings())
        statement, params = adapter_nearest(query, limit)
        row = conn.execute(f"EXPLAIN ({options}) {statement}", params).fetchone()
    assert row is not None
    document = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return dict(document[0])


def analyze_summary(explained: dict[str, Any]) -> dict[str, Any]:
    scans = [node for node in plan_nodes(explained["Plan"]) if "Scan" in node.get("Node Type", "")]
    return {
        "plan": plan_label(explained["Plan"]),
        "execution_ms": round(explained.get("Execution Time", 0.0), 2),
        "scans": [
            {
                key: node[key]
                for key in (
                    "Node Type",
                    "Index Name",
                    "Actual Rows",
                    "Rows Removed by Filter",
                    "Rows Removed by Index Recheck",
                    "Shared Hit Blocks",
                    "Shared Read Blocks",
                )
                if key in node
            }
            for node in scans
        ],
    }


def recall_at_10(approximate: Sequence[str], exact: Sequence[str]) -> float:
    truth = exact[:10]
    if not truth:
        return 1.0
    return len(set(approximate[:10]) & set(truth)) / len(truth)


def by_bucket(queries: Sequence[BenchQuery], values: Sequence[float]) -> dict[str, list[float]]:
    grouped: dict[str, list[float]] = {}
    for query, value in zip(queries, values, strict=True):
        grouped.setdefault(query.bucket, []).append(value)
    return grouped


def mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else float("nan")


def nearest_with(database: Database, query: BenchQuery, limit: int, settings: dict[str, str]) -> list[str]:
    """The adapter's vector query under other GUCs, in this bench's own transaction."""
    with database.tenant_transaction(query.tenant) as conn:
        set_local(conn, settings)
        statement, params = adapter_nearest(query, limit)
        return [row[0] for row in conn.execute(statement, params).fetchall()]


def _fetch_all(conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> list[Any]:
    return conn.execute(statement, params).fetchall()


def timed_ms(action: Callable[[], Any]) -> tuple[float, Any]:
    begun = time.perf_counter()
    value = action()
    return (time.perf_counter() - begun) * 1000, value


# --- the figures ----------------------------------------------------------------------------------------


def similarity_profile(corpus: Corpus, queries: Sequence[BenchQuery]) -> dict[str, Any]:
    """Cosine of each query's 1st, 10th and 50th nearest chunk in its scope (numpy, exact), averaged."""
    starts = np.concatenate([[0], np.cumsum(corpus.sizes)])
    profile: dict[str, list[list[float]]] = {"in-domain queries": [], "off-domain queries": []}
    for query in queries:
        rank = int(query.tenant[1:])
        names = np.array(corpus.collections[rank])
        own = slice(starts[rank], starts[rank + 1])
        scoped = corpus.vectors[own][np.isin(names[corpus.collection_of[own]], sorted(query.searchable))]
        similarities = np.sort(scoped @ np.asarray(query.vector, dtype=np.float32))[::-1]
        picks = [float(similarities[min(k, len(similarities) - 1)]) for k in (0, 9, 49)]
        profile["off-domain queries" if query.off_domain else "in-domain queries"].append(picks)
    return {
        kind: {
            label: round(float(np.mean([row[i] for row in rows])), 3) for i, label in enumerate(("1st", "10th", "50th"))
        }
        for kind, rows in profile.items()
        if rows
    }


def distribution(corpus: Corpus) -> dict[str, Any]:
    buckets: dict[str, dict[str, Any]] = {}
    for rank, size in enumerate(corpus.sizes):
        entry = buckets.setdefault(corpus.bucket(rank), {"tenants": 0, "chunks": 0, "sizes": []})
        entry["tenants"] += 1
        entry["chunks"] += size
        entry["sizes"].append(size)
    total = sum(corpus.sizes)
    small, large = int(total * SMALL_BELOW), int(total * LARGE_FROM)
    return {
        name: {
            "rule": {
                "small": f"< {SMALL_BELOW:.0%} of all chunks (< {small})",
                "medium": f"{SMALL_BELOW:.0%}-{LARGE_FROM:.0%} ({small}-{large - 1})",
                "large": f">= {LARGE_FROM:.0%} (>= {large})",
            }[name],
            "tenants": entry["tenants"],
            "chunks": entry["chunks"],
            "smallest": min(entry["sizes"]),
            "largest": max(entry["sizes"]),
        }
        for name, entry in sorted(buckets.items(), key=lambda item: BUCKETS.index(item[0]))
    }


def load_figures(result: Result, owner_url: str, database: Database, corpus: Corpus) -> list[dict[str, Any]]:
    plan = version_plan(corpus)
    definition = drop_hnsw(owner_url)
    times = write_versions(database, corpus, plan)
    build = build_hnsw(owner_url, definition)
    vacuum = vacuum_analyze(owner_url)
    with psycopg.connect(owner_url, autocommit=True) as conn:
        sizes = conn.execute(
            "SELECT pg_size_pretty(pg_relation_size(%s::regclass)), pg_size_pretty(pg_total_relation_size("
            "'knowledge_chunks'::regclass)), (SELECT count(*) FROM keyword_terms)",
            (HNSW_INDEX,),
        ).fetchone()
    assert sizes is not None
    how = (
        "replace_chunks (the KnowledgeStore's write: row trigger + per-statement BM25 statistics triggers),"
        f" up to {CHUNKS_PER_VERSION} chunks per version, one loader, with the HNSW index dropped"
        " (as the owner) and rebuilt from its own definition afterwards"
    )
    return [
        result(
            f"search bench: load {times.chunks:,} chunks via replace_chunks (HNSW dropped)",
            [times.write_rate],
            "chunks/s",
            chunks=times.chunks,
            versions=times.versions,
            method=how,
            write_seconds=round(times.write_seconds, 1),
            claim_versions_seconds=round(times.claim_seconds, 1),
            build_rows_seconds=round(times.build_rows_seconds, 1),
            end_to_end_chunks_per_second=round(times.end_to_end_rate, 1),
            vacuum_analyze_seconds=round(vacuum, 1),
            table_with_indexes=sizes[1],
            keyword_terms_rows=sizes[2],
            single_run="loaded once (10-minute budget on 2 cores)",
        ),
        result(
            f"search bench: build the HNSW index over {times.chunks:,} x {DIMENSION}-d (m 16, ef_construction 64)",
            [build],
            "s",
            definition=definition,
            index_size=sizes[0],
            maintenance_work_mem="512MB",
            single_run="built once",
        ),
    ]


def incremental_figure(result: Result, database: Database, corpus: Corpus) -> dict[str, Any]:
    """Writes with the HNSW index in place (and 100k rows in it): a separate tenant, after all queries."""
    rng = np.random.default_rng(SEED + 1)
    chunks = rng.choice(len(corpus.tenant_of), size=min(INCREMENTAL_CHUNKS, len(corpus.tenant_of)), replace=False)
    plan = [
        ("t-incremental", "c1", chunks[first : first + CHUNKS_PER_VERSION])
        for first in range(0, len(chunks), CHUNKS_PER_VERSION)
    ]
    times = write_versions(database, corpus, plan)
    return result(
        f"search bench: replace_chunks with the HNSW index in place ({times.chunks:,} more chunks)",
        [times.write_rate],
        "chunks/s",
        chunks=times.chunks,
        versions=times.versions,
        end_to_end_chunks_per_second=round(times.end_to_end_rate, 1),
        single_run="written once",
    )


def lane_nearest(database: Database, query: BenchQuery, limit: int) -> list[tuple[str, float]]:
    """(chunk id, cosine) from PostgresKnowledgeIndex.nearest, exactly as Retrieval.lanes calls it."""
    from shared.domain.search import SearchFilters

    hits = PostgresKnowledgeIndex(database).nearest(
        query.tenant, query.searchable, query.vector, embedding_model=FAKE_MODEL, limit=limit, filters=SearchFilters()
    )
    return [(hit.chunk_id, 2 * hit.score - 1) for hit in hits]  # score = 1 - distance / 2


def kind_of(query: BenchQuery) -> str:
    return "off-domain" if query.off_domain else "in-domain"


def per_kind_and_bucket(queries: Sequence[BenchQuery], values: Sequence[float]) -> dict[str, dict[str, float]]:
    grouped: dict[str, dict[str, list[float]]] = {}
    for query, value in zip(queries, values, strict=True):
        grouped.setdefault(kind_of(query), {}).setdefault(query.bucket, []).append(value)
    return {kind: {bucket: mean(v) for bucket, v in buckets.items()} for kind, buckets in grouped.items()}


def recall_figures(
    result: Result, database: Database, queries: Sequence[BenchQuery], candidates: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    # The exact top `candidates`: its first 10 are the truth, its length what the filters leave.
    exact = [exact_nearest(database, query, candidates) for query in queries]
    lane = [lane_nearest(database, query, candidates) for query in queries]
    lane_10 = [lane_nearest(database, query, 10) for query in queries]
    truth_ids = [[chunk for chunk, _ in rows] for rows in exact]
    recalls = [recall_at_10([c for c, _ in f], t) for f, t in zip(lane, truth_ids, strict=True)]
    recalls_10 = [recall_at_10([c for c, _ in f], t) for f, t in zip(lane_10, truth_ids, strict=True)]
    # How much closer the true top 10 are than the lane's top 10, in mean cosine: near zero when a miss
    # only swaps near-ties.
    shortfall = [
        (statistics.fmean(c for _, c in truth[:10]) - statistics.fmean(c for _, c in found[:10]))
        if truth and found
        else 0.0
        for found, truth in zip(lane, exact, strict=True)
    ]
    plans = [plan_label(explain(database, query, candidates, analyze=False)["Plan"]) for query in queries]
    # Fewer rows than the filters leave (up to the limit): the iterative scan gave up early.
    short = [len(found) < len(truth) for found, truth in zip(lane, exact, strict=True)]
    per_bucket = by_bucket(queries, recalls)
    plan_counts: dict[str, dict[str, int]] = {}
    recall_by_plan: dict[str, dict[str, list[float]]] = {}
    for query, label, value in zip(queries, plans, recalls, strict=True):
        plan_counts.setdefault(query.bucket, {}).setdefault(label, 0)
        plan_counts[query.bucket][label] += 1
        recall_by_plan.setdefault(query.bucket, {}).setdefault(label, []).append(value)
    narrowed = [value for query, value in zip(queries, recalls, strict=True) if query.wanted is not None]
    findings = {
        "recall_per_query_kind_and_bucket": per_kind_and_bucket(queries, recalls),
        "top10_mean_cosine_shortfall_per_kind_and_bucket": per_kind_and_bucket(queries, shortfall),
        "plans_per_bucket": plan_counts,
        "recall_per_bucket_and_plan": {
            bucket: {label: mean(values) for label, values in labels.items()}
            for bucket, labels in recall_by_plan.items()
        },
        "short_results_per_bucket": {bucket: sum(values) for bucket, values in by_bucket(queries, short).items()},
        "recall_narrowed_to_one_collection": mean(narrowed),
        "recall_at_10_with_limit_10_per_bucket": {b: mean(v) for b, v in by_bucket(queries, recalls_10).items()},
        "recall_at_10_with_limit_10_overall": mean(recalls_10),
    }
    out = [
        result(
            f"search bench: vector lane recall@10 vs exact, all {len(queries)} queries",
            [statistics.fmean(recalls)],
            "recall",
            target=RECALL_TARGET,
            met=min(mean(values) for values in per_bucket.values()) >= RECALL_TARGET,
            lane_limit=candidates,
            settings=vector_scan_settings(),
            exact="same tenant/collections/model filters, ORDER BY (embedding <=> q) + 0 (no index can order it)",
            **findings,
        )
    ]
    for bucket in BUCKETS:
        if bucket in per_bucket:
            out.append(
                result(
                    f"search bench: vector lane recall@10 vs exact, {bucket} tenants",
                    [statistics.fmean(per_bucket[bucket])],
                    "recall",
                    queries=len(per_bucket[bucket]),
                    worst_query=round(min(per_bucket[bucket]), 2),
                    met=statistics.fmean(per_bucket[bucket]) >= RECALL_TARGET,
                )
            )
    return out, {"exact": truth_ids, "per_bucket": per_bucket}


def alternatives(
    database: Database, queries: Sequence[BenchQuery], exact: Sequence[Sequence[str]], candidates: int
) -> dict[str, Any]:
    """Recall and latency of the adapter's vector query under other GUCs, set in this bench's own
    transactions only (the adapter is untouched): which setting would reach the target, at what cost."""
    base = vector_scan_settings()
    options = {
        "adapter (as is)": base,
        "ef_search 200": {**base, "hnsw.ef_search": "200"},
        "ef_search 400": {**base, "hnsw.ef_search": "400"},
        "ef_search 800": {**base, "hnsw.ef_search": "800"},
        "ef_search 1000 (pgvector's maximum)": {**base, "hnsw.ef_search": "1000"},
        "strict_order": {**base, "hnsw.iterative_scan": "strict_order"},
        "max_scan_tuples 200000": {**base, "hnsw.max_scan_tuples": "200000"},
        # No index scans at all: the tenant btree through a bitmap scan, then an exact sort.
        "exact (enable_indexscan off)": {**base, "enable_indexscan": "off"},
    }
    measured = {}
    for label, settings in options.items():
        latencies, recalls = [], []
        for query, truth in zip(queries, exact, strict=True):
            elapsed, found = timed_ms(partial(nearest_with, database, query, candidates, settings))
            latencies.append(elapsed)
            recalls.append(recall_at_10(found, truth))
        measured[label] = {
            "settings": {name: value for name, value in settings.items() if base.get(name) != value},
            "recall_overall": mean(recalls),
            "recall_per_bucket": {bucket: mean(values) for bucket, values in by_bucket(queries, recalls).items()},
            "recall_in_domain_per_bucket": {
                bucket: mean(values)
                for bucket, values in by_bucket(
                    [q for q in queries if not q.off_domain],
                    [r for q, r in zip(queries, recalls, strict=True) if not q.off_domain],
                ).items()
            },
            "p50_ms": round(percentile(latencies, 0.5), 2),
            "p95_ms": round(percentile(latencies, 0.95), 2),
            "p95_per_bucket_ms": {
                bucket: round(percentile(values, 0.95), 2) for bucket, values in by_bucket(queries, latencies).items()
            },
        }
    return measured


def index_alternative(
    owner_url: str, database: Database, queries: Sequence[BenchQuery], exact: Sequence[Sequence[str]], candidates: int
) -> dict[str, Any]:
    """The HNSW index rebuilt with ef_construction 128 (m unchanged): build time, recall and latency under
    the adapter's GUCs and with ef_search 400. Run last: it replaces the index the other figures used."""
    definition = drop_hnsw(owner_url)
    rebuilt = definition.replace("ef_construction='64'", "ef_construction='128'")
    seconds = build_hnsw(owner_url, rebuilt)
    base = vector_scan_settings()
    measured: dict[str, Any] = {"definition": rebuilt, "build_seconds": round(seconds, 1)}
    for label, settings in (("adapter GUCs", base), ("ef_search 400", {**base, "hnsw.ef_search": "400"})):
        latencies, recalls = [], []
        for query, truth in zip(queries, exact, strict=True):
            elapsed, found = timed_ms(partial(nearest_with, database, query, candidates, settings))
            latencies.append(elapsed)
            recalls.append(recall_at_10(found, truth))
        measured[label] = {
            "recall_per_bucket": {bucket: mean(values) for bucket, values in by_bucket(queries, recalls).items()},
            "recall_per_query_kind_and_bucket": per_kind_and_bucket(queries, recalls),
            "p50_ms": round(percentile(latencies, 0.5), 2),
            "p95_ms": round(percentile(latencies, 0.95), 2),
        }
    return measured


def keyword_params(query: BenchQuery, tuning: Any) -> dict[str, Any]:
    """The parameters PostgresKeywordIndex.search gives KEYWORD_SEARCH for `query` (no filters): its folded text,
    every analyser with its configuration, Quire's stopwords."""
    from shared.adapters.postgres import keyword_lane
    from shared.domain.languages import ANALYSERS, keyword_text, text_search_configuration

    analysers = sorted(ANALYSERS)
    return {
        "tenant": query.tenant,
        "collections": sorted(query.searchable),
        "query": keyword_text(query.text),
        "stopwords": keyword_lane.STOPWORDS,
        "analysers": analysers,
        "configurations": [text_search_configuration(analyser) for analyser in analysers],
        "limit": tuning.candidates,
        "k1": tuning.bm25_k1,
        "b": tuning.bm25_b,
        "context_weight": tuning.context_weight,
    }


def keyword_without_rls(owner_url: str, queries: Sequence[BenchQuery], tuning: Any) -> dict[str, Any]:
    """The keyword lane's own SQL run by the superuser (RLS does not apply; the tenant condition is in the
    SQL anyway): shows what row-level security costs it. Under RLS a non-LEAKPROOF operator (@@, &&) may
    not be an index condition, so the GIN index on search_vector cannot be used and every row of the
    tenant is read and matched."""
    from shared.adapters.postgres import keyword_lane

    statement = keyword_lane.KEYWORD_SEARCH.format(join="")
    latencies = []
    with psycopg.connect(owner_url, autocommit=True) as conn:
        leakproof: dict[str, bool] = dict(
            conn.execute(
                "SELECT p.oprname || ' (' || f.proname || ')', f.proleakproof FROM pg_operator p"
                " JOIN pg_proc f ON f.oid = p.oprcode WHERE (p.oprname, f.proname) IN"
                " (('@@', 'ts_match_vq'), ('&&', 'arrayoverlap'), ('=', 'texteq'))"
            ).fetchall()
        )
        plans: dict[str, str] = {}
        for query in queries:
            params = keyword_params(query, tuning)
            elapsed, _ = timed_ms(partial(_fetch_all, conn, statement, params))
            latencies.append(elapsed)
            if query.bucket not in plans:
                explained = conn.execute(f"EXPLAIN (FORMAT JSON) {statement}", params).fetchone()
                assert explained is not None
                document = explained[0] if isinstance(explained[0], list) else json.loads(explained[0])
                plans[query.bucket] = scan_indexes(document[0]["Plan"])
    return {
        "p50_ms": round(percentile(latencies, 0.5), 2),
        "p95_ms": round(percentile(latencies, 0.95), 2),
        "p95_per_bucket_ms": {b: round(percentile(v, 0.95), 2) for b, v in by_bucket(queries, latencies).items()},
        "candidate_scan_indexes_per_bucket": plans,
        "leakproof": leakproof,
    }


def scan_indexes(plan: dict[str, Any]) -> str:
    """The indexes the keyword lane's scans used (chunks, or the postings' primary key)."""
    used = (str(node.get("Index Name", "")) for node in plan_nodes(plan))
    names = sorted({name for name in used if name.startswith(("knowledge_chunks", "keyword_postings"))})
    return " + ".join(names) or "none"


def keyword_plans_under_rls(
    database: Database, corpus: Corpus, queries: Sequence[BenchQuery], tuning: Any
) -> dict[str, Any]:
    """EXPLAIN ANALYZE of the keyword lane's statement, as the application role (RLS on), for the largest tenant
    queried in each bucket: which indexes its scans used, and how each table was read (a postings lookup should
    be an index scan on the primary key, once per (analyser, term), never a sequential scan)."""
    from shared.adapters.postgres import keyword_lane

    statement = keyword_lane.KEYWORD_SEARCH.format(join="")
    plans: dict[str, Any] = {}
    for bucket in BUCKETS:
        members = [query for query in queries if query.bucket == bucket]
        if not members:
            continue
        chosen = max(members, key=lambda q: (corpus.sizes[int(q.tenant[1:])], q.wanted is None))
        with database.tenant_transaction(chosen.tenant) as conn:
            explained = conn.execute(
                f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}", keyword_params(chosen, tuning)
            ).fetchone()
        assert explained is not None
        document = explained[0] if isinstance(explained[0], list) else json.loads(explained[0])
        label = f"{bucket}: {chosen.tenant} ({corpus.sizes[int(chosen.tenant[1:])]} chunks, {chosen.language} query)"
        plans[label] = {"indexes": scan_indexes(document[0]["Plan"]), **keyword_plan_summary(document[0])}
    return plans


def keyword_plan_summary(explained: dict[str, Any]) -> dict[str, Any]:
    """Each table the keyword lane read, how (node, index, condition), how many times and how many rows a time."""
    reads = [node for node in plan_nodes(explained["Plan"]) if "Relation Name" in node]
    return {
        "execution_ms": round(explained.get("Execution Time", 0.0), 2),
        "sequential_scans": sorted({node["Relation Name"] for node in reads if node["Node Type"] == "Seq Scan"}),
        "reads": [
            {
                "table": node["Relation Name"],
                "node": node["Node Type"],
                "index": node.get("Index Name"),
                "condition": node.get("Index Cond") or node.get("Recheck Cond"),
                "loops": node.get("Actual Loops"),
                "rows_per_loop": node.get("Actual Rows"),
                "shared_blocks_hit_read": [node.get("Shared Hit Blocks"), node.get("Shared Read Blocks")],
            }
            for node in reads
        ],
    }


def bench_retrieval(container: Any, queries: Sequence[BenchQuery]) -> Any:
    """The composition root's Retrieval (title lane and identifier booster as configured) over the same database,
    with one part of the bench's own: the FAKE query embedder."""
    from shared.bootstrap import Container, adapters_for

    settings = container.settings
    embedder = FakeQueryEmbedder({query.text: query.vector for query in queries})
    return Container(settings, adapters_for(settings, database=container.database, embedder=embedder)).retrieval


def corpus_languages(corpus: Corpus) -> dict[str, Any]:
    """What the latency rows say of the corpus they were measured on."""
    shares = corpus.language_shares()
    return {
        "corpus": "mixed-language" if len(shares) > 1 else f"{next(iter(shares))} only",
        "language_shares": shares,
        "language_rule": f"chunk i in pattern[i % {len(corpus.pattern)}]: {' '.join(corpus.pattern)}",
    }


@dataclass(frozen=True)
class LatencySubject:
    """A loaded corpus whose lanes are timed, and the suffix its rows' names carry."""

    container: Any
    retrieval: Any
    queries: Sequence[BenchQuery]
    corpus: Corpus
    lanes: Sequence[str] = ("hybrid", "vector", "keyword")
    suffix: str = ""
    data: dict[str, Any] = field(default_factory=dict)  # more to say in each of its rows


def latency_figures(result: Result, subjects: Sequence[LatencySubject]) -> list[list[dict[str, Any]]]:
    """Each subject's lanes timed over its queries, RUNS times, the subjects taken in turn within each run (so a
    busy minute on the machine falls on all of them alike); each subject's rows, in the subjects' order."""
    timed = [_LaneTimes(subject) for subject in subjects]
    for run in range(RUNS):
        for times in timed:
            times.run(first=run == 0)
    return [times.rows(result) for times in timed]


class _LaneTimes:
    def __init__(self, subject: LatencySubject) -> None:
        from shared.domain.auth import Principal
        from shared.domain.search import SearchFilters, SearchQuery

        self.subject = subject
        queries = subject.queries
        vectors, keywords = subject.container.vector_index, subject.container.keyword_index
        retrieval = subject.retrieval
        tuning = retrieval.tuning
        principals = [Principal(tenant_id=q.tenant, subject="bench", collections=q.readable) for q in queries]
        searches = [SearchQuery(text=q.text, filters=SearchFilters(collections=q.wanted)) for q in queries]
        none = SearchFilters()

        def hybrid(index: int) -> Any:
            return retrieval.search(principals[index], searches[index])

        def vector(index: int) -> Any:
            q = queries[index]
            return vectors.nearest(
                q.tenant, q.searchable, q.vector, embedding_model=FAKE_MODEL, limit=tuning.candidates, filters=none
            )

        def keyword(index: int) -> Any:
            q = queries[index]
            return keywords.search(
                q.tenant,
                q.searchable,
                q.text,
                limit=tuning.candidates,
                filters=none,
                k1=tuning.bm25_k1,
                b=tuning.bm25_b,
            )

        every: dict[str, Callable[[int], Any]] = {"hybrid": hybrid, "vector": vector, "keyword": keyword}
        self.lanes = {name: every[name] for name in subject.lanes}
        self.p50: dict[str, list[float]] = {name: [] for name in self.lanes}
        self.p95: dict[str, list[float]] = {name: [] for name in self.lanes}
        self.bucket_p95: dict[str, dict[str, list[float]]] = {name: {} for name in self.lanes}
        self.answered = 0

    def run(self, *, first: bool) -> None:
        queries = self.subject.queries
        for name, action in self.lanes.items():
            samples = []
            for index in range(len(queries)):
                elapsed, answer = timed_ms(partial(action, index))
                samples.append(elapsed)
                if first and name == "hybrid" and getattr(answer, "hits", None):
                    self.answered += 1
            self.p50[name].append(percentile(samples, 0.5))
            self.p95[name].append(percentile(samples, 0.95))
            for bucket, values in by_bucket(queries, samples).items():
                self.bucket_p95[name].setdefault(bucket, []).append(percentile(values, 0.95))

    def rows(self, result: Result) -> list[dict[str, Any]]:
        subject = self.subject
        queries = subject.queries
        common = {
            "queries": len(queries),
            "runs_of": f"{RUNS} runs of {len(queries)} queries; median of the runs",
            **corpus_languages(subject.corpus),
            "query_languages": dict(sorted(Counter(str(query.language) for query in queries).items())),
            **subject.data,
        }
        out = []
        for name, label in (
            ("hybrid", "hybrid search (Retrieval.search, FAKE query embedder)"),
            ("vector", "vector lane (nearest)"),
            ("keyword", "keyword lane (BM25 search)"),
        ):
            if name not in self.lanes:
                continue
            extra: dict[str, Any] = {"candidates_per_lane": subject.retrieval.tuning.candidates}
            if name == "hybrid":
                extra["embedder"] = (
                    "FAKE: a dict lookup of the bench's synthetic query vector, no model runs; the figure is"
                    " Retrieval.search end to end otherwise (both lanes, RRF, the title lane, floors, snapshot"
                    " hydration, the identifier booster)"
                )
                extra["queries_with_hits"] = self.answered
            out.append(result(f"search bench: {label} p50{subject.suffix}", self.p50[name], "ms", **common, **extra))
            p95_data: dict[str, Any] = {
                "p95_per_bucket_ms": {
                    bucket: round(statistics.median(v), 2) for bucket, v in self.bucket_p95[name].items()
                }
            }
            if name == "hybrid":
                p95_data.update(
                    target_ms=HYBRID_P95_TARGET_MS, met=statistics.median(self.p95[name]) < HYBRID_P95_TARGET_MS
                )
            out.append(result(f"search bench: {label} p95{subject.suffix}", self.p95[name], "ms", **common, **p95_data))
        return out


def indexing_figures(result: Result, database: Database, owner_url: str) -> list[dict[str, Any]]:
    """SciFact abstracts through Indexer.index_many with the real MiniLM, into fresh versions each run."""
    name = f"index {SCIFACT_DOCUMENTS} SciFact abstracts end to end (chunk, MiniLM embed, replace_chunks)"
    corpus_file = SCIFACT / "corpus.jsonl"
    if not corpus_file.is_file():
        return [skipped(name, "chunks/s", f"{corpus_file} is absent")]
    from shared.adapters.local.onnx_embeddings import OnnxMiniLmEmbedder
    from shared.config import Settings
    from shared.local.chunk_rows import new_indexing_version
    from shared.local.evaluation import as_document
    from shared.services.indexing import Indexer, IndexTarget

    embedder = OnnxMiniLmEmbedder(dimension=DIMENSION)
    status = embedder.capability()
    if not status.available:
        return [skipped(name, "chunks/s", status.reason or "the local embedder is unavailable")]
    begun = time.perf_counter()
    embedder.embed(["warm up"])  # loads the model: not part of the rate
    load_seconds = time.perf_counter() - begun
    documents = []
    with corpus_file.open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            documents.append((str(entry["_id"]), as_document(entry.get("title", ""), entry.get("text", ""))))
            if len(documents) == SCIFACT_DOCUMENTS:
                break
    indexer = Indexer(
        PostgresKnowledgeIndex(database),
        embedder,
        Py3LangidDetector(),
        max_chunk_tokens=Settings(runtime="local").chunk_max_tokens,
    )
    rates, chunk_counts = [], []
    tenant = "scifact-bench"
    for run in range(RUNS):
        collection = f"run{run + 1}"
        items = []
        for doc_id, document in documents:
            filename = f"scifact-{doc_id}.txt"
            file_id, version_id, attempt = new_indexing_version(database, tenant, collection, filename)
            target = IndexTarget(
                tenant_id=tenant,
                file_id=file_id,
                version_id=version_id,
                collection_id=collection,
                filename=filename,
                media_type="text/plain",
                uploaded_at=datetime.now(UTC),
            )
            items.append((target, document, attempt))
        begun = time.perf_counter()
        written = indexer.index_many(items)
        seconds = time.perf_counter() - begun
        with psycopg.connect(owner_url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM knowledge_chunks WHERE tenant_id = %s AND collection_id = %s"
                " AND embedding IS NOT NULL",
                (tenant, collection),
            ).fetchone()
        chunks = int(row[0]) if row else 0
        if any(outcome.written.value != "stored" for outcome in written):
            raise RuntimeError(f"index_many did not store every version: {written}")
        chunk_counts.append(chunks)
        rates.append(chunks / seconds)
    return [
        result(
            name,
            rates,
            "chunks/s",
            documents=len(documents),
            chunks_per_run=chunk_counts,
            embedder=embedder.model_id,
            model_load_seconds_excluded=round(load_seconds, 1),
            path="Indexer.index_many: StructuralChunker in MiniLM tokens, embed in batches of 64, replace_chunks"
            " into the 100k-chunk table with its HNSW index; each run into fresh versions",
        )
    ]


def skipped(name: str, unit: str, reason: str) -> dict[str, Any]:
    return {"name": name, "value": None, "unit": unit, "baseline": None, "ratio": None, "data": {"skipped": reason}}


def corpus_facts(corpus: Corpus, queries: Sequence[BenchQuery], generated: float, owner_url: str) -> dict[str, Any]:
    return {
        "tenants": TENANTS,
        "tenant_size_share": f"proportional to 1 / rank^{TENANT_SIZE_EXPONENT}",
        "collections_per_tenant": "1-3, shares 0.6 / 0.3 / 0.1",
        "areas": AREAS,
        "centroids": CENTROIDS,
        "topics_per_tenant": f"{min(corpus.topics_per_tenant)}-{max(corpus.topics_per_tenant)}",
        "noise_norms": {"topic_around_area": AREA_NOISE, "chunk_around_topic": CHUNK_NOISE, "query": QUERY_NOISE},
        "query_similarity_profile": similarity_profile(corpus, queries),
        "off_domain_query_share": OFF_DOMAIN_SHARE,
        "narrowed_query_share": RESTRICTED_QUERY_SHARE,
        "vocabulary": VOCABULARY,
        "words_per_chunk": list(WORDS_PER_CHUNK),
        "generation_seconds": round(generated, 1),
        "server": server_settings(owner_url),
        "cpus": os.cpu_count(),
        "load_average_1m_at_start": round(os.getloadavg()[0], 2),
    }


def explain_largest(database: Database, corpus: Corpus, queries: Sequence[BenchQuery], limit: int) -> dict[str, Any]:
    """EXPLAIN ANALYZE of the vector lane for the largest tenant queried in each bucket."""
    explained = {}
    for bucket in BUCKETS:
        members = [query for query in queries if query.bucket == bucket]
        if members:
            chosen = max(members, key=lambda q: (corpus.sizes[int(q.tenant[1:])], q.wanted is None))
            label = f"{bucket}: {chosen.tenant} ({corpus.sizes[int(chosen.tenant[1:])]} chunks)"
            explained[label] = analyze_summary(explain(database, chosen, limit, analyze=True))
    return explained


def figures(result: Result) -> list[dict[str, Any]]:
    from shared.bootstrap import Container
    from shared.config import Settings
    from shared.observability import logger

    logger.setLevel("WARNING")  # the indexer logs every version it writes
    rng = np.random.default_rng(SEED)
    begun = time.perf_counter()
    corpus = make_corpus(CHUNKS, rng)
    queries = make_queries(corpus, QUERIES, rng)
    generated = time.perf_counter() - begun
    out: list[dict[str, Any]] = []
    with ExitStack() as servers:
        owner_url, app_url = servers.enter_context(embedded_server())
        container = Container(Settings(runtime="local", database_url=app_url))
        database = container.database
        tuning = container.retrieval.tuning
        try:
            loaded = load_figures(result, owner_url, database, corpus)
            loaded[0]["data"]["tenant_size_distribution"] = distribution(corpus)
            loaded[0]["data"]["corpus"] = corpus_facts(corpus, queries, generated, owner_url)
            out.extend(loaded)

            recall, context = recall_figures(result, database, queries, tuning.candidates)
            recall[0]["data"]["explain_analyze_largest_tenant_per_bucket"] = explain_largest(
                database, corpus, queries, tuning.candidates
            )
            below = [b for b, values in context["per_bucket"].items() if statistics.fmean(values) < RECALL_TARGET]
            investigate = bool(below or os.environ.get("QUIRE_BENCH_SEARCH_ALTERNATIVES"))
            if investigate:
                recall[0]["data"]["alternative_settings"] = alternatives(
                    database, queries, context["exact"], tuning.candidates
                )
            out.extend(recall)

            retrieval = bench_retrieval(container, queries)
            subjects = [LatencySubject(container, retrieval, queries, corpus)]
            comparison = servers.enter_context(ExitStack())  # its server stops once its rows are in
            if ENGLISH_COMPARISON:
                subjects.append(comparison.enter_context(english_only_subject()))
            latency, *english = latency_figures(result, subjects)
            keyword_p95 = latency[-1]
            keyword_p95["data"]["explain_analyze_largest_tenant_per_bucket_under_rls"] = keyword_plans_under_rls(
                database, corpus, queries, tuning
            )
            keyword_p95["data"]["same_sql_as_superuser_without_rls"] = keyword_without_rls(owner_url, queries, tuning)
            out.extend(latency)
            for rows, subject in zip(english, subjects[1:], strict=True):
                rows[-1]["data"]["explain_analyze_largest_tenant_per_bucket_under_rls"] = keyword_plans_under_rls(
                    subject.container.database, subject.corpus, subject.queries, tuning
                )
                out.extend(rows)
            comparison.close()
            out.extend(answer_figures(result, container, retrieval, queries, len(corpus.tenant_of)))

            out.append(incremental_figure(result, database, corpus))
            out.extend(indexing_figures(result, database, owner_url))
            if investigate:  # last: it replaces the index every figure above used
                recall[0]["data"]["alternative_index_ef_construction_128"] = index_alternative(
                    owner_url, database, queries, context["exact"], tuning.candidates
                )
            loaded[0]["data"]["corpus"]["load_average_1m_at_end"] = round(os.getloadavg()[0], 2)
        finally:
            database.close()
    return out


@contextmanager
def english_only_subject() -> Iterator[LatencySubject]:
    """The corpus before issue 36 in a server of its own: the same vectors, queries and Zipf ranks, every chunk in
    English (one analyser), loaded as the mixed corpus is; its hybrid and keyword lanes are timed in turn with the
    mixed corpus's."""
    from shared.bootstrap import Container
    from shared.config import Settings

    rng = np.random.default_rng(SEED)
    corpus = make_corpus(CHUNKS, rng, languages=ENGLISH_ONLY)
    queries = make_queries(corpus, QUERIES, rng)
    with embedded_server() as (owner_url, app_url):
        container = Container(Settings(runtime="local", database_url=app_url))
        try:
            definition = drop_hnsw(owner_url)
            times = write_versions(container.database, corpus, version_plan(corpus))
            build = build_hnsw(owner_url, definition)
            vacuum_analyze(owner_url)
            load = {"write_chunks_per_second": round(times.write_rate, 1), "hnsw_build_seconds": round(build, 1)}
            yield LatencySubject(
                container,
                bench_retrieval(container, queries),
                queries,
                corpus,
                lanes=("hybrid", "keyword"),
                suffix=ENGLISH_ONLY_SUFFIX,
                data={"load": load, "timed": "in turn with the mixed corpus's lanes, run by run"},
            )
        finally:
            container.database.close()


def main() -> int:
    """Only this bench: the table on stdout, the figures as JSON in .bench/search.json."""
    import sys

    from bench.run import REPO_ROOT, result, table

    begun = time.perf_counter()
    out = figures(result)
    print(table(out))
    print(f"\nsearch bench {time.perf_counter() - begun:.0f} s")
    target = REPO_ROOT / ".bench" / "search.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2), encoding="utf-8")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
