"""An upload by parts killed and resumed, end to end on a running local stack: `quire upload FILE --multipart` is
killed with SIGKILL once about half its parts are held (as `GET /v1/uploads/{id}` lists them), then
`quire upload FILE --resume` (the session found in .quire/uploads/) sends the rest and completes; the stored bytes
must be the file's (the SHA-256 of a signed GET), and no part may have been sent twice but those in flight at the
kill. Used by tests/e2e/test_upload_resume.py (64 MiB, `make test`) and bench/multipart.py (1 GiB, `make bench`).

With `gate`, the CLI sends through `PartGate`, a loopback forward proxy (HTTP_PROXY) that counts every part's PUTs
and lets only the first `kill_at` through until the CLI is killed: the kill lands exactly at half, and the PUTs in
flight then never reach storage. Without it (the bench, where a proxy in the path would slow what is timed) the CLI
sends straight to the local S3 and is killed when the poll first sees half its parts held.
"""

import hashlib
import http.client
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
COLLECTION = "docs"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "transfer-encoding"})


def write_random_file(path: Path, size: int) -> str:
    """A file of `size` random bytes that starts as a PDF does (so it is stored; its parsing then fails at once,
    sparing the stack an index of random text); its SHA-256 in hex. Written a few MiB at a time."""
    digest = hashlib.sha256()
    with path.open("wb") as out:
        head = b"%PDF-1.7\n%"
        out.write(head)
        digest.update(head)
        left = size - len(head)
        while left:
            chunk = os.urandom(min(left, 8 * MIB))
            out.write(chunk)
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


