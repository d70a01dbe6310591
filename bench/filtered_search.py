"""Metadata-filtered search at scale (issue 33), in an embedded PostgreSQL of its own.

The search benchmark's corpus (bench/search_corpus.py, QUIRE_BENCH_SEARCH_CHUNKS chunks over 100 tenants), loaded
as bench/search.py loads it, except that the largest tenant's chunks are cut into files of FILE_CHUNKS (so a filter
can keep 0.1% of them), each file carrying metadata written as the API writes it (`files.metadata` and
`metadata_typed`, shared/domain/metadata.py): `doctype` is "memo" on 0.1% of the files, "invoice" on 5%, "contract"
on 50%, "report" on the rest, and `effective` a distinct day per file, drawn independently, so a date range keeps
any share. Files are cut in the corpus's order and topics are drawn at random, so the metadata is independent of
the vectors.

For that tenant, QUIRE_BENCH_FILTERED_QUERIES queries (a fifth drawn near another tenant's chunk, as in the search
benchmark), each figure the median of RUNS runs:

- Latency under each filter (equals at 50%, 5%, 0.1%; a date range at 5%) and without one: hybrid search
  (`Retrieval.search`, the composition root's, FAKE query embedder as in bench/search.py), the vector lane
  (`nearest`) and the keyword lane, p50 / p95; the unfiltered hybrid figure is each filtered one's baseline.
- Recall@10 of the vector lane (called with the lanes' candidate depth, as Retrieval calls it) against an exact
  scan of the kept chunks, computed without the adapter's SQL: the filter written against `files.metadata` in SQL
  of this file's own, every kept chunk's distance, no index. Also whether any returned chunk is one the filter
  drops (must be 0), and which path the adapter took (its exact scan up to EXACT_SCAN_ROWS kept chunks, else the
  filtered HNSW scan).
- The threshold: a sweep of date ranges keeping 0.1%-50% of the tenant's chunks, each path alone (the module's
  `exact_query` with no row bound, and `nearest_query` under `vector_scan_settings`), p50 / p95 and recall, so
  EXACT_SCAN_ROWS can be chosen from data.

`python -m bench.filtered_search` runs only this (replacing the `search.filtered.*` figures in .bench/results.json,
keeping the others); `make bench` runs it among the component figures.
"""

import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from functools import partial
from typing import Any

import numpy as np

from bench.search import (
    CHUNKS,
    CHUNKS_PER_VERSION,
    SEED,
    Result,
    bench_retrieval,
    build_hnsw,
    drop_hnsw,
    embedded_server,
    percentile,
    recall_at_10,
    timed_ms,
    vacuum_analyze,
    write_versions,
)
from bench.search_corpus import (
    FAKE_MODEL,
    OFF_DOMAIN_SHARE,
    QUERY_NOISE,
    WORDS_PER_QUERY,
    BenchQuery,
    Corpus,
    gaussian,
    make_corpus,
    unit_rows,
)
from shared.adapters.postgres.database import Database

QUERIES = int(os.environ.get("QUIRE_BENCH_FILTERED_QUERIES", "100"))
RUNS = 3
FILTERED_RANK = 0  # the largest tenant
FILE_CHUNKS = 5  # its chunks per file
RECALL_TARGET = 0.95
HYBRID_P95_TARGET_MS = 50.0
FIRST_DAY = date(2010, 1, 1)
# doctype values in order along a random permutation of the files, each with the share of files it has.
DOCTYPES = (("memo", 0.001), ("invoice", 0.05), ("contract", 0.5))
HEADLINE = (("doctype", "memo", 0.001), ("doctype", "invoice", 0.05), ("doctype", "contract", 0.5))
RANGE_SHARE = 0.05
SWEEP = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


def share_label(share: float) -> str:
    return f"{share * 100:g}pct"


# --- loading --------------------------------------------------------------------------------------------


def version_plan(corpus: Corpus) -> list[tuple[str, str, np.ndarray]]:
    """bench/search.py's plan, except the filtered tenant's versions (each a file of its own) hold FILE_CHUNKS."""
    plan = []
    start = 0
    for rank, size in enumerate(corpus.sizes):
        own = np.arange(start, start + size)
        step = FILE_CHUNKS if rank == FILTERED_RANK else CHUNKS_PER_VERSION
        for index, collection in enumerate(corpus.collections[rank]):
            members = own[corpus.collection_of[start : start + size] == index]
            for first in range(0, len(members), step):
                plan.append((corpus.tenant(rank), collection, members[first : first + step]))
        start += size
    return plan


