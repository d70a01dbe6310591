"""Grounded answers at scale: evidence-only (extractive) answers through `AnswerService.answer`, over the search
bench's loaded database (bench/search.py calls `figures` once its 100,000 chunks are in; `python -m
bench.answers` loads a database of its own and runs only these figures).

- Retrieval is the search bench's own (`bench_retrieval`): the composition root's Retrieval with the FAKE query
  embedder, so both lanes see the synthetic query vectors the corpus was drawn for.
- The sentence ranking costs what it costs for real: AnswerService's own embedder is the local MiniLM
  (`OnnxMiniLmEmbedder`), which embeds the question and every candidate sentence of the selected
  evidence. The two embedders are separate ports of separate services, so no mixed stand-in is needed, and the
  question is compared with the sentences in MiniLM's space (a synthetic question vector against MiniLM
  sentence vectors would put every sentence under the floor). The corpus texts are in sentences of 12-28
  words (bench/search_corpus.py), so `sentences_of` finds about six per chunk, as in prose.
- Cold asks go through a service whose cache lifetime is negative: the cache is consulted (its query runs)
  and never hits, so every run asks the same questions cold; its sentence vector cache
  (shared/services/sentence_vectors.py) is emptied before each run's cold asks, so they embed every sentence.
  The same questions asked once more with those vectors kept give the warm figures (the answer cache still
  missing): what an answer costs when an earlier one quoted the same sentences. The cache-hit figure asks them
  again through a service with the default lifetime: the cold runs stored them under the same key.
- The baseline of each figure is hybrid search (`Retrieval.search`) of the same questions, timed in the same
  runs just before the answers.

QUIRE_BENCH_ANSWER_QUERIES (default 60) is how many of the search queries are asked, taken at an even stride
so every tenant-size bucket is in.
"""

import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from bench.search_corpus import WORDS_PER_SENTENCE, BenchQuery
from shared.domain.capabilities import CapabilityStatus
from shared.domain.similarity import SimilarityScale
from shared.domain.usage import Usage
from shared.ports import EmbeddingProvider

ANSWER_QUERIES = int(os.environ.get("QUIRE_BENCH_ANSWER_QUERIES", "60"))
RUNS = 3
STAGES = ("authorize", "cache", "retrieve", "select", "extract", "assemble", "persist")
OUTSIDE = "outside the stages"

Result = Callable[..., dict[str, Any]]


