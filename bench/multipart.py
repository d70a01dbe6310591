"""Uploads by parts through the local stack: the Python client's multipart upload throughput to the local S3 (a file
by parts of the API's default 16 MiB, three PUTs in flight, ticket to completion), and the 1 GiB kill and resume of
`quire upload` (bench/upload_resume.py: SIGKILL once half the parts are held, then `--resume`), its bytes read back.

Each runs in a stack of its own whose single POST (the largest document) is raised past the files; the files are
random bytes behind a PDF header, so that processing each fails at once. Generated files are removed as they are
done with. `python -m bench.multipart` runs these alone and writes .bench/multipart.json.
"""

import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.run import REPO_ROOT, quire
from bench.upload_resume import COLLECTION, MIB, kill_and_resume, write_random_file

THROUGHPUT_BYTES = 256 * MIB
THROUGHPUT_RUNS = 5
RESUME_BYTES = 1024 * MIB
RESUME_PART_MIB = 5
# The largest document the bench's stacks take (a document's limit is the single POST's): past the 1 GiB file.
SETTINGS = {"QUIRE_MAX_UPLOAD_BYTES": str(RESUME_BYTES + 64 * MIB)}


def _client(workdir: Path, api: str) -> Any:
    from shared.local.api_client import ApiClient

    return ApiClient(api, quire(workdir, "token", "--tenant", "local", "--write", COLLECTION).strip())


def _settle_and_remove(client: Any, file_id: str) -> None:
    """Wait until the stack is done with the file (its processing fails at once), then delete it, so that the next
    run measures the upload alone."""
    client.wait_until_processed(file_id, timeout=600)
    client.call("DELETE", f"/v1/files/{file_id}")


def _throughput(workdir: Path, api: str) -> tuple[list[float], int]:
    """MiB/s of each run: the client's upload by parts, ticket to completion, the API's default part size."""
    client = _client(workdir, api)
    path = workdir / "throughput.pdf"
    write_random_file(path, THROUGHPUT_BYTES)
    rates: list[float] = []
    part_count = 0
    try:
        for _ in range(THROUGHPUT_RUNS):
            begun = time.perf_counter()
            uploaded = client.quire.upload(path, COLLECTION, wait=False, multipart=True)
            seconds = time.perf_counter() - begun
            assert uploaded.parts is not None
            part_count = uploaded.parts.part_count
            rates.append(THROUGHPUT_BYTES / MIB / seconds)
            _settle_and_remove(client, uploaded.file_id)
    finally:
        path.unlink(missing_ok=True)
    return rates, part_count


def _resume(workdir: Path, api: str) -> dict[str, Any]:
    path = workdir / "gigabyte.pdf"
    try:
        expected = write_random_file(path, RESUME_BYTES)
        outcome = kill_and_resume(workdir, api, path, part_mib=RESUME_PART_MIB, timeout=1200)
    finally:
        path.unlink(missing_ok=True)
    said = re.search(r"(\d+) of (\d+) parts were held and match the file; sent (\d+)", outcome.resume_output)
    assert said is not None, outcome.resume_output
    kept, sent = int(said.group(1)), int(said.group(3))
    # Correct before it is fast: the bytes read back are the file's, and the resume sent exactly what was missing.
    assert outcome.stored_sha256 == expected, "the stored bytes differ from the file's"
    assert kept + sent == outcome.part_count, (kept, sent, outcome.part_count)
    assert kept >= len(outcome.held_at_kill), (kept, outcome.held_at_kill)
    _settle_and_remove(_client(workdir, api), outcome.file_id)
    return {
        "seconds": outcome.resume_seconds,
        "first_seconds": outcome.first_seconds,
        "parts": outcome.part_count,
        "held_at_kill": len(outcome.held_at_kill),
        "kept": kept,
        "sent": sent,
    }


def figures(result: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        quire(workdir, "up", settings=SETTINGS)
        try:
            api = json.loads((workdir / ".quire" / "state.json").read_text())["api"]
            rates, part_count = _throughput(workdir, api)
            resumed = _resume(workdir, api)
        finally:
            quire(workdir, "down")
    size = RESUME_BYTES // MIB
    return [
        result(
            f"multipart upload throughput to the local S3, {THROUGHPUT_BYTES // MIB} MiB by {part_count} parts"
            " (Python client, 3 PUTs in flight, ticket to completion)",
            rates,
            "MiB/s",
            bytes=THROUGHPUT_BYTES,
            parts=part_count,
        ),
        result(
            f"quire upload --resume of a {size} MiB upload SIGKILLed at half its {resumed['parts']} parts"
            " (session read, held parts checked, the rest sent, completed, stored)",
            [resumed["seconds"]],
            "s",
            **resumed,
            table_note=(
                f"killed {resumed['first_seconds']:.1f} s in, {resumed['held_at_kill']} parts held; the resume kept"
                f" {resumed['kept']} and sent {resumed['sent']} ({RESUME_PART_MIB} MiB parts); the bytes read back"
                " identical"
            ),
        ),
    ]


def main() -> int:
    from bench.run import result, table

    results = figures(result)
    out = REPO_ROOT / ".bench" / "multipart.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