def kept_count(files: int, share: float) -> int:
    return max(1, round(files * share))


def range_start(files: int, share: float) -> date:
    """The first day of a range `effective >= day` keeping `share` of the files (days are FIRST_DAY + 0..files-1)."""
    return FIRST_DAY + timedelta(days=files - kept_count(files, share))


def write_metadata(database: Database, tenant: str, rng: np.random.Generator) -> int:
    """Every file of `tenant` its doctype and effective day, as the API stores them; the number of files."""
    from shared.domain.metadata import MetadataType, indexed_metadata

    types = {"doctype": MetadataType.STRING, "effective": MetadataType.DATE}
    with database.tenant_transaction(tenant) as conn:
        file_ids: list[uuid.UUID] = [
            row[0] for row in conn.execute("SELECT file_id FROM files WHERE tenant_id = %s ORDER BY file_id", (tenant,))
        ]
        files = len(file_ids)
        by_doctype, by_day = rng.permutation(files), rng.permutation(files)
        bounds = np.cumsum([kept_count(files, share) for _, share in DOCTYPES])
        written, typed = [], []
        for position in range(files):
            kind = next(
                (name for (name, _), bound in zip(DOCTYPES, bounds, strict=True) if by_doctype[position] < bound),
                "report",
            )
            metadata = {"doctype": kind, "effective": (FIRST_DAY + timedelta(days=int(by_day[position]))).isoformat()}
            written.append(json.dumps(metadata))
            typed.append(json.dumps(indexed_metadata(metadata, types)))
        conn.execute(
            "UPDATE files AS f SET metadata = m.metadata, metadata_typed = m.typed, metadata_revision = 1"
            " FROM unnest(%s::uuid[], %s::jsonb[], %s::jsonb[]) AS m(file_id, metadata, typed)"
            " WHERE f.tenant_id = %s AND f.file_id = m.file_id",
            (file_ids, written, typed, tenant),
        )
    return files


# --- queries and the truth ------------------------------------------------------------------------------


def tenant_queries(corpus: Corpus, rank: int, count: int, rng: np.random.Generator) -> list[BenchQuery]:
    """Queries of one tenant over all its collections, drawn as bench/search_corpus.make_queries draws them."""
    from shared.domain.stopwords import ENGLISH_STOPWORDS

    starts = np.concatenate([[0], np.cumsum(corpus.sizes)])
    queries: list[BenchQuery] = []
    texts: set[str] = set()
    while len(queries) < count:
        off_domain = bool(rng.random() < OFF_DOMAIN_SHARE)
        chunk = int(
            rng.integers(0, len(corpus.tenant_of)) if off_domain else rng.integers(starts[rank], starts[rank + 1])
        )
        if off_domain and corpus.tenant_of[chunk] == rank:
            continue
        own = corpus.words[corpus.offsets[chunk] : corpus.offsets[chunk + 1]]
        text = " ".join(corpus.vocabulary[w] for w in rng.choice(own, size=WORDS_PER_QUERY, replace=False))
        if text in texts or not [w for w in text.split() if w not in ENGLISH_STOPWORDS]:
            continue
        texts.add(text)
        vector = unit_rows(corpus.vectors[chunk : chunk + 1] + gaussian(rng, 1, QUERY_NOISE))[0]
        queries.append(
            BenchQuery(
                tenant=corpus.tenant(rank),
                bucket=corpus.bucket(rank),
                readable=frozenset(corpus.collections[rank]),
                wanted=None,
                text=text,
                vector=tuple(float(value) for value in vector),
                off_domain=off_domain,
            )
        )
    return queries


def independent_condition(raw: dict[str, Any], params: dict[str, Any]) -> str:
    """The bench's filters as SQL of this file's own over the metadata as written (not metadata_sql's)."""
    ((operator, body),) = raw.items()
    params["truth_value"] = body["value"]
    if operator == "equals":
        return "f.metadata->>'doctype' = %(truth_value)s"
    assert operator == "greaterThanOrEquals"
    return "(f.metadata->>'effective')::date >= %(truth_value)s::date"


