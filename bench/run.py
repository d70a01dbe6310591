"""`make bench`: speed and memory of the local stack, each figure the median of several runs.

Prints a table and writes .bench/results.json: a list of {name, value, unit, baseline, ratio, data}.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS = REPO_ROOT / ".bench" / "results.json"
COLD_RUNS = 3
WARM_RUNS = 5
REQUESTS = 300
UPLOADS = 20


def quire(workdir: Path, *args: str, settings: Mapping[str, str] | None = None) -> str:
    """`quire <args>` from `workdir`, running this checkout's code; `settings` (QUIRE_* variables) reach the
    stack a `quire up` starts."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(settings or {})}
    env.pop("DATABASE_URL", None)
    completed = subprocess.run(
        [sys.executable, "-m", "shared.cli", *args], cwd=workdir, env=env, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(f"quire {' '.join(args)} failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return completed.stdout


def timed(action: Any) -> float:
    begun = time.perf_counter()
    action()
    return time.perf_counter() - begun


def process_tree(pid: int) -> list[int]:
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        try:
            with open(f"/proc/{current}/task/{current}/children", encoding="ascii") as children:
                pending.extend(int(child) for child in children.read().split())
        except OSError:
            continue
    return tree


def pss_mb(pids: list[int]) -> float:
    """Proportional set size: shared pages (PostgreSQL's shared buffers) are counted once, not per backend."""
    total_kb = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
                total_kb += next(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
    return total_kb / 1024


def stack_memory_mb(workdir: Path, supervisor_pid: int) -> float:
    # pg_ctl daemonizes the postmaster, so it is not among the supervisor's descendants.
    postmaster = int((workdir / ".quire" / "pgdata" / "postmaster.pid").read_text().splitlines()[0])
    return pss_mb(process_tree(supervisor_pid) + process_tree(postmaster))


def latencies_ms(url: str, headers: dict[str, str]) -> list[float]:
    samples = []
    for _ in range(REQUESTS):
        request = urllib.request.Request(url, headers=headers)  # noqa: S310 - loopback
        begun = time.perf_counter()
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
            response.read()
        samples.append((time.perf_counter() - begun) * 1000)
    return sorted(samples)


def percentile(sorted_samples: list[float], fraction: float) -> float:
    return sorted_samples[min(len(sorted_samples) - 1, int(fraction * len(sorted_samples)))]


def upload_figures(workdir: Path, api: str) -> list[dict[str, Any]]:
    """Browser-path uploads through the local stack: ticket, presigned POST, Object Created, stored."""
    from shared.local.api_client import ApiClient

    token = quire(workdir, "token", "--tenant", "bench", "--write", "bench").strip()
    client = ApiClient(api, token)
    sample = workdir / "sample.pdf"
    sample.write_bytes(b"%PDF-1.4\n" + os.urandom(1024 * 1024) + b"\n%%EOF\n")
    seconds: list[float] = []
    for _ in range(UPLOADS):
        begun = time.perf_counter()
        ticket = client.upload(sample, "bench")
        record = client.wait_until_decided(ticket["fileId"])
        seconds.append(time.perf_counter() - begun)
        assert record["current"]["state"] == "stored", record
    return [
        result("upload 1 MB PDF to stored (ticket, POST, event, sniff, CAS; 50 ms polling)", seconds, "s"),
        result("uploads per second, sequential", [UPLOADS / sum(seconds)], "files/s", uploads=UPLOADS),
    ]


def result(name: str, runs: list[float], unit: str, **data: Any) -> dict[str, Any]:
    return {
        "name": name,
        "value": round(statistics.median(runs), 3),
        "unit": unit,
        "baseline": None,
        "ratio": None,
        "data": {"runs": [round(r, 3) for r in runs], **data},
    }


def table(results: list[dict[str, Any]]) -> str:
    """One line per figure: its median, unit and runs; a figure with a baseline says `ratio x baseline` after
    the runs, and a `table_note` in its data (a one-line summary, e.g. the share per stage) follows indented."""
    width = max(len(r["name"]) for r in results)
    lines = [f"{'benchmark':<{width}}  {'median':>10}  unit  runs"]
    for r in results:
        # A named skip has value None and says why in data.skipped.
        line = (
            f"{r['name']:<{width}}  {'skipped' if r['value'] is None else format(r['value'], '.3f'):>10}"
            f"  {r['unit']:<4}  {r['data'].get('runs', r['data'].get('skipped'))}"
        )
        if r.get("baseline") is not None:
            line += f"  ({r['ratio']}x the baseline {r['baseline']:.3f} {r['unit']})"
        lines.append(line)
        if r["data"].get("table_note"):
            lines.append(f"{'':<{width}}    {r['data']['table_note']}")
    return "\n".join(lines)


def component_figures() -> list[dict[str, Any]]:
    """Extraction, search, the reranker's added latency, the local embedder, OCR and transcription, measured in this
    process against their own stand-ins; the Lambda packages' sizes and their handlers' cold imports (fresh
    interpreters)."""
    from bench.embedding import figures as embedding_figures
    from bench.extraction import figures as extraction_figures
    from bench.filtered_search import figures as filtered_search_figures
    from bench.ocr import figures as ocr_figures
    from bench.packages import figures as package_figures
    from bench.page_images import figures as page_image_figures
    from bench.rendering import figures as rendering_figures
    from bench.rerank import figures as rerank_figures
    from bench.search import figures as search_figures
    from bench.transcription import figures as transcription_figures

    return [
        *extraction_figures(result),
        *search_figures(result),
        *filtered_search_figures(result),
        *rerank_figures(result),
        *embedding_figures(result),
        *ocr_figures(result),
        *transcription_figures(result),
        *rendering_figures(result),
        *page_image_figures(result),
        *package_figures(result),
    ]


def stack_workload_figures() -> list[dict[str, Any]]:
    """Each in a stack of its own: memory as files are ingested, the isolation probes with search's p95, and a
    3,000-chunk version re-indexed through the worker; a tool call over MCP, its HTTP twin and the route; a change
    to its webhook's receipt, and the event relay's throughput; uploads by parts (throughput, a 1 GiB upload killed
    and resumed)."""
    from bench.durability import figures as durability_figures
    from bench.events import figures as event_figures
    from bench.ingest_memory import figures as ingest_memory_figures
    from bench.isolation import figures as isolation_figures
    from bench.multipart import figures as multipart_figures
    from bench.reindex import figures as reindex_figures
    from bench.tools import figures as tool_figures

    return [
        *ingest_memory_figures(result),
        *durability_figures(result),
        *isolation_figures(result),
        *reindex_figures(result),
        *tool_figures(result),
        *event_figures(result),
        *multipart_figures(result),
    ]


def main() -> int:
    results: list[dict[str, Any]] = []
    cold: list[float] = []
    for _ in range(COLD_RUNS):
        with tempfile.TemporaryDirectory() as scratch:
            workdir = Path(scratch)
            cold.append(timed(lambda w=workdir: quire(w, "up")))
            quire(workdir, "down")
    results.append(result("quire up, fresh directory (initdb + migrations) to ready", cold, "s"))

    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        quire(workdir, "up")
        quire(workdir, "down")
        warm: list[float] = []
        down: list[float] = []
        for _ in range(WARM_RUNS):
            warm.append(timed(lambda w=workdir: quire(w, "up")))
            down.append(timed(lambda w=workdir: quire(w, "down")))
        results.append(result("quire up, existing state to ready", warm, "s"))
        results.append(result("quire down, all processes gone", down, "s"))

        quire(workdir, "up")
        try:
            state = json.loads((workdir / ".quire" / "state.json").read_text())
            token = quire(workdir, "token", "--tenant", "bench", "--write", "a,b").strip()
            auth = {"Authorization": f"Bearer {token}"}
            me_p50, me_p95, health_p50, rss = [], [], [], []
            for _ in range(3):
                me = latencies_ms(f"{state['api']}/v1/me", auth)
                health = latencies_ms(f"{state['api']}/v1/health", {})
                me_p50.append(percentile(me, 0.5))
                me_p95.append(percentile(me, 0.95))
                health_p50.append(percentile(health, 0.5))
                rss.append(stack_memory_mb(workdir, state["pid"]))
            results.append(result("GET /v1/me (JWT verify + handler) p50", me_p50, "ms", requests=REQUESTS))
            results.append(result("GET /v1/me p95", me_p95, "ms", requests=REQUESTS))
            results.append(result("GET /v1/health (database round trip) p50", health_p50, "ms", requests=REQUESTS))
            results.append(result("local stack memory, PSS (supervisor + PostgreSQL)", rss, "MB"))
            results.extend(upload_figures(workdir, state["api"]))
        finally:
            quire(workdir, "down")

    results.extend(stack_workload_figures())
    results.extend(component_figures())

    venv = REPO_ROOT / ".venv"
    size = subprocess.run(["du", "-sm", str(venv)], capture_output=True, text=True, check=True).stdout.split()[0]
    results.append(result("virtualenv size", [float(size)], "MB"))

    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(table(results))
    print(f"\nwritten to {RESULTS.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
