"""A fake of the agent tools' dispatcher (functions/tools/dispatcher.py:ToolDispatcher) with the interface the MCP
server uses: `tools()` (name, title, description, read_only, input_schema(), output_schema()) and `call(principal,
name, arguments, *, surface)` returning an outcome (is_error, content), raising a LookupError for an unknown name.

Three tools: a read-only echo, a writing tool, and one that refuses (its refusal has the dispatcher's shape). Every
call is recorded, with the thread it ran on; a call can be held until a number of calls are waiting together."""

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from shared.domain.auth import Principal


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class EchoParams(_Model):
    file_id: str = Field(description="The file to echo.")
    limit: int = Field(default=10, ge=1, le=100)


class EchoResult(_Model):
    tenant_id: str
    subject: str
    file_id: str
    limit: int


class NoteParams(_Model):
    text: str = Field(max_length=200)


class NoteResult(_Model):
    note_id: str
    text: str


class FakeUnknownTool(LookupError):
    pass


@dataclass(frozen=True)
class FakeTool:
    name: str
    title: str
    description: str
    parameters: type[BaseModel]
    result: type[BaseModel]
    read_only: bool = True

    def input_schema(self) -> dict[str, Any]:
        return self.parameters.model_json_schema(by_alias=True, mode="validation")

    def output_schema(self) -> dict[str, Any]:
        return self.result.model_json_schema(by_alias=True, mode="serialization")


@dataclass(frozen=True)
class FakeToolOutcome:
    tool: str
    is_error: bool
    content: dict[str, Any]


@dataclass(frozen=True)
class RecordedCall:
    principal: Principal
    name: str
    arguments: Mapping[str, Any] | None
    surface: str
    thread: str


FAKE_TOOLS = (
    FakeTool("echo_file", "Echo a file id", "Answers with the caller and the arguments.", EchoParams, EchoResult),
    FakeTool("write_note", "Write a note", "Makes a new note.", NoteParams, NoteResult, read_only=False),
    FakeTool("refuse_always", "Refuse", "Always refuses, as a missing file does.", EchoParams, EchoResult),
)
NOT_FOUND_REFUSAL = {
    "error": "not_found",
    "message": "Not found: nothing with this id is visible to this caller.",
    "nextTool": "list_files",
    "retryable": False,
    "retryAfterSeconds": None,
    "latestVersion": None,
    "capability": None,
}


@dataclass
class FakeToolDispatcher:
    calls: list[RecordedCall] = field(default_factory=list)
    # When set, each call waits here first (so a test can prove calls run side by side, off the event loop).
    hold: Callable[[], object] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def tools() -> Sequence[FakeTool]:
        return FAKE_TOOLS

    def call(
        self,
        principal: Principal,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        surface: Literal["mcp", "http"],
    ) -> FakeToolOutcome:
        tool = next((tool for tool in FAKE_TOOLS if tool.name == name), None)
        if tool is None:
            raise FakeUnknownTool(name)
        with self._lock:
            self.calls.append(RecordedCall(principal, name, arguments, surface, threading.current_thread().name))
        if self.hold is not None:
            self.hold()
        if name == "refuse_always":
            return FakeToolOutcome(name, True, dict(NOT_FOUND_REFUSAL))
        try:
            params = tool.parameters.model_validate(dict(arguments or {}))
        except ValidationError as error:
            message = f"the arguments do not fit this tool's schema: {error.errors()[0]['msg']}"
            return FakeToolOutcome(name, True, {**NOT_FOUND_REFUSAL, "error": "invalid_arguments", "message": message})
        if isinstance(params, EchoParams):
            result: BaseModel = EchoResult(
                tenant_id=principal.tenant_id, subject=principal.subject, file_id=params.file_id, limit=params.limit
            )
        else:
            assert isinstance(params, NoteParams)
            result = NoteResult(note_id=f"note-{len(self.calls)}", text=params.text)
        return FakeToolOutcome(name, False, result.model_dump(mode="json", by_alias=True))
