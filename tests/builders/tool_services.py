"""The services the agent tools call (`ToolServices`) over one set of in-memory fakes, and two ways to call a tool:
directly (`run`: its result and the collections it touched) or through the real `ToolDispatcher` (`call`: the
refusal's shape and the audit's row). tests/unit/tools/ uses it; docs/testing.md says when."""

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

from pydantic import BaseModel

from functions.tools.dispatcher import ToolDispatcher, ToolOutcome
from functions.tools.registry import Tool, ToolContext
from shared.domain.audit import ToolCallRecord
from shared.domain.auth import Principal
from shared.domain.fencing import Fence
from shared.domain.search import RetrievalTuning
from shared.ports import DocumentSummarizer
from shared.services.answers import AnswerService
from shared.services.artifacts import ArtifactService
from shared.services.audit import ToolAuditLog
from shared.services.documents import DocumentReader
from shared.services.exports import ExportService
from shared.services.files import FileService
from shared.services.pdf_tools import PdfTools
from shared.services.retrieval import Retrieval
from tests.builders.writing_services import FakeKeywordLane, WritingServices
from tests.fakes import Fakes, FakeToolCallAudit

if TYPE_CHECKING:
    from shared.bootstrap import Container

NONCE = re.compile(r"quire-data ([0-9a-f]{16,64})")


def fenced_text(fenced: str) -> str:
    """What a fence holds, checked to be exactly one fence with one nonce (for a result the dispatcher fenced)."""
    nonces = set(NONCE.findall(fenced))
    assert len(nonces) == 1, fenced
    return Fence(nonce=nonces.pop()).unwrap(fenced)


@dataclass(frozen=True)
class Ran:
    """A tool's result as its function returned it, and what it ran with."""

    result: Any
    context: ToolContext

    @property
    def touched(self) -> set[str]:
        return self.context.touched

    def unfenced(self, fenced: str) -> str:
        """The text of one fence of this call's nonce (ValueError when `fenced` is not exactly that)."""
        return self.context.fence.unwrap(fenced)

    def wire(self) -> dict[str, Any]:
        """The result as JSON (camelCase), before the dispatcher fences the supplied names."""
        result: BaseModel = self.result
        return result.model_dump(mode="json", by_alias=True)


@dataclass
class ToolServicesOverFakes:
    """Everything `ToolServices` names (and the dispatcher's `audit_log`) over one set of fakes: the files a test
    uploads through `fakes` are the ones the writing services export and the reader reads."""

    writing: WritingServices = field(default_factory=WritingServices)
    summarizer: DocumentSummarizer | None = None
    audit: FakeToolCallAudit = field(default_factory=FakeToolCallAudit)

    @property
    def fakes(self) -> Fakes:
        return self.writing.fakes

    @cached_property
    def files(self) -> FileService:
        return self.fakes.files()

    @cached_property
    def retrieval(self) -> Retrieval:
        # Keyword lane only, as WritingServices.answers() retrieves: search with mode `keyword`.
        lanes = FakeKeywordLane(self.fakes.knowledge)
        return Retrieval(
            authorization=self.writing.policy,
            knowledge=self.fakes.knowledge,
            vectors=lanes,
            keywords=lanes,
            embedder=self.fakes.embedder,
            tuning=RetrievalTuning(),
        )

    @cached_property
    def answers(self) -> AnswerService:
        return self.writing.answers()

    @cached_property
    def document_reader(self) -> DocumentReader:
        return self.fakes.reader(summarizer=self.summarizer)

    @property
    def artifacts(self) -> ArtifactService:
        return self.writing.artifacts

    @property
    def exports(self) -> ExportService:
        return self.writing.exports

    @property
    def pdf_tools(self) -> PdfTools:
        return self.writing.pdf_tools

    @cached_property
    def audit_log(self) -> ToolAuditLog:
        return ToolAuditLog(self.audit, self.writing.policy)

    # --- calling a tool -----------------------------------------------------------------------------------------

    def run(self, tool: Tool[Any, Any], caller: Principal, /, **arguments: Any) -> Ran:
        """The tool's function called as the dispatcher calls it (arguments validated first); refusals raise."""
        context = ToolContext(principal=caller, services=self, fence=Fence.new())
        return Ran(tool.run(context, tool.parameters.model_validate(arguments)), context)

    def call(self, name: str, caller: Principal, /, **arguments: Any) -> ToolOutcome:
        """The call through the real dispatcher: a refusal is a result, supplied names are fenced, it is audited."""
        dispatcher = ToolDispatcher(cast("Container", self))
        return dispatcher.call(caller, name, {key: _json(value) for key, value in arguments.items()}, surface="http")

    def refused(self, name: str, caller: Principal, /, **arguments: Any) -> dict[str, Any]:
        """The refusal (camelCase) of a call that must be refused."""
        outcome = self.call(name, caller, **arguments)
        assert outcome.is_error, outcome.content
        return outcome.content

    @property
    def last_audited(self) -> ToolCallRecord:
        return self.audit.rows[-1]

    # --- files --------------------------------------------------------------------------------------------------

    def markdown(
        self,
        caller: Principal,
        body: bytes,
        *,
        filename: str = "report.md",
        collection: str = "docs",
        file_id: UUID | None = None,
        process: bool = True,
    ) -> UUID:
        """A Markdown file (or a new version of `file_id`) stored and, with `process`, extracted and indexed."""
        return self.stored(
            caller,
            body,
            filename=filename,
            media_type="text/markdown",
            collection=collection,
            file_id=file_id,
            process=process,
        )

    def stored(
        self,
        caller: Principal,
        body: bytes,
        *,
        filename: str,
        media_type: str,
        collection: str = "docs",
        file_id: UUID | None = None,
        process: bool = True,
    ) -> UUID:
        files = self.fakes.files()
        if file_id is None:
            ticket = files.start_upload(
                caller, collection_id=collection, filename=filename, media_type=media_type, byte_size=len(body)
            )
        else:
            ticket = files.start_new_version(
                caller, file_id, filename=filename, media_type=media_type, byte_size=len(body)
            )
        landed = self.fakes.content.post(ticket.upload, body)
        self.fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
        if process:
            self.fakes.pipeline().run(self.fakes.workflow.started[-1])
        return ticket.file_id

    def newest_version(self, caller: Principal, file_id: UUID) -> UUID:
        return self.files.get_file(caller, file_id).current.version_id


def _json(value: Any) -> Any:
    # Arguments travel as JSON: an id is its string.
    return str(value) if isinstance(value, UUID) else value
