"""The reranker's added latency (issue 37): hybrid search through `Retrieval.search` with and without a reranker, the
same query timed in turn with each, over a corpus of the search bench's own kind in an embedded PostgreSQL of its
own (bench/search.py's server and loader; QUIRE_BENCH_RERANK_CHUNKS chunks, 10,000 by default).

Subjects, each a Retrieval built by the composition root over the same database (the FAKE query embedder of
bench/search_corpus.py, so the index is measured, not a model):
- none: no reranker (QUIRE_SEARCH_IDENTIFIER_BOOST off, no rerank model);
- the identifier booster (the local default), on the bench's queries (none holds an identifier: the booster reads
  the query and returns fusion order) and on the same queries with an identifier appended (ERR-4021: every candidate
  is scanned for it); both through the reranking service's worker thread and its budget, as searches run;
- the Bedrock adapter (`BedrockReranker`, Cohere Rerank 3.5's request) against a FAKE of Bedrock's agent runtime on
  127.0.0.1 (an HTTP server answering Rerank with a term-overlap ranking): botocore's serialisation, SigV4 signing
  and parsing, the HTTP round trip on loopback, and the service's part, the tenant's daily rerank limit read from the
  usage ledger before and the query booked after, as on AWS. Bedrock's own inference time is not in it: on AWS add
  the model's latency and the network's (not measured here).

Each figure is the median of RUNS runs; a run times every query with each subject in turn (the order rotated per
query). Per subject: the reranking step alone (`Reranking.rerank` as Retrieval calls it, timed inside the search: the
reranker's added latency), p50 and p95; and the whole search with it minus without on the same query, p50 (the same
added latency seen end to end, noisier: two searches' variance is in it).
`python -m bench.rerank` runs only this bench and writes .bench/rerank.json.
"""

import json
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from bench.search import (
    build_hnsw,
    drop_hnsw,
    embedded_server,
    percentile,
    vacuum_analyze,
    version_plan,
    write_versions,
)
from bench.search_corpus import BenchQuery, FakeQueryEmbedder, make_corpus, make_queries

CHUNKS = int(os.environ.get("QUIRE_BENCH_RERANK_CHUNKS", "10000"))
QUERIES = int(os.environ.get("QUIRE_BENCH_RERANK_QUERIES", "200"))
RUNS = 5
SEED = 20_261_207
IDENTIFIER = "ERR-4021"
REGION = "us-west-2"

Result = Callable[..., dict[str, Any]]


class FakeRerankEndpoint:
    """A FAKE of Bedrock's agent runtime on 127.0.0.1: answers POST /rerank as the service model shapes it, each
    source scored by the share of the query's words it holds; no model runs, no credential is checked."""

    def __init__(self) -> None:
        self.calls = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool keeps its connections to Bedrock
            # Headers and body go out as two writes: with Nagle's algorithm on, the body waits for the client's
            # delayed ACK (about 40 ms on Linux), which measures the fake, not the adapter.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                words = set(body["queries"][0]["textQuery"]["text"].lower().split())
                texts = [source["inlineDocumentSource"]["textDocument"]["text"] for source in body["sources"]]
                scored = [
                    (len(words & set(text.lower().split())) / (len(words) or 1), i) for i, text in enumerate(texts)
                ]
                ranked = sorted(scored, key=lambda pair: (-pair[0], pair[1]))
                answer = json.dumps({"results": [{"index": i, "relevanceScore": s} for s, i in ranked]}).encode()
                endpoint.calls += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-rerank-endpoint", daemon=True)

    def __enter__(self) -> "FakeRerankEndpoint":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def loopback_reranker(url: str, *, budget_seconds: float) -> Any:
    """The real adapter, its client pointed at the fake endpoint (dummy keys: the fake checks no signature)."""
    import boto3
    from botocore.config import Config

    from shared.adapters.aws.bedrock_rerank import COHERE_RERANK_V35_MODEL_ID, BedrockReranker

    client = boto3.client(
        "bedrock-agent-runtime",
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",  # noqa: S106 - a dummy key for a fake endpoint that checks none
        config=Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=budget_seconds,
            read_timeout=budget_seconds,
        ),
    )
    return BedrockReranker(client, model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION)