_TRUTH = """
WITH kept AS MATERIALIZED (
  SELECT c.chunk_id, c.embedding FROM knowledge_chunks AS c
  JOIN files AS f ON f.tenant_id = c.tenant_id AND f.file_id = c.file_id
  WHERE c.tenant_id = %(tenant)s AND c.subjects && %(collections)s AND c.embedding_model = %(model)s AND {condition}
)
SELECT chunk_id, embedding <=> %(embedding)s::vector AS distance FROM kept ORDER BY distance, chunk_id {limit}
"""


def truth(database: Database, query: BenchQuery, raw: dict[str, Any] | None, limit: int | None) -> list[str]:
    """The exact nearest kept chunks (all of them with no limit), through the application role (RLS applies)."""
    from pgvector import Vector

    params: dict[str, Any] = {
        "tenant": query.tenant,
        "collections": sorted(query.searchable),
        "model": FAKE_MODEL,
        "embedding": Vector(list(query.vector)),
    }
    condition = independent_condition(raw, params) if raw else "true"
    statement = _TRUTH.format(condition=condition, limit="LIMIT %(limit)s" if limit else "")
    params["limit"] = limit
    with database.tenant_transaction(query.tenant) as conn:
        return [row[0] for row in conn.execute(statement, params).fetchall()]


# --- measuring ------------------------------------------------------------------------------------------


def keyword_plan(database: Database, query: BenchQuery, filters: Any, tuning: Any) -> dict[str, Any]:
    """EXPLAIN ANALYZE of the keyword lane's statement as the adapter builds it: its time and how many chunk rows
    the filter's join read."""
    from bench.search import plan_nodes
    from shared.adapters.postgres import keyword_lane
    from shared.adapters.postgres.search_filters import filter_sql

    params: dict[str, Any] = {
        "tenant": query.tenant,
        "collections": sorted(query.searchable),
        "query": query.text,
        "stopwords": keyword_lane.STOPWORDS,
        "limit": tuning.candidates,
        "k1": tuning.bm25_k1,
        "b": tuning.bm25_b,
        "context_weight": tuning.context_weight,
    }
    conditions = filter_sql(filters, params, chunk="c.")
    join = f"JOIN knowledge_chunks AS c ON c.tenant_id = %(tenant)s AND c.chunk_id = scored.chunk_id{conditions}"
    statement = keyword_lane.KEYWORD_SEARCH.format(join=join if conditions else "")
    with database.tenant_transaction(query.tenant) as conn:
        row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", params).fetchone()
    assert row is not None
    document = (row[0] if isinstance(row[0], list) else json.loads(row[0]))[0]
    chunk_rows = sum(
        int(node.get("Actual Rows", 0)) * int(node.get("Actual Loops", 1))
        for node in plan_nodes(document["Plan"])
        if node.get("Relation Name") == "knowledge_chunks" or str(node.get("Index Name", "")) == "knowledge_chunks_pkey"
    )
    return {"execution_ms": round(document.get("Execution Time", 0.0), 2), "chunk_rows_read": chunk_rows}


def timed_runs(actions: dict[str, Callable[[int], Any]], count: int) -> dict[str, dict[str, list[float]]]:
    """Each action over every query index, RUNS times interleaved: p50 and p95 per run."""
    out: dict[str, dict[str, list[float]]] = {name: {"p50": [], "p95": []} for name in actions}
    for _ in range(RUNS):
        for name, action in actions.items():
            samples = [timed_ms(partial(action, index))[0] for index in range(count)]
            out[name]["p50"].append(percentile(samples, 0.5))
            out[name]["p95"].append(percentile(samples, 0.95))
    return out


def median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 2)


