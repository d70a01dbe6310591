"""`make sweep`: every public test file under ../shared/data and every hostile shape, through one `quire up`.

Files go in one at a time through the browser path (ticket, presigned POST) and are waited for until
they are indexed, failed, rejected or past their bound. Printed: the tally (indexed, each failure
reason, each rejection), every file that did not end indexed with the sentence it got, the slowest
ten, and the stack's peak resident memory. Written to .bench/sweep.json. Exit status 1 when a file
hung past its bound, the API answered 5xx, or the stack died.
"""

import argparse
import json
import mimetypes
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shared.domain.uploads import ACCEPTED_TYPES

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA = REPO_ROOT.parent / "shared" / "data"
RESULTS = REPO_ROOT / ".bench" / "sweep.json"
TENANT = COLLECTION = "sweep"
# Past this, a file is "hung": the extraction bound (120 s) and a few OCR pages, with room to spare.
FILE_BOUND_SECONDS = 600.0


@dataclass
class Outcome:
    name: str
    source: str
    size: int
    outcome: str  # indexed | failed | rejected | refused | interrupted | hung | error
    reason: str
    sentence: str
    detail: str
    seconds: float


def _quire(workdir: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("DATABASE_URL", None)
    completed = subprocess.run(
        [sys.executable, "-m", "shared.cli", *args], cwd=workdir, env=env, capture_output=True, text=True, check=True
    )
    return completed.stdout


def _media_type(path: Path) -> str:
    for accepted in ACCEPTED_TYPES:
        if path.suffix.lower() in accepted.extensions:
            return accepted.media_type
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def _tree_rss_mb(pid: int) -> float:
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/status", encoding="ascii") as status:
                total += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
            with open(f"/proc/{current}/task/{current}/children", encoding="ascii") as children:
                pending.extend(int(child) for child in children.read().split())
        except (OSError, StopIteration):
            continue
    return total / 1024


class MemoryWatch:
    """The supervisor's resident memory (with its parser and OCR children), sampled twice a second. Past
    `ceiling_mb` the stack is killed: a leaking stack once froze this machine (24 GB) for eight minutes."""

    def __init__(self, pid: int, ceiling_mb: float) -> None:
        self.pid = pid
        self.ceiling_mb = ceiling_mb
        self.peak_mb = 0.0
        self.exceeded = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak_mb = max(self.peak_mb, _tree_rss_mb(self.pid))
            if self.peak_mb > self.ceiling_mb and not self.exceeded:
                self.exceeded = True
                os.kill(self.pid, signal.SIGKILL)

    def now_mb(self) -> float:
        return _tree_rss_mb(self.pid)

    def __enter__(self) -> "MemoryWatch":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _outcome(path: Path, source: str, record: dict[str, Any], seconds: float, bound: float) -> Outcome:
    current = record["current"]
    common: dict[str, Any] = {
        "name": path.name,
        "source": source,
        "size": path.stat().st_size,
        "seconds": round(seconds, 2),
    }
    if current["state"] == "rejected":
        return Outcome(
            **common, outcome="rejected", reason="rejected", sentence=current.get("rejectionReason") or "", detail=""
        )
    processing = current["processingState"]
    if processing == "indexed":
        indexing = current.get("indexing") or {}
        detail = f"{indexing.get('chunkCount', 0)} chunks"
        return Outcome(**common, outcome="indexed", reason="indexed", sentence="", detail=detail)
    if processing == "failed":
        failure = current["failure"]
        return Outcome(
            **common,
            outcome="failed",
            reason=failure["reason"],
            sentence=failure["message"],
            detail=failure.get("detail") or "",
        )
    if processing == "interrupted":
        return Outcome(
            **common, outcome="interrupted", reason="interrupted", sentence=str(current.get("interruption")), detail=""
        )
    return Outcome(**common, outcome="hung", reason=f"still {processing} after {bound:.0f} s", sentence="", detail="")


def sweep(
    files: list[tuple[Path, str]], workdir: Path, bound: float, ceiling_mb: float
) -> tuple[list[Outcome], dict[str, float]]:
    from shared.local.api_client import ApiClient, ApiError

    _quire(workdir, "up")
    status = json.loads(_quire(workdir, "status", "--json"))
    state = json.loads((workdir / ".quire" / "state.json").read_text())
    client = ApiClient(status["api"], _quire(workdir, "token", "--tenant", TENANT, "--write", COLLECTION).strip())
    outcomes: list[Outcome] = []
    memory: dict[str, float] = {}
    try:
        with MemoryWatch(int(state["pid"]), ceiling_mb) as watch:
            memory["ready_mb"] = watch.now_mb()
            for number, (path, source) in enumerate(files, start=1):
                begun = time.monotonic()
                outcome = _one(client, path, source, bound=bound, begun=begun, api_error=ApiError)
                outcomes.append(outcome)
                print(
                    f"  [{number:3d}/{len(files)}] {outcome.seconds:7.1f} s  {watch.now_mb():7.0f} MB  "
                    f"{outcome.outcome:<11} {outcome.reason:<16} {source}/{path.name}",
                    flush=True,
                )
                if watch.exceeded:
                    print(f"  the stack passed {ceiling_mb:.0f} MB and was killed; stopping the sweep", flush=True)
                    memory["killed_after_files"] = number
                    break
                if outcome.outcome == "error" and not _alive(workdir):
                    print("  the stack died; stopping the sweep", flush=True)
                    break
            memory["end_mb"] = watch.now_mb()
            memory["peak_mb"] = watch.peak_mb
    finally:
        _quire(workdir, "down")
    return outcomes, memory


def _one(client: Any, path: Path, source: str, *, bound: float, begun: float, api_error: type[Exception]) -> Outcome:
    content = path.read_bytes()
    base: dict[str, Any] = {"name": path.name, "source": source, "size": len(content)}
    try:
        ticket = client.call(
            "POST",
            "/v1/uploads",
            {
                "collectionId": COLLECTION,
                "filename": path.name,
                "mediaType": _media_type(path),
                "byteSize": len(content),
            },
        )
        client.quire.post_to_storage(ticket, path.name, content, _media_type(path))
        record = client.wait_until_processed(ticket["fileId"], timeout=bound)
    except api_error as error:
        status = getattr(error, "status", 0)
        kind = "error" if status >= 500 else "refused"
        return Outcome(
            **base,
            outcome=kind,
            reason=f"HTTP {status}",
            sentence=str(error),
            detail="",
            seconds=round(time.monotonic() - begun, 2),
        )
    except OSError as error:
        return Outcome(
            **base, outcome="error", reason=type(error).__name__, sentence=str(error), detail="", seconds=0.0
        )
    return _outcome(path, source, record, time.monotonic() - begun, bound)


def _alive(workdir: Path) -> bool:
    try:
        return bool(json.loads(_quire(workdir, "status", "--json")).get("api"))
    except subprocess.CalledProcessError:
        return False


def corpus(data: Path, generated: Path, *, limit: int | None) -> list[tuple[Path, str]]:
    from shared.local.hostile_corpus import write_hostile_documents

    public = sorted(path for path in data.rglob("*") if path.is_file()) if data.exists() else []
    files = [(path, str(path.parent.relative_to(data))) for path in public]
    files += [(path, "generated") for path in write_hostile_documents(generated)]
    return files[:limit] if limit else files


def report(outcomes: list[Outcome], memory: dict[str, float], seconds: float) -> None:
    tally = Counter(f"{o.outcome}: {o.reason}" if o.outcome not in ("indexed",) else "indexed" for o in outcomes)
    print(f"\nSweep of {len(outcomes)} files in {seconds:.0f} s")
    print("\n| outcome | files |\n| --- | ---: |")
    for name, count in sorted(tally.items(), key=lambda item: (-item[1], item[0])):
        print(f"| {name} | {count} |")
    print("\nEvery file that did not end indexed, with what it was told:")
    for o in outcomes:
        if o.outcome != "indexed":
            told = " ".join(f"{o.sentence} {o.detail}".split())
            print(f"  {o.source}/{o.name}: {o.outcome} {o.reason}: {told[:220]}")
    print("\nSlowest ten:")
    for o in sorted(outcomes, key=lambda o: -o.seconds)[:10]:
        print(f"  {o.seconds:7.1f} s  {o.outcome:<10} {o.source}/{o.name} ({o.size:,} bytes)")
    print(
        f"\nStack resident memory (supervisor and its children): ready {memory.get('ready_mb', 0):.0f} MB,"
        f" peak {memory.get('peak_mb', 0):.0f} MB, at the end {memory.get('end_mb', 0):.0f} MB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sweep", description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA, help="folder of public files (default ../shared/data)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N files")
    parser.add_argument("--bound", type=float, default=FILE_BOUND_SECONDS, help="seconds before a file is hung")
    parser.add_argument("--max-rss-mb", type=float, default=8000, help="kill the stack past this resident memory")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"sweep: {args.data} is absent; only the generated documents are swept", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="quire-sweep-") as scratch:
        workdir = Path(scratch)
        files = corpus(args.data, workdir / "generated", limit=args.limit)
        print(f"Sweeping {len(files)} files through one local stack in {workdir}", flush=True)
        begun = time.monotonic()
        outcomes, memory = sweep(files, workdir, args.bound, args.max_rss_mb)
        elapsed = time.monotonic() - begun
    report(outcomes, memory, elapsed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps({"memory": memory, "seconds": round(elapsed, 1), "files": [asdict(o) for o in outcomes]}, indent=2)
    )
    broken = [o for o in outcomes if o.outcome in ("hung", "error")]
    return 1 if broken or "killed_after_files" in memory else 0


if __name__ == "__main__":
    sys.exit(main())
