"""`quire eval`: a BEIR dataset through the real chunk → embed → index path, then every lane measured.

The corpus goes into a scratch tenant (removed afterwards) as real file versions, chunked by the
structural chunker in the embedding model's tokens, embedded in full batches, and written by the
same KnowledgeStore the pipeline uses. Queries run through the same lanes and fusion as `/v1/search`;
chunk rankings become document rankings by each document's best chunk. Tune only on the train split, and
there only on its tune queries: every fifth query id (sorted) is held out, to show what generalises.
"""

import json
import statistics
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.bootstrap import Container
from shared.domain.auth import Role, with_role
from shared.domain.citations import excerpt_is_at_location
from shared.domain.document import Block, BlockCollector, BlockKind, ExtractedDocument, ExtractionLimits, Location
from shared.domain.files import NewVersion, ProcessingState
from shared.domain.knowledge import RankedChunk
from shared.domain.metrics import ndcg_at, recall_at, reciprocal_rank_at
from shared.domain.search import Found, Fusion, RetrievalTuning, SearchFilters, SearchMode, SearchQuery, fuse
from shared.domain.stopwords import ENGLISH_STOPWORDS
from shared.domain.uploads import storage_key
from shared.services.indexing import IndexTarget

COLLECTION = "beir"
MODES = (SearchMode.KEYWORD, SearchMode.SEMANTIC, SearchMode.HYBRID)
DEPTH = 100  # documents ranked per query (recall@100)
# The rows of the report: each lane alone, and hybrid before and after issue 18. Before is what search did until
# then: the keyword lane unstemmed (the `simple` configuration, docs/adr/0009), fused with the same semantic lane by
# reciprocal rank, k 10 (docs/adr/0004). After is the product's lanes with the configured fusion (docs/adr/0008).
KEYWORD_BEFORE = "keyword-before"
BEFORE = "hybrid-before"
ROWS = (KEYWORD_BEFORE, "keyword", "semantic", BEFORE, "hybrid")
TUNE, HELD_OUT = "tune", "held-out"

# The keyword lane as it was before migration 0023, for the report's before rows only: BM25 over `simple` postings
# built once per run in a temporary table (dropped with its transaction) from the stored chunks, with the lane's
# formula, parameters and query stopwords.
_BEFORE_POSTINGS = """
CREATE TEMPORARY TABLE before_postings ON COMMIT DROP AS
SELECT c.chunk_id, t.lexeme AS term, cardinality(t.positions) AS frequency, l.length AS chunk_length
FROM knowledge_chunks AS c
CROSS JOIN LATERAL (SELECT coalesce(sum(array_length(u.positions, 1)), 0) AS length
                    FROM unnest(to_tsvector('simple', c.content)) AS u) AS l
CROSS JOIN LATERAL unnest(to_tsvector('simple', c.content)) AS t
WHERE c.tenant_id = %(tenant)s AND c.collection_id = %(collection)s
"""
_BEFORE_STATISTICS = """
SELECT count(*), coalesce(sum(l.length), 0) FROM knowledge_chunks AS c
CROSS JOIN LATERAL (SELECT coalesce(sum(array_length(u.positions, 1)), 0) AS length
                    FROM unnest(to_tsvector('simple', c.content)) AS u) AS l
WHERE c.tenant_id = %(tenant)s AND c.collection_id = %(collection)s
"""
_BEFORE_SEARCH = """
WITH query_terms AS MATERIALIZED (
  SELECT coalesce(array_agg(DISTINCT t.lexeme), '{}') AS lexemes
  FROM unnest(to_tsvector('simple', %(query)s)) AS t WHERE t.lexeme <> ALL(%(stopwords)s)
), weights AS MATERIALIZED (
  SELECT term, ln(1 + (%(chunks)s - count(*) + 0.5) / (count(*) + 0.5)) AS idf FROM before_postings
  WHERE term = ANY((SELECT lexemes FROM query_terms)::text[]) GROUP BY term
)
SELECT p.chunk_id, sum(w.idf * (p.frequency * (%(k1)s + 1))
                       / (p.frequency + %(k1)s * (1 - %(b)s + %(b)s * p.chunk_length / %(average)s))) AS score
FROM before_postings AS p JOIN weights AS w USING (term)
GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %(limit)s
"""


