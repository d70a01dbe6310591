"""A crash drill for the local stack: uploads, deletes and reads go on while a process of the stack is killed with
SIGKILL at a random moment, again and again; after each restart, and at the end, nothing acknowledged is lost.

Acknowledged means answered 2xx: an upload whose presigned POST S3 answered 204, a deletion the API answered 202,
a version a read saw `indexed`. What was cut off before its answer may or may not have happened (as on AWS) but
is never half done. The targets, in turn: the supervisor (API, S3, workers), the embedded PostgreSQL, a sandboxed
parser child, and all of them at once. Used by tests/e2e/test_crash_durability.py (a few kills in `make test`,
many in `make crash`).
"""

import itertools
import json
import os
import random
import signal
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.client import HTTPException
from pathlib import Path
from typing import Any

from urllib3 import encode_multipart_formdata

from tests.builders.pdf import pdf_of
from tests.e2e.cli import quire

TARGETS = ("supervisor", "postgres", "parser", "everything")
TENANT, COLLECTION = "crash", "docs"
# Enough that kills land during uploads, processing and deletions; few enough that each cycle's work is done
# (and checked) in seconds.
UPLOADS_PER_CYCLE = 14
_WORDS = [
    "ledger",
    "harbour",
    "quartz",
    "meadow",
    "lantern",
    "copper",
    "orchid",
    "falcon",
    "summit",
    "velvet",
    "granite",
    "willow",
    "beacon",
    "ember",
    "canyon",
    "cobalt",
    "saffron",
    "thimble",
    "glacier",
    "mosaic",
]
_UNANSWERED = (urllib.error.URLError, ConnectionError, HTTPException, socket.timeout, TimeoutError)


@dataclass
class Answer:
    status: int | None  # None: no answer (the process was gone)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Ledger:
    """What the stack acknowledged, and every answer it gave."""

    uploads: dict[str, bytes] = field(default_factory=dict)  # file id → the bytes S3 acknowledged
    deleted: set[str] = field(default_factory=set)
    # Deletions sent and never answered (the process died first): each may or may not have happened.
    maybe_deleted: set[str] = field(default_factory=set)
    indexed: dict[str, str] = field(default_factory=dict)  # file id → a version seen indexed
    answers: Counter[tuple[str, int | None]] = field(default_factory=Counter)
    server_errors: list[dict[str, Any]] = field(default_factory=list)
    unavailable: list[float] = field(default_factory=list)  # when each 503 was answered
    kills: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def heard(self, route: str, answer: Answer) -> None:
        with self.lock:
            self.answers[(route, answer.status)] += 1
            if answer.status == 503 and answer.headers.get("Retry-After"):
                self.unavailable.append(time.monotonic())
            elif answer.status is not None and answer.status >= 500:
                self.server_errors.append({"route": route, "status": answer.status, "body": str(answer.body)[:300]})

    def writes(self) -> int:
        return len(self.uploads) + len(self.deleted)


class Api:
    def __init__(self, base: str, token: str, ledger: Ledger) -> None:
        self.base, self.token, self.ledger = base, token, ledger

    def call(self, method: str, path: str, route: str, body: Any = None) -> Answer:
        request = urllib.request.Request(
            f"{self.base}{path}",
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            method=method,
        )
        answer = _exchange(request)
        self.ledger.heard(route, answer)
        return answer


def _exchange(request: urllib.request.Request, timeout: float = 20) -> Answer:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            return Answer(response.status, _decoded(raw), dict(response.headers))
    except urllib.error.HTTPError as error:
        return Answer(error.code, _decoded(error.read()), dict(error.headers))
    except _UNANSWERED:
        return Answer(None)


