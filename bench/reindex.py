"""Re-indexing a 3,000-chunk version through the local stack's worker (issue 16): `POST /v1/reindex` only queues
it, so the call's latency stays flat however large the version; the worker then chunks the stored document and
embeds it batch by batch with MiniLM, each batch metered, until the version is indexed with the current model.

One stack, one upload; each run marks the version stale again (its embedding model set to another name, as after
a model change, through the application role with the tenant set) and re-indexes it.
"""

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from bench.run import quire
from shared.local.api_client import ApiClient

RUNS = 3
SECTIONS = 3000
TENANT, COLLECTION = "bench-reindex", "logs"
WAIT_SECONDS = 900


def harbour_log() -> bytes:
    """One short section per chunk: 3,000 sections are 3,000 chunks (about 250 KB of Markdown)."""
    sections = b"".join(
        b"## Berth %d\n\nVessel %d moored at berth %d under pilot %d on the evening tide.\n\n" % (i, i, i, i)
        for i in range(SECTIONS)
    )
    return b"# Harbour log\n\n" + sections


def _mark_stale(database_url: str, version_id: str) -> None:
    with psycopg.connect(database_url, autocommit=False) as conn:
        conn.execute("SELECT set_config('quire.tenant_id', %s, true)", (TENANT,))
        conn.execute(
            "UPDATE file_versions SET embedding_model = 'a-retired-model' WHERE version_id = %s", (version_id,)
        )
        conn.commit()


def _indexed_with(client: ApiClient, file_id: str, model: str, deadline: float) -> dict[str, Any]:
    while time.monotonic() < deadline:
        current = client.call("GET", f"/v1/files/{file_id}")["current"]
        indexing = current.get("indexing") or {}
        if current["processingState"] == "indexed" and indexing.get("embeddingModel") == model:
            return current  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise TimeoutError(f"the re-index did not finish in {WAIT_SECONDS} s")


def figures(result: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    calls_ms: list[float] = []
    rates: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        quire(workdir, "up")
        try:
            state = json.loads((workdir / ".quire" / "state.json").read_text())
            api = json.loads(quire(workdir, "status", "--json"))["api"]
            token = quire(workdir, "token", "--tenant", TENANT, "--admin", COLLECTION).strip()
            client = ApiClient(api, token)
            path = workdir / "harbour-log.md"
            path.write_bytes(harbour_log())
            ticket = client.upload(path, COLLECTION)
            record = client.wait_until_processed(ticket["fileId"], timeout=WAIT_SECONDS)
            current = record["current"]
            chunks = current["indexing"]["chunkCount"]
            model = current["indexing"]["embeddingModel"]
            assert current["processingState"] == "indexed", current
            assert chunks >= SECTIONS, current
            for _ in range(RUNS):
                _mark_stale(state["database"]["url"], current["versionId"])
                begun = time.perf_counter()
                started = client.call("POST", "/v1/reindex?limit=1")
                calls_ms.append((time.perf_counter() - begun) * 1000)
                assert started["queued"] == 1, started
                done = _indexed_with(client, ticket["fileId"], model, time.monotonic() + WAIT_SECONDS)
                assert done["indexing"]["embeddedChunkCount"] == chunks, done
                rates.append(chunks / (time.perf_counter() - begun))
            usage = client.call("GET", "/v1/usage")
            embed_calls = sum(line["calls"] for line in usage["lines"] if line["step"] == "embed")
        finally:
            quire(workdir, "down")
    return [
        result(f"POST /v1/reindex queuing a {chunks:,}-chunk version", calls_ms, "ms", chunks=chunks),
        result(
            f"re-index of a {chunks:,}-chunk version through the local worker (MiniLM)",
            rates,
            "chunks/s",
            chunks=chunks,
            embedding_model=model,
            embed_calls_metered=embed_calls,
        ),
    ]


if __name__ == "__main__":
    from bench.run import result as bench_result

    for figure in figures(bench_result):
        print(f"{figure['name']}: {figure['value']} {figure['unit']}  {figure['data']}")