class CountingEmbedder(EmbeddingProvider):
    """The real embedder, unchanged, recording how many texts each `embed` call was given (the sentence
    ranking's question plus candidate sentences): the bench reports it beside the stage times."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self._inner = inner
        self.calls: list[int] = []
        self.texts: list[str] = []  # every text embedded, in order: its word pieces are counted after the runs

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def max_tokens(self) -> int:
        return self._inner.max_tokens

    @property
    def languages(self) -> frozenset[str] | None:
        return self._inner.languages

    @property
    def similarity_scale(self) -> SimilarityScale:
        return self._inner.similarity_scale

    def capability(self) -> CapabilityStatus:
        return self._inner.capability()

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        self.texts.extend(texts)
        return self._inner.embed(texts)

    def usage(self, tokens: int) -> Usage:
        return self._inner.usage(tokens)

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(questions))
        self.texts.extend(questions)
        return self._inner.embed_queries(questions)


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed_ms(action: Callable[[], Any]) -> tuple[float, Any]:
    begun = time.perf_counter()
    value = action()
    return (time.perf_counter() - begun) * 1000, value


def asked(queries: Sequence[BenchQuery], count: int) -> list[BenchQuery]:
    """`count` of the queries at an even stride (make_queries orders them by bucket)."""
    if count >= len(queries):
        return list(queries)
    stride = len(queries) / count
    return [queries[int(index * stride)] for index in range(count)]


def stage_share(timings: Sequence[dict[str, float]], totals: Sequence[float]) -> dict[str, dict[str, float]]:
    """Per stage: mean ms over every ask (0 where the stage did not run), median ms where it ran, % of the
    total time; what no stage measured (outcome bookkeeping between them) as OUTSIDE."""
    whole = sum(totals)
    names = [name for name in STAGES if any(name in stages for stages in timings)]
    names += sorted({name for stages in timings for name in stages} - set(STAGES))
    share: dict[str, dict[str, float]] = {}
    for name in names:
        values = [stages.get(name, 0.0) for stages in timings]
        ran = [stages[name] for stages in timings if name in stages]
        share[name] = {
            "mean_ms": round(statistics.fmean(values), 2),
            "median_ms_where_run": round(statistics.median(ran), 2),
            "percent": round(100 * sum(values) / whole, 1),
        }
    outside = [total - sum(stages.values()) for stages, total in zip(timings, totals, strict=True)]
    share[OUTSIDE] = {
        "mean_ms": round(statistics.fmean(outside), 2),
        "median_ms_where_run": round(statistics.median(outside), 2),
        "percent": round(100 * sum(outside) / whole, 1),
    }
    return share


def share_line(share: dict[str, dict[str, float]]) -> str:
    return "stages: " + " · ".join(f"{name} {entry['percent']:.0f}%" for name, entry in share.items())


def fingerprint(answer: Any) -> tuple[Any, ...]:
    """What must not change between asks of one question (ids, times and the cache flag aside)."""
    return (
        answer.outcome,
        tuple((claim.text, claim.citations) for claim in answer.claims),
        tuple((citation.number, citation.chunk_id) for citation in answer.citations),
        answer.confidence.score,
        answer.refusal.reason if answer.refusal else None,
    )


@dataclass
class Measured:
    """Per run: p50 and p95 of the search baseline and of the cold answers, p50 of the cache hits; per ask: the
    stage times and totals (cold and hit) and the texts the ranking embedded; the first run's outcomes."""

    search_p50: list[float] = field(default_factory=list)
    search_p95: list[float] = field(default_factory=list)
    answer_p50: list[float] = field(default_factory=list)
    answer_p95: list[float] = field(default_factory=list)
    hit_p50: list[float] = field(default_factory=list)
    warm_p50: list[float] = field(default_factory=list)
    warm_p95: list[float] = field(default_factory=list)
    timings: list[dict[str, float]] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    hit_timings: list[dict[str, float]] = field(default_factory=list)
    hit_totals: list[float] = field(default_factory=list)
    texts_embedded: list[int] = field(default_factory=list)
    pieces_embedded: list[int] = field(default_factory=list)  # word pieces of those texts, per cold ask
    outcomes: dict[str, int] = field(default_factory=dict)
    unstable: int = 0  # later cold asks whose answer differs from the first run's
    hits_served: int = 0


def measured(
    retrieval: Any,
    *,
    cold: Any,
    cached: Any,
    ranking: CountingEmbedder,
    sentence_vectors: Any,
    principals: Sequence[Any],
    requests: Sequence[Any],
    searches: Sequence[Any],
) -> Measured:
    """RUNS runs, each: the baseline searches, the cold asks (the sentence vectors emptied first), the same
    questions again with the sentence vectors kept (warm), then again through the answer cache (hits)."""
    from shared.services.answers import StageTimes

    m = Measured()
    first: list[tuple[Any, ...]] = []
    for run in range(RUNS):
        searched = [timed_ms(partial(retrieval.search, principals[i], searches[i]))[0] for i in range(len(searches))]
        m.search_p50.append(percentile(searched, 0.5))
        m.search_p95.append(percentile(searched, 0.95))
        answered = []
        sentence_vectors.clear()
        embedded_before: list[int] = []
        for index in range(len(requests)):
            times = StageTimes()
            before = len(ranking.calls)
            embedded_before.append(len(ranking.texts))
            elapsed, answer = timed_ms(partial(cold.answer, principals[index], requests[index], times))
            answered.append(elapsed)
            m.timings.append(dict(times.stages))
            m.totals.append(elapsed)
            m.texts_embedded.append(sum(ranking.calls[before:]))
            if run == 0:
                label = answer.outcome.value + (f": {answer.refusal.reason.value}" if answer.refusal else "")
                m.outcomes[label] = m.outcomes.get(label, 0) + 1
                first.append(fingerprint(answer))
            elif fingerprint(answer) != first[index]:
                m.unstable += 1
        m.answer_p50.append(percentile(answered, 0.5))
        m.answer_p95.append(percentile(answered, 0.95))
        embedded_before.append(len(ranking.texts))
        m.pieces_embedded += [
            sum(ranking.count_tokens(text) + 2 for text in ranking.texts[begin:end])  # [CLS] and [SEP]
            for begin, end in itertools.pairwise(embedded_before)
        ]
        warm = [timed_ms(partial(cold.answer, principals[i], requests[i]))[0] for i in range(len(requests))]
        m.warm_p50.append(percentile(warm, 0.5))
        m.warm_p95.append(percentile(warm, 0.95))
        again = []
        for index in range(len(requests)):
            times = StageTimes()
            elapsed, answer = timed_ms(partial(cached.answer, principals[index], requests[index], times))
            again.append(elapsed)
            m.hit_timings.append(dict(times.stages))
            m.hit_totals.append(elapsed)
            m.hits_served += int(answer.cached)
        m.hit_p50.append(percentile(again, 0.5))
    return m