def held_out(query_ids: Iterable[str]) -> set[str]:
    """Every fifth query id in sorted order (the 5th, 10th, ...): never tuned on, reported beside the rest."""
    return set(sorted(query_ids)[4::5])


@dataclass
class Dataset:
    corpus: dict[str, tuple[str, str]]  # id → (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(directory: Path, split: str) -> Dataset:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv, as BEIR lays them out."""
    qrels_path = directory / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        raise FileNotFoundError(f"{qrels_path} does not exist: is --split right?")
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(qrels_path.read_text(encoding="utf-8").splitlines()):
        parts = line.split("\t")
        if number == 0 and not parts[-1].strip().lstrip("-").isdigit():
            continue  # the header line
        if len(parts) >= 3:
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    corpus = {}
    for line in (directory / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        corpus[str(record["_id"])] = (record.get("title") or "", record.get("text") or "")
    queries = {}
    for line in (directory / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if str(record["_id"]) in qrels:
            queries[str(record["_id"])] = record["text"]
    return Dataset(corpus=corpus, queries=queries, qrels=qrels)


def as_document(title: str, text: str) -> ExtractedDocument:
    """A corpus entry as the text parsers would give it: the title a heading (so it prefixes every
    chunk), the abstract a paragraph, each with its line span in "title\\n\\ntext"."""
    collector = BlockCollector(ExtractionLimits())
    if title.strip():
        collector.add(
            Block(kind=BlockKind.HEADING, text=title.strip(), level=1, location=Location(line_start=1, line_end=1))
        )
    if text.strip():
        collector.add(Block(kind=BlockKind.PARAGRAPH, text=text.strip(), location=Location(line_start=3, line_end=3)))
    return collector.document("text/plain")


@dataclass
class EvalReport:
    dataset: str
    split: str
    documents: int
    chunks: int
    queries: int
    embedding_model: str
    index_seconds: float
    chunks_per_second: float
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    # row → "tune" / "held-out" → metric: the same figures over the tune queries and the held-out ones.
    splits: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    held_out_queries: int = 0  # of `queries`
    fusion: str = ""  # the configured fusion (the "hybrid" row), e.g. "zscore per document, vector weight 0.5"
    latency_ms: dict[str, float] = field(default_factory=dict)
    citations_checked: int = 0
    citations_failed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


class Evaluation:
    def __init__(
        self, container: Container, *, tenant: str | None = None, progress: Callable[[str], None] = lambda _: None
    ) -> None:
        self._container = container
        self._progress = progress
        self._reused = tenant is not None
        self.tenant = tenant or f"eval-{uuid.uuid4().hex[:10]}"
        self._doc_of: dict[str, str] = {}  # version id → corpus id

    def ingest(self, dataset: Dataset, batch: int = 256) -> tuple[int, float]:
        """Every corpus entry as an indexed file version; returns (chunks, seconds)."""
        metadata = self._container.file_metadata
        indexer = self._container.indexer
        begun = time.monotonic()
        items: list[tuple[IndexTarget, ExtractedDocument, int | None]] = []
        for number, (doc_id, (title, text)) in enumerate(dataset.corpus.items(), start=1):
            items.append((self._version(metadata, doc_id), as_document(title, text), None))
            if len(items) == batch or number == len(dataset.corpus):
                indexer.index_many([(target, document, self._claim(metadata, target)) for target, document, _ in items])
                items = []
                self._progress(f"indexed {number}/{len(dataset.corpus)} documents")
        seconds = time.monotonic() - begun
        with self._container.database.tenant_transaction(self.tenant) as conn:
            row = conn.execute("SELECT count(*) FROM knowledge_chunks WHERE tenant_id = %s", (self.tenant,)).fetchone()
        return int(row[0]) if row else 0, seconds

    def _version(self, metadata: Any, doc_id: str) -> IndexTarget:
        file_id, version_id = uuid.uuid4(), uuid.uuid4()
        filename = f"{doc_id}.txt"
        metadata.create_version(
            NewVersion(
                tenant_id=self.tenant,
                file_id=file_id,
                version_id=version_id,
                collection_id=COLLECTION,
                filename=filename,
                media_type="text/plain",
                declared_byte_size=1,
                storage_key=storage_key(self.tenant, file_id, version_id),
                created_by="quire-eval",
            ),
            new_file=True,
        )
        metadata.mark_stored(self.tenant, version_id, byte_size=1, storage_version_id=None)
        return IndexTarget(
            tenant_id=self.tenant,
            file_id=file_id,
            version_id=version_id,
            collection_id=COLLECTION,
            filename=filename,
            media_type="text/plain",
            uploaded_at=datetime.now(UTC),
        )

    def _claim(self, metadata: Any, target: IndexTarget) -> int:
        attempt: int = metadata.queue_processing(self.tenant, target.version_id, stale_before=datetime.now(UTC))
        metadata.move_processing(
            self.tenant,
            target.version_id,
            attempt=attempt,
            to=ProcessingState.INDEXING,
            expected=[ProcessingState.QUEUED],
        )
        return attempt

    def rankings(self, dataset: Dataset) -> Iterator[tuple[str, str, list[str], float]]:
        """(query, row, documents best first, milliseconds) for every query and row of ROWS."""
        retrieval = self._container.retrieval
        collections = frozenset({COLLECTION})
        candidates = 3 * DEPTH  # chunks, so that a hundred distinct documents remain after grouping
        with self._unstemmed_lane() as unstemmed:
            for query_id, text in dataset.queries.items():
                begun = time.perf_counter()
                keyword_before = unstemmed(text, candidates)
                keyword_before_ms = (time.perf_counter() - begun) * 1000
                yield (
                    query_id,
                    KEYWORD_BEFORE,
                    self.documents_of([hit.chunk_id for hit in keyword_before]),
                    keyword_before_ms,
                )
                for mode in MODES:
                    begun = time.perf_counter()
                    lanes = retrieval.lanes(
                        self.tenant, collections, SearchQuery(text=text, mode=mode), candidates=candidates
                    )
                    elapsed = (time.perf_counter() - begun) * 1000
                    if mode is SearchMode.KEYWORD:
                        yield query_id, mode.value, self.documents_of([hit.chunk_id for hit in lanes.keyword]), elapsed
                    elif mode is SearchMode.SEMANTIC:
                        yield query_id, mode.value, self.documents_of([hit.chunk_id for hit in lanes.vector]), elapsed
                    else:
                        for row, keyword, tuning, spent in (
                            (BEFORE, keyword_before, before(retrieval.tuning), keyword_before_ms),
                            ("hybrid", lanes.keyword, retrieval.tuning_for(text), 0.0),
                        ):
                            begun = time.perf_counter()
                            fused = fuse([lanes.vector, keyword], tuning)
                            fusing = (time.perf_counter() - begun) * 1000
                            ranking = self.documents_of([chunk_id for chunk_id, _ in fused])
                            yield query_id, row, ranking, elapsed + spent + fusing

    @contextmanager
    def _unstemmed_lane(self) -> Iterator[Callable[[str, int], list[RankedChunk]]]:
        """The keyword lane as it was before migration 0023 (see _BEFORE_POSTINGS), over this run's tenant."""
        tuning = self._container.retrieval.tuning
        where = {"tenant": self.tenant, "collection": COLLECTION}
        with self._container.database.tenant_transaction(self.tenant) as conn:
            conn.execute(_BEFORE_POSTINGS, where)
            conn.execute("CREATE INDEX ON before_postings (term)")
            conn.execute("ANALYZE before_postings")
            row = conn.execute(_BEFORE_STATISTICS, where).fetchone()
            chunks, total = (int(row[0]), int(row[1])) if row else (0, 0)
            fixed = {
                "chunks": max(chunks, 1),
                "average": max(total / chunks if chunks else 1.0, 1.0),
                "stopwords": sorted(ENGLISH_STOPWORDS),
                "k1": tuning.bm25_k1,
                "b": tuning.bm25_b,
            }

            def search(text: str, limit: int) -> list[RankedChunk]:
                rows = conn.execute(_BEFORE_SEARCH, {**fixed, "query": text, "limit": limit}).fetchall()
                return [
                    RankedChunk(chunk_id=chunk_id, rank=rank, score=float(score))
                    for rank, (chunk_id, score) in enumerate(rows, start=1)
                ]

            yield search

    def documents_of(self, chunk_ids: list[str]) -> list[str]:
        """Documents in the order of their best chunk in `chunk_ids`, at most DEPTH."""
        seen: dict[str, None] = {}
        for chunk_id in chunk_ids:
            seen.setdefault(self._doc_of[chunk_id.split(":")[0]], None)
        return list(seen)[:DEPTH]

    def check_citations(self, dataset: Dataset, sample: int = 50) -> tuple[int, int]:
        """Run the product's search for `sample` queries; every hit's citation must point at text that
        contains its excerpt. Returns (checked, failed)."""
        principal = with_role(self.tenant, "quire-eval", {COLLECTION}, Role.WRITE)
        checked = failed = 0
        for text in list(dataset.queries.values())[:sample]:
            outcome = self._container.retrieval.search(principal, SearchQuery(text=text, limit=10))
            if not isinstance(outcome, Found):
                continue
            for hit in outcome.hits:
                title, body = dataset.corpus[self._doc_of[hit.citation.version_id]]
                checked += 1
                failed += not excerpt_is_at_location(as_document(title, body), hit.citation)
        return checked, failed

    def ingested(self, dataset: Dataset) -> tuple[int, float]:
        """The corpus indexed (or, reusing a tenant, found): its chunks and the seconds it took."""
        if self._reused:
            with self._container.database.tenant_transaction(self.tenant) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM knowledge_chunks WHERE tenant_id = %s", (self.tenant,)
                ).fetchone()
            chunks, seconds = (int(row[0]) if row else 0), 0.0
        else:
            chunks, seconds = self.ingest(dataset)
        self._doc_of.update(self._version_documents())
        return chunks, seconds

    def sweep(
        self,
        dataset: Dataset,
        rrf_ks: tuple[int, ...] = (5, 10, 20, 30, 60),
        vector_weights: tuple[float, ...] = (0.45, 0.5, 0.55, 0.6),
        bm25: tuple[tuple[float, float, float], ...] = (
            (0.9, 0.4, 1.0),
            (0.9, 0.6, 1.0),
            (1.2, 0.5, 1.0),
            (1.2, 0.75, 1.0),
            (1.5, 0.75, 1.0),
            (0.6, 0.6, 1.0),
            (0.9, 0.6, 0.5),
            (0.9, 0.6, 1.5),
            (0.9, 0.6, 2.0),
            (0.9, 0.6, 3.0),
        ),
    ) -> list[dict[str, float]]:
        """nDCG@10 of the keyword lane per (k1, b, context weight) and of hybrid per (k1, b, context weight, rrf
        k) and (k1, b, context weight, z-score vector weight), over the tune queries only (the held-out fifth
        is left out): the numbers the settings' defaults are chosen from."""
        self.ingested(dataset)
        hidden = held_out(dataset.queries)
        dataset = Dataset(
            corpus=dataset.corpus,
            queries={query_id: text for query_id, text in dataset.queries.items() if query_id not in hidden},
            qrels=dataset.qrels,
        )
        tuning = self._container.retrieval.tuning
        fusions = {f"rrf k={k}": tuning.model_copy(update={"fusion": Fusion.RRF, "rrf_k": k}) for k in rrf_ks} | {
            f"z w={weight}": tuning.model_copy(update={"fusion": Fusion.ZSCORE, "vector_weight": weight})
            for weight in vector_weights
        }
        retrieval = self._container.retrieval
        collections = frozenset({COLLECTION})
        semantic = {
            query_id: retrieval.lanes(
                self.tenant, collections, SearchQuery(text=text, mode=SearchMode.SEMANTIC), candidates=3 * DEPTH
            ).vector
            for query_id, text in dataset.queries.items()
        }
        rows = []
        for k1, b, context_weight in bm25:
            keyword = {
                query_id: self._container.keyword_index.search(
                    self.tenant,
                    collections,
                    text,
                    limit=3 * DEPTH,
                    filters=SearchFilters(),
                    k1=k1,
                    b=b,
                    context_weight=context_weight,
                )
                for query_id, text in dataset.queries.items()
            }
            row = {
                "k1": k1,
                "b": b,
                "context": context_weight,
                "keyword": self._mean_ndcg(dataset, {q: [h.chunk_id for h in hits] for q, hits in keyword.items()}),
            }
            for name, fusion in fusions.items():
                fused = {
                    query_id: [chunk_id for chunk_id, _ in fuse([semantic[query_id], keyword[query_id]], fusion)]
                    for query_id in dataset.queries
                }
                row[name] = self._mean_ndcg(dataset, fused)
            row["semantic"] = self._mean_ndcg(dataset, {q: [h.chunk_id for h in hits] for q, hits in semantic.items()})
            rows.append(row)
            self._progress(f"k1={k1} b={b} context={context_weight}: {row}")
        return rows

    def _mean_ndcg(self, dataset: Dataset, chunk_rankings: dict[str, list[str]]) -> float:
        return round(
            statistics.fmean(
                ndcg_at(self.documents_of(ranking), dataset.qrels[query_id], 10)
                for query_id, ranking in chunk_rankings.items()
            ),
            4,
        )

    def run(
        self,
        dataset: Dataset,
        *,
        name: str,
        split: str,
        citation_sample: int = 50,
        held: set[str] | None = None,
    ) -> EvalReport:
        """Every lane over `dataset`'s queries; `held` are the held-out ones (by default every fifth query id)."""
        chunks, seconds = self.ingested(dataset)
        hidden = held_out(dataset.queries) if held is None else held & set(dataset.queries)
        scores: dict[str, dict[str, dict[str, list[float]]]] = {row: {} for row in ROWS}  # row → split → metric
        latencies: dict[str, list[float]] = {row: [] for row in ROWS}
        for query_id, row, ranking, elapsed in self.rankings(dataset):
            relevant = dataset.qrels[query_id]
            measured = scores[row].setdefault(HELD_OUT if query_id in hidden else TUNE, {})
            measured.setdefault("ndcg@10", []).append(ndcg_at(ranking, relevant, 10))
            measured.setdefault("recall@10", []).append(recall_at(ranking, relevant, 10))
            measured.setdefault("recall@100", []).append(recall_at(ranking, relevant, 100))
            measured.setdefault("mrr@10", []).append(reciprocal_rank_at(ranking, relevant, 10))
            latencies[row].append(elapsed)
        checked, failed = self.check_citations(dataset, citation_sample)
        tuning = self._container.retrieval.tuning
        return EvalReport(
            dataset=name,
            split=split,
            documents=len(dataset.corpus),
            chunks=chunks,
            queries=len(dataset.queries),
            embedding_model=self._container.embedder.model_id,
            index_seconds=round(seconds, 1),
            chunks_per_second=round(chunks / seconds, 1) if seconds else 0.0,
            metrics={row: _means(list(splits.values())) for row, splits in scores.items()},
            splits={
                row: {split: _means([measured]) for split, measured in splits.items()} for row, splits in scores.items()
            },
            held_out_queries=len(hidden),
            fusion=describe(tuning),
            latency_ms={row: round(statistics.median(values), 2) for row, values in latencies.items()},
            citations_checked=checked,
            citations_failed=failed,
        )

    def _version_documents(self) -> dict[str, str]:
        """version id → corpus id (the filename is "<corpus id>.txt")."""
        with self._container.database.tenant_transaction(self.tenant) as conn:
            rows = conn.execute(
                "SELECT version_id::text, filename FROM file_versions WHERE tenant_id = %s", (self.tenant,)
            ).fetchall()
        return {version: filename.removesuffix(".txt") for version, filename in rows}

    def remove(self) -> None:
        """The scratch tenant's chunks go at once; its rows are swept as any deleted collection's are."""
        self._container.file_metadata.begin_delete_collection(self.tenant, COLLECTION)


def before(tuning: RetrievalTuning) -> RetrievalTuning:
    """The fusion the evaluation compares against: reciprocal rank, k 10 (what search did before 0008)."""
    return tuning.model_copy(update={"fusion": Fusion.RRF, "rrf_k": 10})


def describe(tuning: RetrievalTuning) -> str:
    if tuning.fusion is Fusion.RRF:
        return f"rrf, k {tuning.rrf_k}"
    return f"zscore per document, vector weight {tuning.vector_weight}"


def _means(groups: list[dict[str, list[float]]]) -> dict[str, float]:
    """Each metric's mean over every query of `groups` (split → metric → per-query values)."""
    metrics = {metric for group in groups for metric in group}
    return {
        metric: round(statistics.fmean(value for group in groups for value in group.get(metric, [])), 4)
        for metric in sorted(metrics, key=["ndcg@10", "recall@10", "recall@100", "mrr@10"].index)
    }


def print_report(report: EvalReport) -> None:
    print(
        f"{report.dataset} ({report.split} split): {report.documents} documents, {report.chunks} chunks,"
        f" {report.queries} queries; {report.embedding_model}"
    )
    print(f"indexed in {report.index_seconds} s ({report.chunks_per_second} chunks/s end to end)")
    print(f"{'mode':<14} {'nDCG@10':>8} {'R@10':>8} {'R@100':>8} {'MRR@10':>8} {'p50 ms':>8}")
    labels = {
        KEYWORD_BEFORE: "  before: unstemmed (simple)",
        "keyword": "  after: stemmed (english)",
        BEFORE: "  before: unstemmed keyword lane, rrf, k 10",
        "hybrid": f"  after: stemmed keyword lane, {report.fusion}",
    }
    for mode, values in report.metrics.items():
        print(
            f"{mode:<14} {values['ndcg@10']:>8.4f} {values['recall@10']:>8.4f} {values['recall@100']:>8.4f}"
            f" {values['mrr@10']:>8.4f} {report.latency_ms[mode]:>8.2f}{labels.get(mode, '')}"
        )
    tune, held = (next(iter(report.splits.values()), {}).get(split) for split in (TUNE, HELD_OUT))
    if tune and held:
        print(
            f"nDCG@10 on the tune queries ({report.queries - report.held_out_queries}) / held out (every 5th query"
            f" id, {report.held_out_queries}; never tuned on):"
        )
        for row in (BEFORE, "hybrid"):
            split = report.splits.get(row, {})
            if TUNE in split and HELD_OUT in split:
                print(f"{row:<14} {split[TUNE]['ndcg@10']:>8.4f} {split[HELD_OUT]['ndcg@10']:>8.4f}")
    print(
        f"citations: {report.citations_checked} checked against their documents,"
        f" {report.citations_failed} did not contain their excerpt"
    )


def print_sweep(rows: list[dict[str, float]]) -> None:
    columns = list(rows[0])
    print("  ".join(f"{column:>11}" for column in columns))
    for row in rows:
        print(
            "  ".join(
                f"{row[column]:>11.4f}" if column not in ("k1", "b") else f"{row[column]:>11}" for column in columns
            )
        )