def filter_figures(
    container: Any, retrieval: Any, queries: Sequence[BenchQuery], raw: dict[str, Any] | None
) -> dict[str, Any]:
    """Latency of the hybrid search and each lane, recall of the vector lane, leaks and path, under `raw`."""
    from shared.adapters.postgres.vector_lane import EXACT_SCAN_ROWS, exact_query
    from shared.domain.auth import Principal
    from shared.domain.metadata_filter import MetadataFilter
    from shared.domain.search import SearchFilters, SearchQuery

    database, tuning = container.database, retrieval.tuning
    filters = SearchFilters(where=MetadataFilter.parse(raw)) if raw else SearchFilters()
    principal = Principal(tenant_id=queries[0].tenant, subject="bench", collections=queries[0].readable)
    searches = [SearchQuery(text=q.text, filters=filters) for q in queries]

    def hybrid(index: int) -> Any:
        return retrieval.search(principal, searches[index])

    def vector(index: int) -> Any:
        q = queries[index]
        return container.vector_index.nearest(
            q.tenant, q.searchable, q.vector, embedding_model=FAKE_MODEL, limit=tuning.candidates, filters=filters
        )

    def keyword(index: int) -> Any:
        q = queries[index]
        return container.keyword_index.search(
            q.tenant, q.searchable, q.text, limit=tuning.candidates, filters=filters, k1=tuning.bm25_k1, b=tuning.bm25_b
        )

    timings = timed_runs({"hybrid": hybrid, "vector": vector, "keyword": keyword}, len(queries))
    kept = set(truth(database, queries[0], raw, None))
    recalls, short, leaked = [], 0, 0
    outcomes: dict[str, int] = {}
    for index, query in enumerate(queries):
        found = [hit.chunk_id for hit in vector(index)]
        expected = truth(database, query, raw, tuning.candidates)
        recalls.append(recall_at_10(found, expected))
        short += len(found) < len(expected)
        answer = hybrid(index)
        returned = found + [hit.chunk_id for hit in getattr(answer, "hits", [])]
        leaked += sum(chunk not in kept for chunk in returned)
        # A search whose kept chunks are all far from the query and share none of its words finds nothing above
        # the floors (below_floor, or no_match): the filter keeps too little near the query, by design.
        outcome = str(getattr(answer, "outcome", "hits"))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    path = "no filter: HNSW"
    if raw:
        statement, params = exact_query(
            queries[0].tenant,
            queries[0].searchable,
            queries[0].vector,
            embedding_model=FAKE_MODEL,
            limit=1,
            filters=filters,
        )
        with database.tenant_transaction(queries[0].tenant) as conn:
            row = conn.execute(statement, params).fetchone()
        seen = int(row[2]) if row else 0
        path = f"exact scan ({seen} kept <= {EXACT_SCAN_ROWS})" if seen <= EXACT_SCAN_ROWS else "filtered HNSW"
    return {
        "filter": raw,
        "kept_chunks": len(kept),
        "timings": timings,
        "recall": statistics.fmean(recalls),
        "worst_recall": min(recalls),
        "short_results": short,
        "chunks_the_filter_drops_returned": leaked,
        "hybrid_outcomes": outcomes,
        "keyword_lane_explain_analyze_first_query": keyword_plan(database, queries[0], filters, tuning),
        "path": path,
    }


def slim_exact(statement: str) -> str:
    """The adapter's exact scan with each distance computed inside the CTE, which then holds (chunk id, distance)
    instead of every kept embedding (1.5 KB each at 384 dimensions: past work_mem, the CTE spills to disk)."""
    slim = statement.replace(
        "SELECT c.chunk_id, c.embedding FROM",
        "SELECT c.chunk_id, c.embedding <=> %(embedding)s::vector AS distance FROM",
    ).replace("SELECT chunk_id, embedding <=> %(embedding)s::vector AS distance,", "SELECT chunk_id, distance,")
    assert slim.count("distance") == statement.count("distance") + 1, "the adapter's exact scan changed shape"
    return slim