def figures(
    result: Result, container: Any, retrieval: Any, queries: Sequence[BenchQuery], chunks: int
) -> list[dict[str, Any]]:
    from bench.search import skipped
    from shared.adapters.local.onnx_embeddings import OnnxMiniLmEmbedder
    from shared.domain.answers import AnswerRequest
    from shared.domain.auth import Principal
    from shared.domain.search import SearchFilters, SearchQuery
    from shared.services.answers import CACHE_LIFETIME, CANDIDATE_HITS, AnswerService, AnswerTuning
    from shared.services.sentence_vectors import SentenceVectors

    names = (
        "answer bench: evidence-only answer (AnswerService.answer, MiniLM sentence ranking) p50",
        "answer bench: evidence-only answer p95",
        "answer bench: the same question again, served from the answer cache p50",
        "answer bench: evidence-only answer, its sentences' vectors cached by an earlier answer p50",
        "answer bench: evidence-only answer, its sentences' vectors cached p95",
    )
    minilm = OnnxMiniLmEmbedder(dimension=container.settings.embedding_dimension)
    status = minilm.capability()
    if not status.available:
        return [skipped(name, "ms", status.reason or "the local embedder is unavailable") for name in names]
    begun = time.perf_counter()
    minilm.embed(["warm up"])  # loads the model: not part of any answer
    load_seconds = time.perf_counter() - begun
    ranking = CountingEmbedder(minilm)

    sentence_vectors = SentenceVectors()

    def service(cache_lifetime: timedelta) -> AnswerService:
        # The composition root's AnswerService (container.answers) with the bench's retrieval and embedder.
        return AnswerService(
            authorization=container.authorization,
            retrieval=retrieval,
            knowledge=container.knowledge,
            embedder=ranking,
            generator=container.generator,
            store=container.answer_store,
            spend=container.spend_limits,
            metering=container.metering,
            tuning=AnswerTuning(cache_lifetime=cache_lifetime),
            sentence_vectors=sentence_vectors,
        )

    cold = service(timedelta(seconds=-1))  # the cache is read, never hit
    cached = service(CACHE_LIFETIME)
    chosen = asked(queries, ANSWER_QUERIES)
    principals = [Principal(tenant_id=q.tenant, subject="bench", collections=q.readable) for q in chosen]
    requests = [AnswerRequest(question=q.text, filters=SearchFilters(collections=q.wanted)) for q in chosen]
    # The answer asks retrieval for CANDIDATE_HITS: the baseline searches the same.
    searches = [
        SearchQuery(text=q.text, limit=CANDIDATE_HITS, filters=SearchFilters(collections=q.wanted)) for q in chosen
    ]

    m = measured(
        retrieval,
        cold=cold,
        cached=cached,
        ranking=ranking,
        sentence_vectors=sentence_vectors,
        principals=principals,
        requests=requests,
        searches=searches,
    )
    share = stage_share(m.timings, m.totals)
    ranked = [count for count in m.texts_embedded if count]
    common = {
        "queries": len(chosen),
        "chunks": chunks,
        "runs_of": f"{RUNS} runs of {len(chosen)} questions; median of the runs",
        "searched_first": "each run times Retrieval.search of the same questions (limit "
        f"{CANDIDATE_HITS}, as the answer asks) just before the answers: the baseline",
    }
    p50 = result(
        names[0],
        m.answer_p50,
        "ms",
        **common,
        stage_share=share,
        table_note=share_line(share),
        outcomes_first_run=m.outcomes,
        texts_embedded_per_answer={
            "what": "the question + the candidate sentences of the selected evidence (two MiniLM calls)",
            "median": statistics.median(ranked) if ranked else 0,
            "max": max(ranked, default=0),
        },
        word_pieces_embedded_per_answer={
            "what": "MiniLM word pieces of those texts ([CLS] and [SEP] included), cold asks",
            "median": statistics.median(m.pieces_embedded) if m.pieces_embedded else 0,
            "p95": percentile(m.pieces_embedded, 0.95) if m.pieces_embedded else 0,
            "mean": round(statistics.fmean(m.pieces_embedded), 1) if m.pieces_embedded else 0,
        },
        answers_differing_from_the_first_run=m.unstable,
        sentence_embedder=minilm.model_id,
        query_embedder="FAKE: the bench's synthetic query vector (both lanes, as the search figures)",
        generator=container.generator.capability().reason,
        corpus_sentences=f"{WORDS_PER_SENTENCE[0]}-{WORDS_PER_SENTENCE[1]} invented or stop words each",
        model_load_seconds_excluded=round(load_seconds, 1),
        cache="cold: a service with cache_lifetime -1 s (the lookup runs, never hits)",
        cpus=os.cpu_count(),
        load_average_1m_at_end=round(os.getloadavg()[0], 2),
    )
    p95 = result(names[1], m.answer_p95, "ms", **common)
    hit = result(
        names[2],
        m.hit_p50,
        "ms",
        **common,
        served_from_cache=f"{m.hits_served} of {RUNS * len(chosen)}",
        stage_share=stage_share(m.hit_timings, m.hit_totals),
        vs_cold_answer_p50=round(statistics.median(m.hit_p50) / statistics.median(m.answer_p50), 3),
    )
    warm_p50 = result(names[3], m.warm_p50, "ms", **common, sentence_vectors_held=len(sentence_vectors))
    warm_p95 = result(names[4], m.warm_p95, "ms", **common)
    for figure, baseline in (
        (p50, m.search_p50),
        (p95, m.search_p95),
        (hit, m.search_p50),
        (warm_p50, m.search_p50),
        (warm_p95, m.search_p95),
    ):
        figure["baseline"] = round(statistics.median(baseline), 3)
        figure["ratio"] = round(figure["value"] / figure["baseline"], 2) if figure["baseline"] else None
        figure["data"]["baseline_is"] = "hybrid search (Retrieval.search) of the same questions, median of the runs"
        figure["data"]["baseline_runs"] = [round(value, 3) for value in baseline]
    return [p50, p95, hit, warm_p50, warm_p95]


