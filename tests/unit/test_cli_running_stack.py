"""`running_stack` (shared/cli/common.py), the one way a `quire` command starts, uses and stops the local stack:
stopped again only when the command started it, its container closed on the way out, a failed start reported."""

from typing import Any

import pytest

from shared import bootstrap, cli
from shared.cli import common
from shared.local import stack as local_stack

STATE = {"pid": 7, "api": "http://127.0.0.1:1"}


class FakeContainer:
    def __init__(self, settings: object = None) -> None:
        self.closed = False
        self.database = self

    def close(self) -> None:
        self.closed = True


def fake_stack(monkeypatch: pytest.MonkeyPatch, *, running: bool, fails: bool = False) -> list[str]:
    events: list[str] = []

    def up(paths: Any) -> tuple[dict[str, Any], bool]:
        if fails:
            raise local_stack.StackError("port 5432 is taken")
        events.append("up")
        return STATE, not running

    def down(paths: Any) -> bool:
        events.append("down")
        return True

    monkeypatch.setattr(local_stack, "up", up)
    monkeypatch.setattr(local_stack, "down", down)
    monkeypatch.setattr(local_stack, "running_state", lambda paths: STATE if running or events else None)
    return events


def test_a_stack_the_command_started_is_stopped_after_its_container_is_closed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    events = fake_stack(monkeypatch, running=False)
    monkeypatch.setattr(bootstrap, "Container", FakeContainer)
    monkeypatch.setattr(local_stack, "settings_for", lambda state: None)
    with common.running_stack("eval", stopped_note="stopped") as stack:
        assert (stack.started, stack.state) == (True, STATE)
        container = stack.container
    assert isinstance(container, FakeContainer) and container.closed
    assert events == ["up", "down"]
    assert capsys.readouterr().out == "stopped\n"


def test_a_stack_that_was_already_running_is_left_running(monkeypatch: pytest.MonkeyPatch) -> None:
    events = fake_stack(monkeypatch, running=True)
    with pytest.raises(RuntimeError), common.running_stack("eval") as stack:
        assert not stack.started
        raise RuntimeError("the command failed")
    assert events == ["up"]


def test_without_start_a_stack_that_is_not_running_fails_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    events = fake_stack(monkeypatch, running=False)
    with pytest.raises(common.CommandFailed) as failed, common.running_stack("reconcile", start=False):
        pass
    assert failed.value.message == f"quire: {local_stack.NOT_RUNNING}"
    assert events == []


def test_a_stack_that_does_not_start_is_reported_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_stack(monkeypatch, running=False, fails=True)
    assert cli.main(["demo"]) == 1
    assert capsys.readouterr().err == "quire demo: the stack did not start: port 5432 is taken\n"