def path_figures(
    database: Database, queries: Sequence[BenchQuery], files: int, candidates: int
) -> list[dict[str, Any]]:
    """Each path alone under date ranges keeping SWEEP shares: the exact scan with no row bound (as the adapter
    writes it, and slim), the HNSW scan, and past EXACT_SCAN_ROWS what the adapter's bounded probe costs before
    it falls back to HNSW."""
    from shared.adapters.postgres.vector_lane import EXACT_SCAN_ROWS, exact_query, nearest_query, vector_scan_settings
    from shared.domain.metadata_filter import MetadataFilter
    from shared.domain.search import SearchFilters

    settings = vector_scan_settings()

    def exact(filters: SearchFilters, rows: int | None, slim: bool, index: int) -> list[str]:
        q = queries[index]
        statement, params = exact_query(
            q.tenant, q.searchable, q.vector, embedding_model=FAKE_MODEL, limit=candidates, filters=filters
        )
        if rows is not None:
            params["exact_rows"] = rows
        with database.tenant_transaction(q.tenant) as conn:
            return [row[0] for row in conn.execute(slim_exact(statement) if slim else statement, params).fetchall()]

    def hnsw(filters: SearchFilters, index: int) -> list[str]:
        q = queries[index]
        statement, params = nearest_query(
            q.tenant, q.searchable, q.vector, embedding_model=FAKE_MODEL, limit=candidates, filters=filters
        )
        with database.tenant_transaction(q.tenant) as conn:
            conn.execute(
                "SELECT " + ", ".join("set_config(%s, %s, true)" for _ in settings),
                [value for setting in settings.items() for value in setting],
            )
            return [row[0] for row in conn.execute(statement, params).fetchall()]

    sweep = []
    for share in SWEEP:
        raw = {"greaterThanOrEquals": {"key": "effective", "value": range_start(files, share).isoformat()}}
        filters = SearchFilters(where=MetadataFilter.parse(raw))
        kept = len(truth(database, queries[0], raw, None))
        paths: dict[str, Callable[[int], list[str]]] = {
            "exact": partial(exact, filters, 10**9, False),  # no bound: every kept chunk's distance
            "exact_slim": partial(exact, filters, 10**9, True),
            "hnsw": partial(hnsw, filters),
        }
        probes: dict[str, Callable[[int], list[str]]] = {}
        if kept > EXACT_SCAN_ROWS:  # the adapter reads EXACT_SCAN_ROWS + 1 rows, then falls back
            probes = {"probe": partial(exact, filters, None, False), "probe_slim": partial(exact, filters, None, True)}
        timings = timed_runs({**paths, **probes}, len(queries))
        truths = [truth(database, q, raw, candidates) for q in queries]
        entry: dict[str, Any] = {"share": share, "kept_chunks": kept}
        for name, action in paths.items():
            found = [action(index) for index in range(len(queries))]
            entry[name] = {
                "p50_ms": median(timings[name]["p50"]),
                "p95_ms": median(timings[name]["p95"]),
                "recall": round(statistics.fmean(recall_at_10(f, t) for f, t in zip(found, truths, strict=True)), 4),
                "short_results": sum(len(f) < len(t) for f, t in zip(found, truths, strict=True)),
            }
        for name in probes:
            entry[name] = {"p50_ms": median(timings[name]["p50"]), "p95_ms": median(timings[name]["p95"])}
        sweep.append(entry)
    return sweep


def crossover(sweep: Sequence[dict[str, Any]], exact: str = "exact") -> int:
    """The most kept chunks at which the exact scan is still as fast as the HNSW scan at p95, or the HNSW scan
    still misses the recall target (the exact scan's answer is then worth its time)."""
    better = [
        e["kept_chunks"]
        for e in sweep
        if e[exact]["p95_ms"] <= e["hnsw"]["p95_ms"] or e["hnsw"]["recall"] < RECALL_TARGET
    ]
    return max(better, default=0)