def main() -> int:
    """Only the answer figures, over a database loaded for them (QUIRE_BENCH_SEARCH_CHUNKS chunks): the table on
    stdout, the figures as JSON in .bench/answers.json (never over `make bench`'s results)."""
    import json

    import numpy as np

    from bench.run import REPO_ROOT, result, table
    from bench.search import CHUNKS, QUERIES, SEED, bench_retrieval, embedded_server, load_figures
    from bench.search_corpus import make_corpus, make_queries
    from shared.bootstrap import Container
    from shared.config import Settings
    from shared.observability import logger

    logger.setLevel("WARNING")
    begun = time.perf_counter()
    rng = np.random.default_rng(SEED)
    corpus = make_corpus(CHUNKS, rng)
    queries = make_queries(corpus, QUERIES, rng)
    with embedded_server() as (owner_url, app_url):
        container = Container(Settings(runtime="local", database_url=app_url))
        try:
            out = load_figures(result, owner_url, container.database, corpus)
            loaded = time.perf_counter()
            out += figures(result, container, bench_retrieval(container, queries), queries, CHUNKS)
        finally:
            container.database.close()
    print(table(out))
    print(f"\nload {loaded - begun:.0f} s, answers {time.perf_counter() - loaded:.0f} s")
    target = REPO_ROOT / ".bench" / "answers.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
