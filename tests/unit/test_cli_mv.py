"""`quire mv FILE_ID --to COLLECTION`: the token it mints (admin where the file is and where it goes), the call it
makes, and how a refusal is reported (the route itself is tests/integration/test_file_moves.py)."""

import argparse
from typing import Any

import pytest

from shared import cli
from shared.cli import files
from shared.domain.auth import Role
from shared.local.api_client import ApiError

MOVED = {
    "fileId": "7c1f",
    "collectionId": "board",
    "filename": "notes.md",
    "current": {"state": "stored", "byteSize": 12, "declaredByteSize": 12},
}


class FakeApiClient:
    """Records the calls; answers with `answer`, or raises it when it is an ApiError."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, Any]] = []

    def call(self, method: str, path: str, body: Any = None) -> Any:
        self.calls.append((method, path, body))
        if isinstance(self.answer, ApiError):
            raise self.answer
        return self.answer


def run_mv(monkeypatch: pytest.MonkeyPatch, answer: Any, *argv: str) -> tuple[int, FakeApiClient, list[Any]]:
    client = FakeApiClient(answer)
    minted: list[Any] = []

    def fake_api(args: argparse.Namespace, collections: list[str], role: Role) -> FakeApiClient:
        minted.append((sorted(collections), role))
        return client

    monkeypatch.setattr(files, "collections_client", fake_api)
    return cli.main(["mv", *argv]), client, minted


def test_mv_asks_for_admin_in_both_collections_and_prints_the_moved_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, client, minted = run_mv(monkeypatch, MOVED, "7c1f", "--to", "board", "--collections", "docs")
    assert status == 0
    assert minted == [(["board", "docs"], Role.ADMIN)]
    assert client.calls == [("POST", "/v1/files/7c1f/move", {"collectionId": "board"})]
    assert "board" in capsys.readouterr().out


def test_mv_reports_a_refusal_and_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    refusal = ApiError(403, {"error": "forbidden", "message": "this needs the admin role in collection 'board'"})
    status, _, _ = run_mv(monkeypatch, refusal, "7c1f", "--to", "board")
    assert status == 1
    assert "quire mv: 7c1f:" in capsys.readouterr().err
