"""The local stack's resident memory as files are ingested: after 10 and after 200, in one `quire up`.

A per-file cost that grows with the bucket (moto's version listing once copied the whole bucket and kept
the copy) shows as a second figure far above the first; flat memory keeps it within 1.2x.
"""

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.run import quire
from shared.local.api_client import ApiClient
from shared.local.hostile_corpus import bulky_pdf

RUNS = 3
FIRST, SECOND = 10, 200
# Small and of several kinds, as a tenant's usual uploads are: a text note, a small PDF, a Markdown page.
_KINDS: tuple[tuple[str, Callable[[int], bytes]], ...] = (
    ("txt", lambda n: f"Delivery note {n}: pallet {n} of crated lamps left the depot on time.\n".encode() * 40),
    ("pdf", lambda n: bulky_pdf(n, ballast_bytes=16 * 1024)),
    ("md", lambda n: f"# Minutes {n}\n\n- item {n} agreed\n- budget line {n * 7} moved\n".encode() * 20),
)


def _resident_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def _one_run(files: Path) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        quire(workdir, "up")
        try:
            api = json.loads(quire(workdir, "status", "--json"))["api"]
            pid = int(json.loads((workdir / ".quire" / "state.json").read_text())["pid"])
            client = ApiClient(api, quire(workdir, "token", "--tenant", "bench", "--write", "mem").strip())
            begun = time.perf_counter()
            after: dict[int, float] = {}
            for serial in range(SECOND):
                suffix, build = _KINDS[serial % len(_KINDS)]
                path = files / f"file-{serial:03d}.{suffix}"
                path.write_bytes(build(serial))
                ticket = client.upload(path, "mem")
                record = client.wait_until_processed(ticket["fileId"], timeout=120)
                assert record["current"]["processingState"] == "indexed", record
                if serial + 1 in (FIRST, SECOND):
                    after[serial + 1] = _resident_mb(pid)
            return after[FIRST], after[SECOND], SECOND / (time.perf_counter() - begun)
        finally:
            quire(workdir, "down")


def figures(result: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    firsts, seconds, rates = [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(RUNS):
            first, second, rate = _one_run(Path(scratch))
            firsts.append(first)
            seconds.append(second)
            rates.append(rate)
    ratios = [b / a for a, b in zip(firsts, seconds, strict=True)]
    grown = result(f"stack RSS after {SECOND} ingested files (supervisor)", seconds, "MB")
    grown["baseline"] = round(statistics.median(firsts), 3)
    grown["ratio"] = round(statistics.median(ratios), 3)
    return [
        result(f"stack RSS after {FIRST} ingested files (supervisor)", firsts, "MB"),
        grown,
        result(f"stack RSS after {SECOND} / after {FIRST} files (flat memory: within 1.2)", ratios, "x"),
        result("sequential ingestion through the local stack (txt, pdf, md mix)", rates, "files/s"),
    ]