class TimedReranking:
    """The reranking service as built, each call of its step timed (the reranker's part of a search alone)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.samples: list[float] = []

    @property
    def model_id(self) -> str:
        return str(self._inner.model_id)

    def rerank(self, *args: Any) -> Any:
        elapsed, answer = timed_ms(partial(self._inner.rerank, *args))
        self.samples.append(elapsed)
        return answer


def retrieval_with(
    container: Any, embedder: Any, reranker: Any, *, metered: bool = True
) -> tuple[Any, TimedReranking | None]:
    """The composition root's Retrieval over the bench's database, with the FAKE embedder and `reranker` (None: no
    reranker) as its adapter set's parts, and its reranking step timed; `metered` False leaves out the limit's read
    and the ledger's row."""
    from shared.bootstrap import Container, adapters_for
    from shared.services.reranking import Reranking

    settings = container.settings
    parts = adapters_for(settings, database=container.database, embedder=embedder, reranker=reranker)
    built = Container(settings, parts)
    step = built.reranking if metered else Reranking(reranker, budget_seconds=settings.rerank_budget_seconds)
    timed = TimedReranking(step) if step is not None else None
    built.__dict__["reranking"] = timed
    return built.retrieval, timed


@contextmanager
def loaded() -> Iterator[tuple[Any, list[BenchQuery], dict[str, Any]]]:
    from shared.bootstrap import Container
    from shared.config import Settings
    from shared.observability import logger

    logger.setLevel("WARNING")
    rng = np.random.default_rng(SEED)
    corpus = make_corpus(CHUNKS, rng)
    queries = make_queries(corpus, QUERIES, rng)
    with embedded_server() as (owner_url, app_url):
        container = Container(Settings(runtime="local", database_url=app_url))
        try:
            definition = drop_hnsw(owner_url)
            times = write_versions(container.database, corpus, version_plan(corpus))
            build_hnsw(owner_url, definition)
            vacuum_analyze(owner_url)
            yield container, queries, {"chunks": times.chunks, "versions": times.versions}
        finally:
            container.database.close()


def timed_ms(action: Callable[[], Any]) -> tuple[float, Any]:
    begun = time.perf_counter()
    answer = action()
    return (time.perf_counter() - begun) * 1000, answer


class Timings:
    """Per subject, each run's samples: the whole search's in query order, and its reranking step's alone."""

    def __init__(self, subjects: Sequence[str]) -> None:
        self.runs: dict[str, list[list[float]]] = {name: [] for name in subjects}
        self.steps: dict[str, list[list[float]]] = {name: [] for name in subjects}

    def start_run(self) -> None:
        for samples in (*self.runs.values(), *self.steps.values()):
            samples.append([])

    def add(self, subject: str, elapsed: float, step: float | None) -> None:
        self.runs[subject][-1].append(elapsed)
        if step is not None:
            self.steps[subject][-1].append(step)

    def p(self, subject: str, fraction: float) -> list[float]:
        return [percentile(samples, fraction) for samples in self.runs[subject]]

    def step(self, subject: str, fraction: float) -> list[float]:
        return [percentile(samples, fraction) for samples in self.steps[subject]]

    def added(self, subject: str, baseline: str, fraction: float) -> list[float]:
        """Per run, the `fraction` percentile of `subject` minus `baseline` on the same query."""
        return [
            percentile([a - b for a, b in zip(with_, without, strict=True)], fraction)
            for with_, without in zip(self.runs[subject], self.runs[baseline], strict=True)
        ]


# (subject, what its rows are called, what they include, the subject it is compared with on the same queries)
SUBJECTS = (
    ("booster", "identifier booster", "queries without an identifier: the booster returns fusion order", "none"),
    (
        "booster, identifier",
        "identifier booster, queries with an identifier",
        "every candidate scanned for ERR-4021",
        "none, identifier",
    ),
    (
        "bedrock",
        "Bedrock adapter, FAKE Rerank endpoint on 127.0.0.1",
        "botocore, HTTP on loopback, the limit's read and the ledger's row; no model, no network",
        "none",
    ),
    (
        "bedrock, unmetered",
        "Bedrock adapter, FAKE endpoint, unmetered",
        "botocore and HTTP on loopback alone: the difference from the metered row is the metering's",
        "none",
    ),
)


