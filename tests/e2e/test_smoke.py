"""`quire smoke` against a running local stack, as an operator runs it against a deployment: the command that
`docs/deployment.md` has them run after a first deploy is checked here, passing and failing. One stack for the
module; each run cleans up after itself, which the tests check. Tokens are minted and files listed in process
(what `quire token` and `quire files` do) and usage errors checked through `main`: a CLI process costs 0.4 s."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.adapters.local.jwt_tokens import LocalTokenIssuer
from shared.adapters.local.secret_files import read_or_create_secret
from shared.cli.app import main
from shared.cli.smoke_http import api_url_problem
from shared.domain.auth import Role, with_role
from shared.local.api_client import ApiClient
from shared.local.paths import StackPaths
from tests.conftest import REPO_ROOT
from tests.e2e.cli import quire

STEPS = ["health", "caller", "upload", "indexed", "search", "answer", "delete"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("smoke-stack")
    quire(workdir, "up")
    try:
        state = json.loads(StackPaths.in_directory(workdir).state.read_text(encoding="utf-8"))
        yield {"workdir": workdir, "api": state["api"]}
    finally:
        quire(workdir, "down", check=False)


@pytest.fixture(autouse=True)
def no_token_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUIRE_TOKEN", raising=False)


def token(stack: dict[str, Any], role: Role = Role.WRITE, tenant: str = "acme") -> str:
    """A token for `tenant` with `role` in the collection `smoke`, signed with the stack's key (as `quire token`)."""
    secret = read_or_create_secret(StackPaths.in_directory(stack["workdir"]).jwt_secret)
    return LocalTokenIssuer(secret).issue(with_role(tenant, "smoke-user", ["smoke"], role))


def step_lines(output: str) -> dict[str, str]:
    """Each step's final line by its name (the `…` lines while waiting are progress, not outcomes)."""
    lines = {}
    for line in output.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0] in ("ok", "FAIL") and fields[2] == "s":
            lines[fields[3]] = line
    return lines


def remaining_files(stack: dict[str, Any], tenant: str = "acme") -> list[Any]:
    listed: list[Any] = ApiClient(stack["api"], token(stack, Role.READ, tenant)).call("GET", "/v1/files")["files"]
    return listed