def figures(result: Result) -> list[dict[str, Any]]:
    from shared.adapters.postgres.vector_lane import EXACT_SCAN_ROWS, vector_scan_settings
    from shared.bootstrap import Container
    from shared.config import Settings
    from shared.observability import logger

    logger.setLevel("WARNING")
    rng = np.random.default_rng(SEED)
    corpus = make_corpus(CHUNKS, rng)
    queries = tenant_queries(corpus, FILTERED_RANK, QUERIES, rng)
    tenant = corpus.tenant(FILTERED_RANK)
    out: list[dict[str, Any]] = []
    with embedded_server() as (owner_url, app_url):
        container = Container(Settings(runtime="local", database_url=app_url))
        try:
            begun = time.perf_counter()
            definition = drop_hnsw(owner_url)
            write_versions(container.database, corpus, version_plan(corpus))
            files = write_metadata(container.database, tenant, rng)
            build_hnsw(owner_url, definition)
            vacuum_analyze(owner_url)
            load_seconds = time.perf_counter() - begun
            retrieval = bench_retrieval(container, queries)
            cases: list[tuple[str, dict[str, Any] | None]] = [("unfiltered", None)]
            cases += [(share_label(s), {"equals": {"key": k, "value": v}}) for k, v, s in HEADLINE]
            cases.append(
                (
                    f"{share_label(RANGE_SHARE)}_date_range",
                    {"greaterThanOrEquals": {"key": "effective", "value": range_start(files, RANGE_SHARE).isoformat()}},
                )
            )
            measured = {label: filter_figures(container, retrieval, queries, raw) for label, raw in cases}
            sweep = path_figures(container.database, queries, files, retrieval.tuning.candidates)
        finally:
            container.database.close()
    base = measured["unfiltered"]["timings"]["hybrid"]
    common = {
        "tenant": tenant,
        "tenant_chunks": corpus.sizes[FILTERED_RANK],
        "tenant_files": files,
        "table_chunks": CHUNKS,
        "queries": len(queries),
        "runs_of": f"{RUNS} runs of {len(queries)} queries; median of the runs",
    }
    for label, figure in measured.items():
        timings = figure["timings"]
        lanes = {
            f"{lane}_{stat}_ms": median(timings[lane][stat])
            for lane in ("vector", "keyword")
            for stat in ("p50", "p95")
        }
        data = {k: v for k, v in figure.items() if k not in ("timings", "recall", "worst_recall")} | lanes | common
        for stat in ("p50", "p95"):
            entry = result(
                f"search.filtered.{stat}_ms.sel_{label}"
                if figure["filter"]
                else f"search.filtered.{stat}_ms.unfiltered",
                timings["hybrid"][stat],
                "ms",
                **data,
            )
            if figure["filter"]:
                entry["baseline"] = median(base[stat])
                entry["ratio"] = round(entry["value"] / entry["baseline"], 2)
            if stat == "p95":
                entry["data"].update(target_ms=HYBRID_P95_TARGET_MS, met=entry["value"] < HYBRID_P95_TARGET_MS)
            out.append(entry)
        out.append(
            result(
                f"search.filtered.recall_at_10.sel_{label}"
                if figure["filter"]
                else "search.filtered.recall_at_10.unfiltered",
                [figure["recall"]],
                "recall",
                target=RECALL_TARGET,
                met=figure["recall"] >= RECALL_TARGET,
                worst_query=round(figure["worst_recall"], 2),
                exact="every kept chunk's distance, the filter as SQL of the bench's own over files.metadata, no index",
                lane_limit=retrieval.tuning.candidates,
                path=figure["path"],
                kept_chunks=figure["kept_chunks"],
            )
        )
    rows = [
        f"{e['share']:.1%} ({e['kept_chunks']}): exact {e['exact']['p95_ms']} (slim {e['exact_slim']['p95_ms']}) ms,"
        f" hnsw {e['hnsw']['p95_ms']} ms recall {e['hnsw']['recall']}"
        for e in sweep
    ]
    out.append(
        result(
            "search.filtered.exact_scan_crossover_rows",
            [float(crossover(sweep))],
            "rows",
            exact_scan_rows_now=EXACT_SCAN_ROWS,
            crossover_with_the_slim_exact_scan=crossover(sweep, "exact_slim"),
            slim="the exact scan with each distance computed inside the CTE (bench/filtered_search.py:slim_exact)",
            rule="the most kept chunks where the exact scan's p95 is at most the HNSW scan's, or HNSW recall < target",
            sweep=sweep,
            hnsw_settings=vector_scan_settings(),
            table_note="; ".join(rows),
            load_seconds=round(load_seconds, 1),
            **common,
        )
    )
    return out


def main() -> int:
    """Only these figures: the table on stdout, and .bench/results.json's `search.filtered.*` entries replaced."""
    from bench.run import RESULTS, result, table

    out = figures(result)
    print(table(out))
    kept = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else []
    kept = [entry for entry in kept if not str(entry.get("name", "")).startswith("search.filtered.")]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(kept + out, indent=2), encoding="utf-8")
    print(f"\nwritten to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
