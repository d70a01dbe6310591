"""What a tool is (its name, schemas and function), what it runs with (`ToolContext`: the caller, the services and
the fence), and `@tool`, which puts each tool's definition beside its function."""

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar
from uuid import UUID

from pydantic import BaseModel

from functions.tools.output_schemas import published_output_schema
from shared.domain.auth import Principal
from shared.domain.errors import VersionDeleted
from shared.domain.fencing import Fence
from shared.domain.files import FileRecord
from shared.services.answers import AnswerService
from shared.services.artifacts import ArtifactService
from shared.services.audit import ToolAuditLog
from shared.services.documents import DocumentReader, EntitledVersion
from shared.services.exports import ExportService
from shared.services.files import FileService
from shared.services.pdf_tools import PdfTools
from shared.services.retrieval import Retrieval

Params = TypeVar("Params", bound=BaseModel)
Result = TypeVar("Result", bound=BaseModel)


class ToolServices(Protocol):
    """The services the tools call: the same the HTTP routes call (the Container is one)."""

    @property
    def files(self) -> FileService: ...
    @property
    def retrieval(self) -> Retrieval: ...
    @property
    def answers(self) -> AnswerService: ...
    @property
    def document_reader(self) -> DocumentReader: ...
    @property
    def artifacts(self) -> ArtifactService: ...
    @property
    def exports(self) -> ExportService: ...
    @property
    def pdf_tools(self) -> PdfTools: ...


class DispatchedServices(ToolServices, Protocol):
    """What the dispatcher needs besides: where each call is recorded (the Container is one)."""

    @property
    def audit_log(self) -> ToolAuditLog: ...


@dataclass
class ToolContext:
    principal: Principal
    services: ToolServices
    fence: Fence
    # The collections the call acted in once authorized: the audit's record of what it touched.
    touched: set[str] = field(default_factory=set)

    def fenced(self, text: str) -> str:
        return self.fence.wrap(text)

    def file(self, file_id: UUID) -> FileRecord:
        record = self.services.files.get_file(self.principal, file_id)
        self.touched.add(record.collection_id)
        return record

    def entitled(self, file_id: UUID, version_id: UUID | None) -> EntitledVersion:
        """A version the caller may read, as GET /v1/files/{id}/document finds it, its collection noted before
        anything is read (a refusal after this is audited in it)."""
        try:
            entitled = self.services.document_reader.entitled(self.principal, file_id, version_id)
        except VersionDeleted as deleted:
            # Told only to a reader of the collection the file was in: the refusal is audited there.
            if deleted.collection_id is not None:
                self.touched.add(deleted.collection_id)
            raise
        self.touched.add(entitled.collection_id)
        return entitled

    def collection(self, collection_id: str) -> None:
        """A collection the call names: recorded before the service decides, so a refusal is audited in it."""
        self.touched.add(collection_id)


@dataclass(frozen=True)
class Tool(Generic[Params, Result]):
    name: str
    title: str
    description: str
    parameters: type[Params]
    result: type[Result]
    run: Callable[[ToolContext, Params], Result]
    read_only: bool = True
    # Text a document supplied can be in the result (fenced).
    carries_document_text: bool = False

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_schema(self.parameters, "validation"))

    def output_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_published(self.result))


def tool(
    name: str,
    title: str,
    description: str,
    *,
    read_only: bool = True,
    carries_document_text: bool = False,
) -> Callable[[Callable[[ToolContext, Params], Result]], Tool[Params, Result]]:
    """The tool whose function this decorates; its parameter and result models are the function's annotations."""

    def define(run: Callable[[ToolContext, Params], Result]) -> Tool[Params, Result]:
        hints = run.__annotations__
        return Tool(
            name,
            title,
            description,
            hints["params"],
            hints["return"],
            run,
            read_only=read_only,
            carries_document_text=carries_document_text,
        )

    return define


@functools.cache
def _published(model: type[BaseModel]) -> dict[str, Any]:
    return published_output_schema(_schema(model, "serialization"))


@functools.cache
def _schema(model: type[BaseModel], mode: Literal["validation", "serialization"]) -> dict[str, Any]:
    # Generated once per process: each call's audit reads the tool's id parameters from it.
    return model.model_json_schema(by_alias=True, mode=mode)
