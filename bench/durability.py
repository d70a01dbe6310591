"""What the local stack's durability and workers cost and give: a PUT written through to disk, `quire up` with
thousands of object versions to read back, a burst of uploads on every core, and one tenant's upload behind
another's backlog.

`python -m bench.durability` runs these alone and writes .bench/durability.json.
"""

import json
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.run import REPO_ROOT, percentile, quire, timed
from shared.local.api_client import ApiClient

PUTS = 200
PUT_BYTES = 64 * 1024
STORED_VERSIONS = 5_000
RESTARTS = 3
BURST = 60
BACKLOG = 60


def _note(serial: int) -> bytes:
    return f"Delivery note {serial}: pallet {serial} of crated lamps left the depot on time.\n".encode() * 40


def _s3_client(endpoint: str) -> Any:
    import boto3

    from shared.local.paths import LOCAL_AWS_ENVIRONMENT

    # The stack's own stand-in credentials: the bench needs none of its caller's (CI has none).
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=LOCAL_AWS_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_AWS_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
    )


def _puts(state: dict[str, Any]) -> list[float]:
    """PUT latency through the local S3: the request, moto, and the write-through (bytes, record, directory)."""
    client = _s3_client(state["s3"]["endpoint"])
    body = bytes(range(256)) * (PUT_BYTES // 256)
    samples = []
    for number in range(PUTS):
        begun = time.perf_counter()
        client.put_object(Bucket=state["s3"]["bucket"], Key=f"bench/put/{number % 20}", Body=body)
        samples.append((time.perf_counter() - begun) * 1000)
    return sorted(samples)


def _fill(state: dict[str, Any], count: int) -> None:
    client = _s3_client(state["s3"]["endpoint"])
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(
                lambda n: client.put_object(
                    Bucket=state["s3"]["bucket"], Key=f"bench/fill/{n % 1000}", Body=b"x" * 512
                ),
                range(count),
            )
        )


def _upload_all(client: ApiClient, files: list[Path], collection: str) -> list[str]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        return [ticket["fileId"] for ticket in pool.map(lambda path: client.upload(path, collection), files)]


def _files(directory: Path, prefix: str, count: int) -> list[Path]:
    directory.mkdir(exist_ok=True)
    paths = []
    for serial in range(count):
        path = directory / f"{prefix}-{serial:03d}.txt"
        path.write_bytes(_note(serial))
        paths.append(path)
    return paths


def _wait_indexed(client: ApiClient, file_ids: list[str]) -> None:
    for file_id in file_ids:
        record = client.wait_until_processed(file_id, timeout=600)
        assert record["current"]["processingState"] == "indexed", record


def _burst(workdir: Path, api: str) -> float:
    """Files per second from the first upload of a burst to the last one indexed."""
    client = ApiClient(api, quire(workdir, "token", "--tenant", "burst", "--write", "docs").strip())
    files = _files(workdir / "burst", "burst", BURST)
    begun = time.perf_counter()
    _wait_indexed(client, _upload_all(client, files, "docs"))
    return BURST / (time.perf_counter() - begun)


def _behind_a_backlog(workdir: Path, api: str) -> tuple[float, int]:
    """Seconds from one tenant's upload to indexed while another's backlog is queued; how many of the backlog
    were still unprocessed when it was indexed."""
    flood = ApiClient(api, quire(workdir, "token", "--tenant", "flood", "--write", "docs").strip())
    single = ApiClient(api, quire(workdir, "token", "--tenant", "single", "--write", "docs").strip())
    backlog = _upload_all(flood, _files(workdir / "flood", "flood", BACKLOG), "docs")
    path = workdir / "single.txt"
    path.write_bytes(_note(9999))
    begun = time.perf_counter()
    ticket = single.upload(path, "docs")
    record = single.wait_until_processed(ticket["fileId"], timeout=600)
    waited = time.perf_counter() - begun
    assert record["current"]["processingState"] == "indexed", record
    still = sum(
        flood.call("GET", f"/v1/files/{file_id}")["current"]["processingState"] != "indexed" for file_id in backlog
    )
    _wait_indexed(flood, backlog)
    return waited, still


def figures(result: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    p50s, p95s, restarts, bursts, waits, remaining = [], [], [], [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        quire(workdir, "up")
        try:
            state = json.loads((workdir / ".quire" / "state.json").read_text())
            for _ in range(3):
                samples = _puts(state)
                p50s.append(percentile(samples, 0.5))
                p95s.append(percentile(samples, 0.95))
            _fill(state, STORED_VERSIONS)
        finally:
            quire(workdir, "down")
        for _ in range(RESTARTS):
            restarts.append(timed(lambda: quire(workdir, "up")))
            quire(workdir, "down")
        quire(workdir, "up")
        try:
            api = json.loads((workdir / ".quire" / "state.json").read_text())["api"]
            for _ in range(3):
                bursts.append(_burst(workdir, api))
                waited, still = _behind_a_backlog(workdir, api)
                waits.append(waited)
                remaining.append(float(still))
        finally:
            quire(workdir, "down")
    return [
        result(
            f"local S3 PUT of {PUT_BYTES // 1024} KiB, written through to disk before the answer, p50",
            p50s,
            "ms",
            puts=PUTS,
        ),
        result("local S3 PUT p95", p95s, "ms", puts=PUTS),
        result(
            f"quire up with {STORED_VERSIONS:,} more object versions to read back (existing state to ready)",
            restarts,
            "s",
            versions=STORED_VERSIONS,
        ),
        result(
            f"ingestion of a burst of {BURST} text files uploaded at once, upload to indexed",
            bursts,
            "files/s",
            workers="one per core",
        ),
        result(
            f"one tenant's upload to indexed, behind another tenant's {BACKLOG} queued files",
            waits,
            "s",
            backlog_still_unprocessed=remaining,
            table_note=f"the backlog still unprocessed when it was indexed: {remaining} of {BACKLOG}",
        ),
    ]


def main() -> int:
    from bench.run import result, table

    results = figures(result)
    out = REPO_ROOT / ".bench" / "durability.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