def measure(
    container: Any, queries: Sequence[BenchQuery], endpoint: FakeRerankEndpoint
) -> tuple[Timings, dict[str, Any]]:
    from shared.domain.auth import Principal
    from shared.domain.identifier_booster import IdentifierBooster
    from shared.domain.search import Found, SearchFilters, SearchQuery

    plain = [query.text for query in queries]
    marked = [f"{query.text} {IDENTIFIER}" for query in queries]
    embedder = FakeQueryEmbedder(
        {text: query.vector for texts in (plain, marked) for text, query in zip(texts, queries, strict=True)}
    )
    budget = container.settings.rerank_budget_seconds
    adapter = loopback_reranker(endpoint.url, budget_seconds=budget)
    cases: dict[str, tuple[tuple[Any, TimedReranking | None], list[str]]] = {
        "none": (retrieval_with(container, embedder, None), plain),
        "booster": (retrieval_with(container, embedder, IdentifierBooster()), plain),
        "none, identifier": (retrieval_with(container, embedder, None), marked),
        "booster, identifier": (retrieval_with(container, embedder, IdentifierBooster()), marked),
        "bedrock": (retrieval_with(container, embedder, adapter), plain),
        "bedrock, unmetered": (retrieval_with(container, embedder, adapter, metered=False), plain),
    }
    principals = [Principal(tenant_id=q.tenant, subject="bench", collections=q.readable) for q in queries]
    filters = [SearchFilters(collections=q.wanted) for q in queries]
    timings = Timings(list(cases))
    outcomes: dict[str, dict[str, int]] = {name: {} for name in cases}
    given: list[int] = []
    for run in range(RUNS):
        timings.start_run()
        for index in range(len(queries)):
            names = list(cases)
            shift = (index + run) % len(names)
            for name in names[shift:] + names[:shift]:
                (retrieval, step), texts = cases[name]
                search = SearchQuery(text=texts[index], filters=filters[index])
                stepped = len(step.samples) if step is not None else 0
                elapsed, outcome = timed_ms(partial(retrieval.search, principals[index], search))
                took = step.samples[-1] if step is not None and len(step.samples) > stepped else None
                timings.add(name, elapsed, took)
                if run == 0:
                    said = (outcome.rerank.reason or "applied") if isinstance(outcome, Found) else "empty"
                    outcomes[name][str(said)] = outcomes[name].get(str(said), 0) + 1
                    if name == "bedrock" and isinstance(outcome, Found):
                        given.append(outcome.rerank.candidates)
    facts = {
        "outcomes_first_run": outcomes,
        "bedrock_candidates_given_mean": round(statistics.fmean(given), 1) if given else 0,
        "fake_endpoint_calls": endpoint.calls,
        "budget_seconds": budget,
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    }
    return timings, facts


def figures(result: Result) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with loaded() as (container, queries, load), FakeRerankEndpoint() as endpoint:
        timings, facts = measure(container, queries, endpoint)
        common = {
            **load,
            "queries": len(queries),
            "runs_of": f"{RUNS} runs of {len(queries)} queries, each subject in turn per query; median of the runs",
            **facts,
        }
        out.append(result("rerank bench: hybrid search without a reranker p50", timings.p("none", 0.5), "ms", **common))
        for subject, label, note, baseline in SUBJECTS:
            about = {"note": note, **common}
            for fraction, tag in ((0.5, "p50"), (0.95, "p95")):
                out.append(
                    result(
                        f"rerank bench: the reranking step, {label}, {tag}",
                        timings.step(subject, fraction),
                        "ms",
                        **about,
                    )
                )
            out.append(
                result(
                    f"rerank bench: search with it minus without, same query, {label}, p50",
                    timings.added(subject, baseline, 0.5),
                    "ms",
                    search_p50_ms=round(statistics.median(timings.p(subject, 0.5)), 3),
                    against=baseline,
                    **about,
                )
            )
    return out


def main() -> int:
    """Only this bench: the table on stdout, the figures as JSON in .bench/rerank.json."""
    from bench.run import REPO_ROOT, result, table

    begun = time.perf_counter()
    out = figures(result)
    print(table(out))
    print(f"\nrerank bench {time.perf_counter() - begun:.0f} s")
    target = REPO_ROOT / ".bench" / "rerank.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
