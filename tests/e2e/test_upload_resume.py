"""`quire upload` by parts against a running local stack, interrupted and resumed (bench/upload_resume.py): killed with
SIGKILL once half its parts are held, then `--resume` (the session written down in .quire/uploads/) sends only the
parts storage lacks and completes, the stored bytes identical to the file's; and a Ctrl-C, which prints the session
and the command that resumes it, then `--resume UPLOAD_ID`. `make bench` runs the kill at 1 GiB."""

import json
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from bench.upload_resume import (
    COLLECTION,
    MIB,
    PartGate,
    cli_environment,
    kill_and_resume,
    quire_command,
    signed_get_sha256,
    write_random_file,
)
from tests.e2e.cli import quire


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("resume-stack")
    quire(workdir, "up")
    try:
        state = json.loads((workdir / ".quire" / "state.json").read_text())
        yield {"workdir": workdir, "api": state["api"]}
    finally:
        quire(workdir, "down", check=False)


def test_an_upload_killed_halfway_is_resumed_sending_only_the_parts_storage_lacks(running: dict[str, Any]) -> None:
    workdir, api = running["workdir"], running["api"]
    path = workdir / "survey-scans.pdf"
    try:
        expected = write_random_file(path, 64 * MIB)
        # 13 parts of 5 MiB: six reach storage, then the CLI (three PUTs in flight, held by the gate) is killed.
        gate = PartGate(let_through=6)
        outcome = kill_and_resume(workdir, api, path, gate=gate)

        seen = (gate.received, gate.forwarded, gate.held, outcome.held_at_kill, outcome.resume_output[-600:])
        assert outcome.part_count == 13 and len(outcome.held_at_kill) == 6, seen
        assert outcome.file_state == "stored", seen
        assert outcome.stored_sha256 == expected
        # Every part reached storage once; the only parts sent twice are those in flight at the kill (at most 3).
        assert sorted(gate.forwarded) == list(range(1, 14)) and set(gate.forwarded.values()) == {1}, seen
        sent_twice = {number for number, count in gate.received.items() if count > 1}
        assert sent_twice == set(gate.held) and 1 <= len(gate.held) <= 3, seen
        assert not sent_twice & set(outcome.held_at_kill), seen
        assert "6 of 13 parts were held and match the file; sent 7" in outcome.resume_output, seen
        # Complete: the session's note in .quire/uploads/ is gone.
        assert list((workdir / ".quire" / "uploads").glob("*.json")) == []
    finally:
        path.unlink(missing_ok=True)


def api_get(api: str, token: str, path: str) -> Any:
    request = urllib.request.Request(f"{api}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_ctrl_c_prints_the_session_and_resume_with_its_id_completes(running: dict[str, Any]) -> None:
    workdir, api = running["workdir"], running["api"]
    path = workdir / "minutes.pdf"
    gate = PartGate(let_through=1)
    try:
        expected = write_random_file(path, 16 * MIB)
        env = cli_environment(gate.start())
        upload = subprocess.Popen(
            quire_command("upload", str(path), "--multipart", "--part-size", "5", "--collection", COLLECTION),
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # A test run started in the background (`make test &`) ignores SIGINT, and so would the CLI it starts:
            # Python keeps an inherited SIG_IGN. The Ctrl-C below must reach it as a terminal's would.
            preexec_fn=_default_sigint,  # noqa: PLW1509 - only restores one signal's default before exec
        )
        # The first part stored, the next ones held in flight: then Ctrl-C, and the held PUTs dropped (a part may still
        # be sent again and stored before the CLI has seen the Ctrl-C: the resume reads what is held).
        while not gate.held:
            assert upload.poll() is None, upload.communicate()
            time.sleep(0.02)
        upload.send_signal(signal.SIGINT)
        gate.release()
        _, stderr = upload.communicate(timeout=120)
        assert upload.returncode == 130, stderr
        said = re.search(r"Resume it with: quire upload (\S+) --resume ([0-9a-f-]{36})", stderr)
        assert said is not None and said.group(1) == str(path), stderr

        token = quire(workdir, "token", "--tenant", "local", "--write", COLLECTION).stdout.strip()
        held = api_get(api, token, f"/v1/uploads/{said.group(2)}")["parts"]
        assert 1 <= len(held) < 4, held
        resumed = subprocess.run(
            quire_command("upload", str(path), "--resume", said.group(2), "--collection", COLLECTION),
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert resumed.returncode == 0, resumed.stderr
        told = f"{len(held)} of 4 parts were held and match the file; sent {4 - len(held)}"
        assert told in resumed.stderr, resumed.stderr
        file_id = resumed.stdout.split()[0]
        assert signed_get_sha256(api, token, file_id) == expected
    finally:
        gate.stop()
        path.unlink(missing_ok=True)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