def _decoded(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw[:300]


def document(number: int, chance: random.Random) -> tuple[str, bytes, str]:
    """A small document with a word of its own: text, Markdown or a PDF (the PDFs go through a parser child)."""
    words = " ".join(chance.choice(_WORDS) for _ in range(60))
    own = f"crashword{number:05d}"
    kind = number % 3
    if kind == 0:
        return f"note-{number}.txt", f"{own} {words}\n".encode(), "text/plain"
    if kind == 1:
        return f"page-{number}.md", f"# Note {own}\n\n{words}\n".encode(), "text/markdown"
    return f"report-{number}.pdf", pdf_of(f"{own} {words}", words), "application/pdf"


class Drill:
    def __init__(self, workdir: Path, *, seed: int) -> None:
        self.workdir = workdir
        self.ledger = Ledger()
        self.chance = random.Random(seed)
        self._numbers = itertools.count()
        self._uploads_this_cycle = 0
        self._api: Api | None = None

    # -- the stack ----------------------------------------------------------------------------------------------

    def up(self) -> None:
        quire(self.workdir, "up")
        state = json.loads((self.workdir / ".quire" / "state.json").read_text())
        token = quire(self.workdir, "token", "--tenant", TENANT, "--write", COLLECTION).stdout.strip()
        self._api = Api(state["api"], token, self.ledger)

    @property
    def api(self) -> Api:
        assert self._api is not None
        return self._api

    def supervisor_pid(self) -> int:
        return int(json.loads((self.workdir / ".quire" / "state.json").read_text())["pid"])

    def postmaster_pid(self) -> int:
        return int((self.workdir / ".quire" / "pgdata" / "postmaster.pid").read_text().splitlines()[0])

    def healthy(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _exchange(urllib.request.Request(f"{self.api.base}/v1/health"), timeout=5).status == 200:
                return
            time.sleep(0.2)
        raise AssertionError(f"the stack did not come back within {timeout}s")

    # -- the traffic --------------------------------------------------------------------------------------------

    def upload_one(self) -> None:
        if self._uploads_this_cycle >= UPLOADS_PER_CYCLE:
            return
        self._uploads_this_cycle += 1
        number = next(self._numbers)
        filename, content, media_type = document(number, self.chance)
        ticket = self.api.call(
            "POST",
            "/v1/uploads",
            "POST /v1/uploads",
            {"collectionId": COLLECTION, "filename": filename, "mediaType": media_type, "byteSize": len(content)},
        )
        if ticket.status != 201:
            return
        fields: dict[str, Any] = dict(ticket.body["upload"]["fields"])
        fields["file"] = (filename, content, media_type)
        body, content_type = encode_multipart_formdata(fields)
        posted = _exchange(
            urllib.request.Request(
                ticket.body["upload"]["url"], data=body, headers={"Content-Type": content_type}, method="POST"
            )
        )
        self.ledger.heard("POST (presigned upload)", posted)
        if posted.status is not None and 200 <= posted.status < 300:
            with self.ledger.lock:
                self.ledger.uploads[ticket.body["fileId"]] = content

    def delete_one(self) -> None:
        with self.ledger.lock:
            candidates = sorted(set(self.ledger.uploads) - self.ledger.deleted)
        if len(candidates) < 4:
            return
        file_id = self.chance.choice(candidates)
        with self.ledger.lock:
            self.ledger.maybe_deleted.add(file_id)
        answer = self.api.call("DELETE", f"/v1/files/{file_id}", "DELETE /v1/files/{id}")
        with self.ledger.lock:
            if answer.status == 202:
                self.ledger.deleted.add(file_id)
            # No answer, or a 503 ("may not have been carried out"): it may be deleted or not, until it is read.
            if answer.status is not None and answer.status != 503:
                self.ledger.maybe_deleted.discard(file_id)

    def read_one(self) -> None:
        with self.ledger.lock:
            candidates = sorted(set(self.ledger.uploads) - self.ledger.deleted)
        if not candidates:
            return
        file_id = self.chance.choice(candidates)
        seen = self.api.call("GET", f"/v1/files/{file_id}", "GET /v1/files/{id}")
        if seen.status == 200 and seen.body["current"]["processingState"] == "indexed":
            with self.ledger.lock:
                self.ledger.indexed.setdefault(file_id, seen.body["current"]["versionId"])
            self.api.call("GET", f"/v1/files/{file_id}/document", "GET /v1/files/{id}/document")

    def traffic(self, until: threading.Event) -> list[threading.Thread]:
        def loop(action: Callable[[], None], pause: float) -> None:
            while not until.is_set():
                action()
                until.wait(pause)

        threads = [
            threading.Thread(target=loop, args=(self.upload_one, 0.15), name="uploads-1"),
            threading.Thread(target=loop, args=(self.upload_one, 0.2), name="uploads-2"),
            threading.Thread(target=loop, args=(self.delete_one, 0.4), name="deletes"),
            threading.Thread(target=loop, args=(self.read_one, 0.1), name="reads"),
        ]
        for thread in threads:
            thread.start()
        return threads

    # -- the kills ----------------------------------------------------------------------------------------------

    def parser_children(self) -> list[int]:
        """The supervisor's children (each thread's: the workers start the sandboxed parsers)."""
        supervisor = self.supervisor_pid()
        found: list[int] = []
        for task in Path(f"/proc/{supervisor}/task").glob("*"):
            try:
                found.extend(int(pid) for pid in (task / "children").read_text(encoding="ascii").split())
            except (OSError, ValueError):
                continue
        return found

    def kill(self, target: str) -> str:
        """SIGKILL the target; returns what was killed (a parser child may not be running: then the supervisor)."""
        if target == "parser":
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                children = self.parser_children()
                if children:
                    try:
                        os.kill(children[0], signal.SIGKILL)
                    except ProcessLookupError:  # it ended between the listing and the kill: look again
                        continue
                    return "parser"
                time.sleep(0.02)
            target = "supervisor"
        if target in ("postgres", "everything"):
            os.kill(self.postmaster_pid(), signal.SIGKILL)
        if target in ("supervisor", "everything"):
            os.kill(self.supervisor_pid(), signal.SIGKILL)
        return target

    def cycle(self, number: int) -> None:
        """Traffic, a kill at a random moment, the traffic stopped, the stack back; then what was acknowledged
        is checked."""
        stop = threading.Event()
        self._uploads_this_cycle = 0
        threads = self.traffic(stop)
        time.sleep(self.chance.uniform(0.5, 4.0))
        wanted = TARGETS[number % len(TARGETS)]
        begun = time.monotonic()
        killed = self.kill(wanted)
        time.sleep(0.3)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        if killed in ("supervisor", "everything"):
            self.up()
        self.healthy()
        self.ledger.kills.append(
            {"target": killed, "window": (begun, time.monotonic()), "writesSoFar": self.ledger.writes()}
        )
        self.check_acknowledged()

    # -- the checks ---------------------------------------------------------------------------------------------

    def check_acknowledged(self) -> None:
        """Every acknowledged upload is a file (never a 5xx, never forgotten); every deletion stays deleted; every
        version seen indexed still reads its document."""
        with self.ledger.lock:
            uploads, deleted, indexed = dict(self.ledger.uploads), set(self.ledger.deleted), dict(self.ledger.indexed)
            maybe_deleted = set(self.ledger.maybe_deleted)
        for file_id in uploads:
            answer = self.api.call("GET", f"/v1/files/{file_id}", "GET /v1/files/{id}")
            if file_id in deleted:
                assert answer.status == 404, (file_id, answer)
            elif file_id in maybe_deleted and answer.status == 404:
                self._settle_deletion(file_id)
            else:
                # Pending for a moment when its Object Created event died with the stack: the sweep the stack runs
                # as it starts completes it (wait_until_processed sees it through).
                assert answer.status == 200, (file_id, answer)
                assert answer.body["current"]["state"] in ("pending", "stored"), (file_id, answer.body)
        with self.ledger.lock:
            deleted = set(self.ledger.deleted)
        for file_id, version_id in indexed.items():
            if file_id in deleted:
                continue
            answer = self.api.call(
                "GET", f"/v1/files/{file_id}/document?versionId={version_id}", "GET /v1/files/{id}/document"
            )
            assert answer.status == 200, (file_id, answer)

    def _settle_deletion(self, file_id: str) -> None:
        """A deletion whose answer was cut off did happen: from now on it counts as acknowledged."""
        with self.ledger.lock:
            self.ledger.maybe_deleted.discard(file_id)
            self.ledger.deleted.add(file_id)

    def wait_until_processed(self, timeout: float = 600) -> dict[str, str]:
        """Every acknowledged upload that was not deleted ends indexed or failed; their states."""
        deadline = time.monotonic() + timeout
        while True:
            states = dict(self._processing_states())
            if all(state in ("indexed", "failed") for state in states.values()) or time.monotonic() > deadline:
                return states
            time.sleep(0.5)

    def _processing_states(self) -> Iterator[tuple[str, str]]:
        """Each acknowledged, undeleted upload's processing state (or its version's state, while not stored),
        from the listing a page at a time."""
        with self.ledger.lock:
            remaining = set(self.ledger.uploads) - self.ledger.deleted
        listed: dict[str, dict[str, Any]] = {}
        cursor = ""
        while True:
            page = self.api.call("GET", f"/v1/files?collectionId={COLLECTION}&limit=100{cursor}", "GET /v1/files")
            assert page.status == 200, page
            listed.update({item["fileId"]: item["current"] for item in page.body["files"]})
            if not page.body["nextCursor"]:
                break
            cursor = f"&cursor={urllib.parse.quote(page.body['nextCursor'])}"
        for file_id in sorted(remaining):
            if file_id not in listed and file_id in self.ledger.maybe_deleted:
                self._settle_deletion(file_id)
                continue
            assert file_id in listed, f"{file_id} was acknowledged and is not listed"
            current = listed[file_id]
            yield file_id, current["processingState"] if current["state"] == "stored" else current["state"]

    def check_bytes(self) -> int:
        """Every acknowledged upload reads back byte for byte through its signed URL; how many were read."""
        with self.ledger.lock:
            remaining = {k: v for k, v in self.ledger.uploads.items() if k not in self.ledger.deleted}
        for file_id, content in remaining.items():
            signed = self.api.call("GET", f"/v1/files/{file_id}/content", "GET /v1/files/{id}/content")
            assert signed.status == 200, (file_id, signed)
            read = urllib.request.urlopen(signed.body["url"], timeout=30).read()
            assert read == content, file_id
        return len(remaining)

    def unavailable_outside_the_kills(self) -> list[float]:
        """503s answered when no kill had just happened (a 503 is the honest answer while PostgreSQL restarts)."""
        windows = [kill["window"] for kill in self.ledger.kills]
        return [t for t in self.ledger.unavailable if not any(start <= t <= end + 1 for start, end in windows)]