def start_quire(workdir: Path, *args: str, token: str | None = None) -> "subprocess.Popen[str]":
    """`quire` started in the background (tests/e2e/cli.py's environment), with QUIRE_TOKEN when given."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("DATABASE_URL", None)
    if token:
        env["QUIRE_TOKEN"] = token
    return subprocess.Popen(
        [sys.executable, "-m", "shared.cli", *args],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_smoke_passes_against_the_stack_and_leaves_nothing_behind(stack: dict[str, Any]) -> None:
    # The command a deployment is checked with: the API's URL and a token, nothing from the local stack.
    ran = quire(stack["workdir"], "smoke", "--api", stack["api"], "--token", token(stack), check=False)

    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = step_lines(ran.stdout)
    assert list(lines) == STEPS, ran.stdout
    assert all(line.split()[0] == "ok" for line in lines.values()), ran.stdout
    marker = ran.stdout.splitlines()[0].split("marker ")[1]
    assert marker.removeprefix("quiresmoke") in lines["upload"]
    assert "its citation resolves" in lines["search"] and "lines " in lines["search"]
    # No model runs locally: the answer is said to be evidence only, and the verdict says so too.
    assert "evidence only, not generated" in lines["answer"]
    verdict = ran.stdout.splitlines()[-1]
    assert verdict.startswith("PASS in ") and "evidence only" in verdict
    assert "a search no longer finds it" in lines["delete"]
    assert remaining_files(stack) == []


def test_concurrent_smokes_in_one_collection_each_check_their_own_document(stack: dict[str, Any]) -> None:
    # One with the local stack's own token (no --api), one pointed at the URL with the token in QUIRE_TOKEN;
    # both are tenant `local`, collection `smoke`: each must find, answer from and delete its own document.
    local = start_quire(stack["workdir"], "smoke")
    pointed = start_quire(stack["workdir"], "smoke", "--api", stack["api"], token=token(stack, tenant="local"))
    outputs = [run.communicate(timeout=240) for run in (local, pointed)]

    assert [local.returncode, pointed.returncode] == [0, 0], outputs
    markers = {stdout.splitlines()[0].split("marker ")[1] for stdout, _ in outputs}
    assert len(markers) == 2
    for stdout, stderr in outputs:
        assert list(step_lines(stdout)) == STEPS and stdout.splitlines()[-1].startswith("PASS"), stdout + stderr
    assert remaining_files(stack, "local") == []


def test_a_wrong_token_fails_with_a_clear_message_and_exit_1(stack: dict[str, Any]) -> None:
    ran = quire(stack["workdir"], "smoke", "--api", stack["api"], "--token", "not-a-token", check=False)

    assert ran.returncode == 1
    lines = step_lines(ran.stdout)
    assert list(lines) == ["health", "caller"] and "the API refused the token (HTTP 401" in lines["caller"]
    assert ran.stdout.splitlines()[-1].startswith("FAIL at caller")
    assert "Traceback" not in ran.stdout + ran.stderr


def test_a_read_only_token_is_told_the_role_it_lacks(stack: dict[str, Any]) -> None:
    ran = quire(stack["workdir"], "smoke", "--api", stack["api"], "--token", token(stack, Role.READ), check=False)

    assert ran.returncode == 1
    assert "grants the read role in 'smoke'" in step_lines(ran.stdout)["caller"]
    assert "upload" not in step_lines(ran.stdout)


def test_a_failure_after_the_upload_still_deletes_the_document(stack: dict[str, Any]) -> None:
    # --require-model fails where no model drafts answers (always, locally), after the upload, search and answer.
    ran = quire(
        stack["workdir"], "smoke", "--api", stack["api"], "--token", token(stack), "--require-model", check=False
    )

    assert ran.returncode == 1
    lines = step_lines(ran.stdout)
    assert lines["answer"].split()[0] == "FAIL" and "no model drafted the answer" in lines["answer"]
    assert lines["delete"].split()[0] == "ok"
    assert ran.stdout.splitlines()[-1].startswith("FAIL at answer")
    assert "Traceback" not in ran.stdout + ran.stderr
    assert remaining_files(stack) == []


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--api", "{api}"], "--api needs a token: --token, or QUIRE_TOKEN"),
        (["--api", "ftp://127.0.0.1/", "--token", "t"], "not an http(s) URL"),
        (["--timeout", "0"], "--timeout must be a positive number"),
        (["--colection", "smoke"], "unrecognized arguments"),
    ],
)
def test_bad_usage_exits_2_and_says_why(
    stack: dict[str, Any],
    arguments: list[str],
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(stack["workdir"])
    assert exit_status(["smoke", *(a.format(api=stack["api"]) for a in arguments)]) == 2

    printed = capsys.readouterr()
    assert said in printed.err and printed.out == ""


def test_without_api_and_without_a_local_stack_it_says_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert exit_status(["smoke"]) == 2
    assert "no --api, and no local stack runs in this directory" in capsys.readouterr().err


def exit_status(argv: list[str]) -> int:
    """`quire` run in process: its return value, or argparse's exit status."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)


def test_a_token_is_sent_in_clear_text_to_loopback_only() -> None:
    assert api_url_problem("https://abc123.execute-api.eu-west-1.amazonaws.com") is None
    assert api_url_problem("http://127.0.0.1:8000") is None and api_url_problem("http://[::1]:8000/") is None
    assert "clear text" in (api_url_problem("http://abc123.execute-api.eu-west-1.amazonaws.com") or "")
    assert "no query" in (api_url_problem("https://api.example.com/?stage=prod") or "")
