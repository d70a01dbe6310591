"""The ingestion pipeline's step contract and its graph, written once.

Every step reads one model and returns one model (camelCase on the wire: the state machine's JSONPaths name
these fields). A step's output is the next step's input, as Step Functions passes it on, so each input model
reads only the fields it needs and ignores the rest. `PIPELINE` says which step follows which and on what:
the local runner (`IngestionPipeline.run`) walks it, and the CDK builds the state machine from it
(`infra/constructs/pipeline.py`); a test checks that every JSONPath in the synthesized definition names a
field of the model it reads.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from shared.domain.attempt_work import WorkVersions
from shared.domain.files import FailureReason
from shared.domain.knowledge import IndexWrite
from shared.domain.recognition import RecognitionJob
from shared.domain.transcription import TranscriptionJob
from shared.domain.workflow import ProcessVersion


class StepName(StrEnum):
    """The pipeline's steps, named as the state machine's task states are."""

    INSPECT = "Inspect"
    EXTRACT = "Extract"
    RECOGNIZE = "Recognize"
    CHUNK = "Chunk"
    EMBED = "Embed"
    INDEX = "Index"
    PUBLISH = "Publish"
    RECORD_FAILURE = "RecordFailure"


class Halt(StrEnum):
    """Why a step ended its attempt without a document problem to record: nothing is wrong, there is just
    nothing more for this attempt to do."""

    NOT_STORED = "the version is not stored"
    # Superseded by a newer attempt, already processed, or never claimed by this one.
    NOT_HELD = "this attempt does not hold the version"
    NOT_QUEUED = "the version is not queued for this attempt"
    CHANGED_WHILE_EXTRACTED = "the version changed while it was extracted"
    NOT_WRITTEN = "the chunks were not written"


class StepInput(ProcessVersion):
    """What every step receives: the version's references, never content (state is limited to 256 KB)."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True, extra="ignore")

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> Self:
        return cls.model_validate(state)

    def to_state(self) -> dict[str, Any]:
        """As the state machine carries it: camelCase, and absent fields left out (a Choice asks whether
        `ocrJob` is present). Only the step's own fields: a nested model keeps its None values, which the
        next step's input requires (`work.manifest` of a store that keeps no versions)."""
        dumped = self.model_dump(mode="json", by_alias=True)
        return {name: value for name, value in dumped.items() if value is not None}


class StepOutcome(StepInput):
    """What a step returns: the references again (the next step reads them), whether the attempt goes on,
    and why not."""

    proceed: bool
    why: Halt | None = None

    @classmethod
    def going_on(cls, request: ProcessVersion, **fields: Any) -> Self:
        return cls(**_references(request), proceed=True, **fields)

    @classmethod
    def halted(cls, request: ProcessVersion, why: Halt | None, **fields: Any) -> Self:
        return cls(**_references(request), proceed=False, why=why, **fields)


def _references(request: ProcessVersion) -> dict[str, Any]:
    return {name: getattr(request, name) for name in ProcessVersion.model_fields}


class Claimed(StepOutcome):
    """inspect: the version is claimed for this attempt (or why not)."""

    media_type: str | None = None
    byte_size: int | None = None


class Extracted(StepOutcome):
    """extract: the text layer is stored; `recognize` says whether OCR or vision must read the rest (always
    present: the state machine's Choice reads it)."""

    recognize: bool = False
    blocks: int | None = None
    failure: FailureReason | None = None


class RecognitionInput(StepInput):
    """recognize: without `ocr_job` (or, for a recording, `transcription_job`) it starts reading; with one (still
    running) it polls it once."""

    ocr_job: RecognitionJob | None = None
    # Polls of `ocr_job` before this one.
    ocr_polls: int = 0
    transcription_job: TranscriptionJob | None = None
    transcription_polls: int = 0


class Recognized(StepOutcome):
    """recognize: the document with what OCR and vision read (or the speech engine heard), or the job to poll
    again after a wait."""

    ocr_job: RecognitionJob | None = None
    ocr_polls: int | None = None
    transcription_job: TranscriptionJob | None = None
    transcription_polls: int | None = None
    blocks: int | None = None
    failure: FailureReason | None = None


class Chunked(StepOutcome):
    """chunk: the chunks are stored in batches; the embed Map runs one task per batch number."""

    chunks: int | None = None
    batches: tuple[int, ...] = ()
    failure: FailureReason | None = None


class EmbedInput(StepInput):
    """embed: one task of the Map, for one batch number."""

    batch: int


class Embedded(StepOutcome):
    batch: int
    embedded: int | None = None


class Indexed(StepOutcome):
    """index: the chunks and vectors are swapped in; `work` names every work object it read, for publish."""

    indexed: bool | None = None
    chunks: int | None = None
    written: IndexWrite | None = None
    work: WorkVersions | None = None


