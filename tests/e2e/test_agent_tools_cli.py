"""`quire tools` against a running local stack, as a user would: list the tools, call one, page a read, and get
another tenant's id refused as not found, through the same HTTP twin an agent without MCP uses."""

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cli import quire

CALLER = ("--tenant", "acme", "--collections", "notes")


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    quire(tmp_path, "down", check=False)


def test_quire_tools_lists_and_calls_the_tools(workdir: Path) -> None:
    quire(workdir, "up")
    listing = quire(workdir, "tools", *CALLER).stdout.splitlines()
    assert len(listing) == 16  # the seed's fifteen and answer
    assert listing[0].split()[:2] == ["list_files", "reads"]
    assert any(line.split()[:2] == ["create_pdf", "writes"] for line in listing)
    shown = json.loads(quire(workdir, "tools", "show", "read_file", *CALLER).stdout)
    assert "fileId" in shown["inputSchema"]["properties"]

    note = workdir / "notes.md"
    note.write_text("# Field notes\n\n" + "The okapi was seen at dawn near the river. " * 3000, encoding="utf-8")
    quire(workdir, "upload", str(note), "--collection", "notes", "--tenant", "acme")
    files = json.loads(quire(workdir, "tools", "call", "list_files", "{}", *CALLER).stdout)["files"]
    file_id = files[0]["fileId"]

    read = json.loads(quire(workdir, "tools", "call", "read_file", json.dumps({"fileId": file_id}), *CALLER).stdout)
    assert read["nextOffset"] == read["byteLength"] and read["totalBytes"] == note.stat().st_size
    assert read["content"].startswith("⟦quire-data ") and "The okapi was seen at dawn" in read["content"]
    last = json.loads(
        quire(workdir, "tools", "call", "read_file", json.dumps({"fileId": file_id, "offset": 128_000}), *CALLER).stdout
    )
    assert last["nextOffset"] is None

    deadline = time.monotonic() + 60
    while True:
        window = quire(workdir, "tools", "call", "extract_text", json.dumps({"fileId": file_id}), *CALLER, check=False)
        if window.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert window.returncode == 0, window.stderr
    assert "# Field notes" in json.loads(window.stdout)["content"]

    stranger = quire(
        workdir,
        "tools",
        "call",
        "extract_text",
        json.dumps({"fileId": file_id}),
        "--tenant",
        "globex",
        "--collections",
        "notes",
        check=False,
    )
    missing = quire(
        workdir, "tools", "call", "extract_text", json.dumps({"fileId": str(uuid.uuid4())}), *CALLER, check=False
    )
    assert stranger.returncode == missing.returncode == 1
    assert "not_found" in stranger.stderr and stranger.stderr == missing.stderr
