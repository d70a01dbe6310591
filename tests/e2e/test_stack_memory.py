"""One `quire up` ingests file after file, and its memory stays flat.

moto's S3 once copied the whole bucket on every version listing and kept every copy (every model instance
was appended to a class-level list), and the pipeline listed versions twice per file: each file cost more
memory than the one before, until a 24 GB machine froze. Heavy-in-bytes, light-in-text PDFs make that
cost show within a few dozen files (about 0.9 GB for the files below, before the fix).
"""

import json
from pathlib import Path

from shared.local.api_client import ApiClient
from shared.local.hostile_corpus import bulky_pdf
from tests.e2e.cli import quire

WARM_UP_FILES = 6
MEASURED_FILES = 24
# Allocator slack and caches that fill once; far below what a per-file leak of the bucket costs.
ALLOWED_GROWTH_MB = 120


def resident_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def ingest(client: ApiClient, directory: Path, serials: range) -> None:
    for serial in serials:
        path = directory / f"bulky-{serial:03d}.pdf"
        path.write_bytes(bulky_pdf(serial))
        ticket = client.upload(path, "ledger")
        record = client.wait_until_processed(ticket["fileId"], timeout=120)
        assert record["current"]["processingState"] == "indexed", record


def test_the_stacks_memory_stays_flat_as_files_are_ingested(tmp_path: Path) -> None:
    workdir, files = tmp_path / "stack", tmp_path / "files"
    workdir.mkdir()
    files.mkdir()
    try:
        # Given a running stack that has warmed up on a few files
        quire(workdir, "up")
        api = json.loads(quire(workdir, "status", "--json", check=False).stdout)["api"]
        pid = int(json.loads((workdir / ".quire" / "state.json").read_text())["pid"])
        client = ApiClient(api, quire(workdir, "token", "--tenant", "acme", "--write", "ledger").stdout.strip())
        ingest(client, files, range(WARM_UP_FILES))
        warm = resident_mb(pid)

        # When many more files go through the same stack
        ingest(client, files, range(WARM_UP_FILES, WARM_UP_FILES + MEASURED_FILES))

        # Then its resident memory grew by no more than allocator slack
        grown = resident_mb(pid) - warm
        print(f"stack RSS {warm:.0f} MB after {WARM_UP_FILES} files, grew {grown:.0f} MB over {MEASURED_FILES} more")
        assert grown < ALLOWED_GROWTH_MB, f"the stack grew {grown:.0f} MB over {MEASURED_FILES} files"
    finally:
        quire(workdir, "down", check=False)
