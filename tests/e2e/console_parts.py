"""The console's uploads by parts, driven in a real browser by tests/e2e/test_console.py on its stack: config.json (as
the test serves it) sends files from 8 MiB by parts of 5 MiB; an 11 MiB file's first part stored and the others held
in flight (the test stands between the browser and the store), the page reloaded, the same file chosen again: only
the missing parts are PUT, and the stored bytes are the file's; a file whose noted session was aborted meanwhile
starts again, saying so.
"""

import hashlib
import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.console_metadata import api_json

MIB = 1024 * 1024
CONFIG = {"apiBase": "", "auth": {"kind": "local"}, "uploads": {"byPartsFrom": 8 * MIB, "partSize": 5 * MIB}}
NOTES_KEY = "quire.uploadSessions"


def serve_parts_config(page: Any) -> None:
    """The console's config.json with uploads by parts from 8 MiB, 5 MiB each (the local stack serves none)."""
    page.route("**/console/config.json", lambda route: route.fulfill(json=CONFIG))


def document_of(size: int, word: str) -> bytes:
    """A text file of `size` bytes: a sentence with `word`, then a numbered line each MiB between blank lines (each
    part's bytes its own; plain text, which extracts in about a second: the Markdown parser takes some 20 s over
    11 MiB of blank lines)."""
    content = bytearray(f"Tide tables. The {word} tide table lists the spring tides.\n".encode())
    while len(content) < size:
        content += b"\n" * (MIB - 40) + f"line {len(content)} of {word}\n".encode()
    return bytes(content[:size])


def _part_of(url: str) -> int | None:
    found = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("partNumber")
    return int(found[0]) if found else None


@dataclass
class PartPuts:
    """Every part PUT the page sends (counted as the browser sends it), and a gate that lets `let_through` of them
    reach the store and holds the rest unanswered (in flight) until the page goes."""

    let_through: int = 0
    sent: list[int] = field(default_factory=list)
    passed: list[int] = field(default_factory=list)
    held: list[int] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on("request", self._seen)

    def _seen(self, request: Any) -> None:
        part = _part_of(request.url)
        if request.method == "PUT" and part is not None:
            self.sent.append(part)

    def _gate(self, route: Any) -> None:
        part = _part_of(route.request.url)
        if route.request.method != "PUT" or part is None or len(self.passed) < self.let_through:
            if route.request.method == "PUT" and part is not None:
                self.passed.append(part)
            route.continue_()
        else:
            self.held.append(part)  # never answered: the reload cancels it

    def _matches(self, url: str) -> bool:
        return "partNumber=" in url

    def close(self, page: Any) -> None:
        page.route(self._matches, self._gate)

    def open(self, page: Any) -> None:
        page.unroute(self._matches, self._gate)


def wait_for(page: Any, condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """`condition()` once it holds; between tries the page's events are handled (Playwright's synchronous API runs
    route handlers only inside its own calls)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        page.wait_for_timeout(50)
    raise AssertionError(f"{what}: not within {timeout} s")


def held_parts(api: str, token: str, upload_id: str) -> list[int]:
    return sorted(part["partNumber"] for part in api_json(api, token, "GET", f"/v1/uploads/{upload_id}")["parts"])


def stored_sha256(api: str, token: str, file_id: str) -> str:
    url = api_json(api, token, "GET", f"/v1/files/{file_id}/content")["url"]
    with urllib.request.urlopen(url, timeout=60) as response:
        return hashlib.sha256(response.read()).hexdigest()


def notes_of(page: Any) -> dict[str, Any]:
    return dict(json.loads(page.evaluate(f"localStorage.getItem('{NOTES_KEY}') || '{{}}'")))


def upload_row(page: Any, filename: str) -> Any:
    return page.locator(f'li.upload[data-filename="{filename}"]').last


def started_by_parts(page: Any, path: Path, puts: PartPuts) -> str:
    """Choose `path` with the gate closed; the upload id once the page has noted its session."""
    puts.close(page)
    page.locator("#upload-picker").set_input_files(str(path))
    row = upload_row(page, path.name)
    upload_id = wait_for(page, lambda: row.get_attribute("data-upload-id"), "the session's id on the row")
    wait_for(page, lambda: any(n["uploadId"] == upload_id for n in notes_of(page).values()), "the session noted")
    return str(upload_id)