class PublishInput(StepInput):
    work: WorkVersions | None = None


class Published(StepOutcome):
    processing: str


class CaughtError(BaseModel):
    """A step's error as Step Functions' Catch records it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    error: str = Field(default="unknown", alias="Error")
    cause: str = Field(default="", alias="Cause")

    @field_validator("error", "cause", mode="before")
    @classmethod
    def _as_text(cls, value: object) -> object:
        # Whatever Step Functions puts there is recorded as text: a missing cause is empty, never a refusal.
        return "" if value is None else value if isinstance(value, str) else str(value)


class CaughtFailure(StepInput):
    """The Catch's input: the failed state's input, which step failed, and its error (and, when publish failed,
    the index step's `work`)."""

    failed_step: str = "unknown"
    error: CaughtError = CaughtError()
    work: WorkVersions | None = None


class InterruptionRecorded(StepOutcome):
    interrupted: bool
    step: str
    error: str


# --- the graph ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class When:
    """A test of one field of a step's output (named by its Python name; the state machine reads its alias)."""

    field: str
    test: Literal["true", "not_true", "present"]

    def holds(self, outcome: BaseModel) -> bool:
        value = getattr(outcome, self.field)
        if self.test == "present":
            return value is not None
        return (value is True) == (self.test == "true")


@dataclass(frozen=True)
class WaitThen:
    """Wait (the engine is still working), then run `step` again with the same state."""

    name: str
    step: StepName


@dataclass(frozen=True)
class ForEach:
    """Run `step` once per item of the output's `items` field (the item is the step's one field beyond the
    references), discard their outputs, then run `then` with the same state."""

    name: str
    items: str
    step: StepName
    then: StepName


DONE: Literal["Done"] = "Done"
Target = StepName | WaitThen | ForEach | Literal["Done"]


@dataclass(frozen=True)
class StepSpec:
    name: StepName
    reads: type[StepInput]
    returns: type[StepOutcome]
    # The Choice state after the step (None: the step always goes to `otherwise`).
    choice: str | None = None
    routes: tuple[tuple[When, Target], ...] = ()
    otherwise: Target = DONE

    def next(self, outcome: StepOutcome) -> Target:
        return next((target for when, target in self.routes if when.holds(outcome)), self.otherwise)


PROCEEDS = When("proceed", "true")
HALTED = When("proceed", "not_true")


@dataclass(frozen=True)
class Graph:
    first: StepName
    steps: tuple[StepSpec, ...]
    # The step the workflow's Catch runs when a step fails for a reason that is not the document's.
    on_failure: StepSpec

    def spec(self, name: StepName) -> StepSpec:
        return next(spec for spec in (*self.steps, self.on_failure) if spec.name is name)


PIPELINE = Graph(
    first=StepName.INSPECT,
    steps=(
        StepSpec(
            StepName.INSPECT,
            StepInput,
            Claimed,
            "Claimed?",
            # A re-index starts from the stored document: nothing is extracted or recognised again.
            ((HALTED, DONE), (When("reindex", "true"), StepName.CHUNK)),
            otherwise=StepName.EXTRACT,
        ),
        StepSpec(
            StepName.EXTRACT,
            StepInput,
            Extracted,
            "Extracted?",
            ((HALTED, DONE), (When("recognize", "true"), StepName.RECOGNIZE)),
            otherwise=StepName.CHUNK,
        ),
        StepSpec(
            StepName.RECOGNIZE,
            RecognitionInput,
            Recognized,
            "Recognized?",
            (
                (HALTED, DONE),
                (When("ocr_job", "present"), WaitThen("Wait for OCR", StepName.RECOGNIZE)),
                (When("transcription_job", "present"), WaitThen("Wait for transcription", StepName.RECOGNIZE)),
            ),
            otherwise=StepName.CHUNK,
        ),
        StepSpec(
            StepName.CHUNK,
            StepInput,
            Chunked,
            "Chunked?",
            ((PROCEEDS, ForEach("Embed batches", items="batches", step=StepName.EMBED, then=StepName.INDEX)),),
        ),
        StepSpec(StepName.EMBED, EmbedInput, Embedded),
        # Publish follows whatever index did: it removes the attempt's work either way.
        StepSpec(StepName.INDEX, StepInput, Indexed, otherwise=StepName.PUBLISH),
        StepSpec(StepName.PUBLISH, PublishInput, Published),
    ),
    on_failure=StepSpec(StepName.RECORD_FAILURE, CaughtFailure, InterruptionRecorded),
)


def wire_name(model: type[BaseModel], field: str) -> str:
    """The name a model's field has in the workflow's state (its alias)."""
    info = model.model_fields[field]
    return info.alias or field