@dataclass
class PartGate:
    """A forward proxy on loopback: each request forwarded as it came, to loopback only; each part's PUT counted as
    it arrives (`received`) and as it reaches storage (`forwarded`). Past `let_through` forwarded parts, a PUT is
    held unanswered until `release()`, then dropped: it never reaches storage."""

    let_through: int | None = None
    received: Counter[int] = field(default_factory=Counter)
    forwarded: Counter[int] = field(default_factory=Counter)
    held: list[int] = field(default_factory=list)
    _released: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> str:
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:  # quiet: the test reads the counters
                return

            def _forward(self) -> None:
                gate.handle(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward  # noqa: N815 - http.server's names

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="part-gate", daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def release(self) -> None:
        """Drop the held PUTs and let every later one through."""
        with self._lock:
            self.let_through = None
        self._released.set()

    def handle(self, request: http.server.BaseHTTPRequestHandler) -> None:
        target = urllib.parse.urlsplit(request.path)
        if target.hostname not in _LOOPBACK or target.port is None:
            request.send_error(403, "this proxy forwards to loopback only")
            return
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else None
        part = urllib.parse.parse_qs(target.query).get("partNumber")
        if request.command == "PUT" and part:
            number = int(part[0])
            with self._lock:
                self.received[number] += 1
                blocked = self.let_through is not None and sum(self.forwarded.values()) >= self.let_through
                if blocked:
                    self.held.append(number)
                else:
                    self.forwarded[number] += 1
            if blocked:
                self._released.wait()
                request.close_connection = True
                return
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
        try:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
            path = target.path + (f"?{target.query}" if target.query else "")
            connection.request(request.command, path, body=body, headers=headers)
            answer = connection.getresponse()
            content = answer.read()
        finally:
            connection.close()
        try:
            request.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in _HOP_BY_HOP and name.lower() != "content-length":
                    request.send_header(name, value)
            request.send_header("Content-Length", str(len(content)))
            request.end_headers()
            if request.command != "HEAD":
                request.wfile.write(content)
        except (BrokenPipeError, ConnectionResetError):
            request.close_connection = True  # the client was killed while its answer came back


def cli_environment(proxy: str | None) -> dict[str, str]:
    """The environment `quire` runs in: this checkout's code, and the proxy when there is one (and no other)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("DATABASE_URL", None)
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(name, None)
    env["NO_PROXY"] = env["no_proxy"] = ""
    if proxy:
        env["http_proxy"] = env["HTTP_PROXY"] = proxy
    return env


def quire_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "shared.cli", *args]


def _json(api: str, token: str, method: str, path: str) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    request = urllib.request.Request(f"{api}{path}", method=method, headers=headers)  # noqa: S310 - loopback
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the local stack, on loopback
        return json.loads(response.read())


def signed_get_sha256(api: str, token: str, file_id: str) -> str:
    """The stored bytes' SHA-256, read through the signed GET the API hands out, a MiB at a time."""
    url = _json(api, token, "GET", f"/v1/files/{file_id}/content")["url"]
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 - the local S3, on loopback
        while chunk := response.read(MIB):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class Outcome:
    upload_id: str
    file_id: str
    part_count: int
    held_at_kill: list[int]
    first_seconds: float  # from the first run's start to the kill
    resume_seconds: float  # the resume's run, start to exit (the session read, parts checked and sent, completed)
    resume_output: str
    file_state: str
    stored_sha256: str
    gate: PartGate | None


def kill_and_resume(
    workdir: Path, api: str, path: Path, *, part_mib: int = 5, gate: PartGate | None = None, timeout: float = 600
) -> Outcome:
    """Upload `path` by parts with the CLI from `workdir` (a running stack's directory), SIGKILL it once about half
    its parts are held, resume it, and read back what was stored."""
    token = subprocess.run(
        quire_command("token", "--tenant", "local", "--write", COLLECTION),  # the session routes take the write role
        cwd=workdir,
        env=cli_environment(None),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    proxy = gate.start() if gate is not None else None
    try:
        env = cli_environment(proxy)
        uploads = workdir / ".quire" / "uploads"
        before = set(uploads.glob("*.json")) if uploads.exists() else set()
        begun = time.perf_counter()
        first = subprocess.Popen(
            quire_command("upload", str(path), "--multipart", "--part-size", str(part_mib), "--collection", COLLECTION),
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            session = _wait_for_session(uploads, before, first, timeout)
            held = _wait_until_half_held(api, token, session, first, gate=gate, timeout=timeout)
            first.send_signal(signal.SIGKILL)
            killed_after = time.perf_counter() - begun
        finally:
            first.kill()
            first.communicate()
        if gate is not None:
            gate.release()
        listed = _json(api, token, "GET", f"/v1/uploads/{session['uploadId']}")["parts"]
        held_at_kill = sorted(part["partNumber"] for part in listed)
        assert len(held_at_kill) >= len(held), (held, held_at_kill)

        begun = time.perf_counter()
        resumed = subprocess.run(
            quire_command("upload", str(path), "--resume"),
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        resume_seconds = time.perf_counter() - begun
        if resumed.returncode != 0:
            raise AssertionError(f"quire upload --resume exited {resumed.returncode}:\n{resumed.stderr[-3000:]}")
        record = _json(api, token, "GET", f"/v1/files/{session['fileId']}")
        return Outcome(
            upload_id=session["uploadId"],
            file_id=session["fileId"],
            part_count=session["partCount"],
            held_at_kill=held_at_kill,
            first_seconds=killed_after,
            resume_seconds=resume_seconds,
            resume_output=resumed.stdout + resumed.stderr.replace("\r", "\n"),
            file_state=record["current"]["state"],
            stored_sha256=signed_get_sha256(api, token, session["fileId"]),
            gate=gate,
        )
    finally:
        if gate is not None:
            gate.stop()


def _wait_for_session(
    uploads: Path, before: set[Path], process: subprocess.Popen[bytes], timeout: float
) -> dict[str, Any]:
    """The session the CLI wrote down as it opened (.quire/uploads/)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in set(uploads.glob("*.json")) - before if uploads.exists() else ():
            try:
                return dict(json.loads(entry.read_text()))
            except ValueError:
                continue  # being written
        if process.poll() is not None:
            raise AssertionError(f"quire upload ended before its session opened: {process.communicate()}")
        time.sleep(0.01)
    raise AssertionError("no upload session was written down in time")


def _wait_until_half_held(
    api: str,
    token: str,
    session: dict[str, Any],
    process: subprocess.Popen[bytes],
    *,
    gate: PartGate | None,
    timeout: float,
) -> list[int]:
    """Poll the session until half its parts are held; the CLI must still be running (with the gate it waits on
    the PUTs held)."""
    upload_id, part_count = session["uploadId"], session["partCount"]
    half = part_count // 2
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = [part["partNumber"] for part in _json(api, token, "GET", f"/v1/uploads/{upload_id}")["parts"]]
        if len(held) >= half:
            return held
        if process.poll() is not None:
            raise AssertionError(f"quire upload ended before half its parts were held: {process.communicate()}")
        time.sleep(0.005 if gate is None else 0.05)
    raise AssertionError(f"half of {part_count} parts were not held in time")
