"""The ingestion pipeline's steps: inspect, extract, recognize (OCR and vision), chunk, embed, index, publish,
and the Catch that records an infrastructure failure.

Each step reads the model `shared.domain.steps` names for it and returns references, never content: the
same code runs as Step Functions tasks on AWS and in process locally (`run` walks the same graph the state
machine is built from). A document problem ends the step normally with the failure recorded on the version;
only an infrastructure failure raises (and is retried).
"""

import hashlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from shared.domain.attempt_work import ChunkBatch, EmbeddedBatch, WorkVersions
from shared.domain.chunk_situations import Situation, document_head
from shared.domain.document import ExtractedDocument, ExtractionFailure
from shared.domain.files import FailureReason, FileVersionRecord, ProcessingState
from shared.domain.knowledge import IndexWrite
from shared.domain.languages import declared_language
from shared.domain.media import MediaLimits
from shared.domain.recognition import RecognitionJob
from shared.domain.steps import (
    PIPELINE,
    CaughtFailure,
    Chunked,
    Claimed,
    Embedded,
    Extracted,
    ForEach,
    Halt,
    Indexed,
    InterruptionRecorded,
    Published,
    RecognitionInput,
    Recognized,
    StepInput,
    StepName,
    StepOutcome,
    WaitThen,
)
from shared.domain.uploads import RECORDING_TYPES
from shared.domain.usage import Usage, UsageStep
from shared.domain.workflow import ProcessVersion
from shared.observability import logger
from shared.ports import FileCatalog, FileContentStore, ProcessingAttempts, UsageLedger
from shared.services.attempt_work import AttemptWork
from shared.services.attempts import AttemptClaims, Held
from shared.services.chunk_situations import ChunkSituations
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.extraction import Extractor
from shared.services.indexing import Indexer, IndexTarget, UnindexableDocument, embedded_tokens
from shared.services.limits import SpendLimits
from shared.services.metering import Metering
from shared.services.recognition import PageRecognition, Recognizers, recognition_plan
from shared.services.recordings import MediaProbe, Recordings

# The local runner's pause between polls of an engine's job (Step Functions waits in a Wait state).
POLL_SECONDS = 5.0


@dataclass(frozen=True)
class StepRetry:
    """The state machine's Retry on infrastructure errors, for the local runner: a step whose database or storage
    did not answer (the embedded PostgreSQL restarting after a kill, say) is tried again after each delay (with
    full jitter, as Step Functions does), then recorded as interrupted. `transient` tells such an error from a bug,
    which is never retried."""

    transient: Callable[[BaseException], bool]
    delays: tuple[float, ...] = (2.0, 4.0, 8.0, 16.0, 32.0, 60.0)


class IngestionPipeline:
    def __init__(
        self,
        catalog: FileCatalog,
        attempts: ProcessingAttempts,
        content: FileContentStore,
        extractor: Extractor,
        indexer: Indexer,
        *,
        recognizers: Recognizers,
        ledger: UsageLedger,
        sleep: Callable[[float], None] = time.sleep,
        spend: SpendLimits | None = None,
        retry: StepRetry | None = None,
        media_limits: MediaLimits | None = None,
        media_probe: MediaProbe | None = None,
        situations: ChunkSituations | None = None,
    ) -> None:
        self._spend = spend
        self._situations = situations
        self._retry = retry
        self._attempts = attempts
        self._content = content
        self._extractor = extractor
        self._indexer = indexer
        self._sleep = sleep
        self._claims = AttemptClaims(catalog, attempts)
        self._work = AttemptWork(content)
        self._metering = Metering(ledger)
        self.documents = ExtractedDocuments(catalog, attempts, content)
        self.recognition = PageRecognition(
            recognizers,
            claims=self._claims,
            documents=self.documents,
            content=content,
            metering=self._metering,
            limits=extractor.limits,
            spend=spend,
        )
        self.recordings = Recordings(
            recognizers.transcription,
            claims=self._claims,
            documents=self.documents,
            content=content,
            metering=self._metering,
            limits=media_limits or MediaLimits(),
            probe=media_probe,
            spend=spend,
        )

    # --- the local runner ----------------------------------------------------------------------------------

    def run(self, request: ProcessVersion) -> StepOutcome:
        """Every step in the order `PIPELINE` gives (the local runner; Step Functions calls them one by one),
        each reading the previous one's output as the state machine passes it on. A step that raises is
        recorded as the state machine's Catch records it (`interrupted`, naming the step), then re-raised."""
        step = PIPELINE.first
        state = StepInput(**request.model_dump()).to_state()
        try:
            while True:
                outcome = self._retried(step, state)
                target = PIPELINE.spec(step).next(outcome)
                state = outcome.to_state()
                if isinstance(target, WaitThen):
                    self._sleep(POLL_SECONDS)
                    step = target.step
                elif isinstance(target, ForEach):
                    step = target.step
                    for item in getattr(outcome, target.items):
                        self._retried(target.step, {**state, _item_field(target): item})
                    step = target.then
                elif isinstance(target, StepName):
                    step = target
                else:
                    return outcome
        except Exception as error:
            error_state = {"Error": type(error).__name__, "Cause": str(error)}
            caught = {**state, "failedStep": step.lower(), "error": error_state}
            try:
                self.record_infrastructure_failure(CaughtFailure.of(caught))
            except Exception:
                logger.exception("the interruption could not be recorded; the version looks stalled to the sweep")
            raise

    def _retried(self, name: StepName, state: dict[str, Any]) -> StepOutcome:
        delays = iter(self._retry.delays if self._retry is not None else ())
        while True:
            try:
                return self.step(name, state)
            except Exception as error:
                delay = next(delays, None)
                if delay is None or self._retry is None or not self._retry.transient(error):
                    raise
                logger.warning("a step's infrastructure did not answer; trying it again", extra={"step": name.value})
                self._sleep(random.uniform(0, delay))  # noqa: S311 - jitter, not a secret

    def step(self, name: StepName, state: dict[str, Any]) -> StepOutcome:
        """One step on a workflow state (camelCase, as Step Functions passes it)."""
        request = PIPELINE.spec(name).reads.of(state)
        steps: dict[StepName, Callable[[Any], StepOutcome]] = {
            StepName.INSPECT: self.inspect,
            StepName.EXTRACT: self.extract,
            StepName.RECOGNIZE: self.recognize,
            StepName.CHUNK: self.chunk,
            StepName.EMBED: lambda item: self.embed(item, item.batch),
            StepName.INDEX: self.index,
            StepName.PUBLISH: lambda input_: self.publish(input_, work=input_.work),
            StepName.RECORD_FAILURE: self.record_infrastructure_failure,
        }
        return steps[name](request)

    # --- the steps -----------------------------------------------------------------------------------------

    def inspect(self, request: ProcessVersion) -> Claimed:
        found = self._claims.stored(request)
        if found is None:
            # Deleted or never stored since it was queued: nothing to process, and nothing wrong.
            return Claimed.halted(request, Halt.NOT_STORED)
        if request.reindex and self.documents.exists(found.version):
            # Its stored document is chunked and embedded again: the next step is chunk, as after extraction.
            if not self._claims.claim(request, to=ProcessingState.EXTRACTED, expected=[ProcessingState.QUEUED]):
                return Claimed.halted(request, Halt.NOT_QUEUED)
            version = found.version
            return Claimed.going_on(request, media_type=version.media_type, byte_size=version.byte_size)
        # (A re-index whose document is gone extracts it again, as any processing does.)
        request = request.model_copy(update={"reindex": False})
        # Claimed for this attempt only: a superseded attempt, or a version already processed, stops here.
        if not self._claims.claim(request, to=ProcessingState.EXTRACTING, expected=[ProcessingState.QUEUED]):
            logger.info("not claimed", extra={"processing": found.version.processing_state.value})
            return Claimed.halted(request, Halt.NOT_QUEUED)
        version = found.version
        return Claimed.going_on(request, media_type=version.media_type, byte_size=version.byte_size)

    def extract(self, request: ProcessVersion) -> Extracted:
        """The text layer and structure; `recognize` says whether OCR or vision must read the rest."""
        found = self._claims.stored(request)
        if found is None:
            return Extracted.halted(request, Halt.NOT_STORED)
        if not found.holds(request, ProcessingState.EXTRACTING):
            # Not claimed by this attempt (inspect did not run, or another attempt superseded it).
            return Extracted.halted(request, Halt.NOT_HELD)
        version = found.version
        if version.media_type in RECORDING_TYPES:
            return self.recordings.inspect(request, found)
        return self._extract_document(request, found)

    def _extract_document(self, request: ProcessVersion, found: Held) -> Extracted:
        version = found.version
        if not self._extractor.supports(version.media_type):
            return self._fail_extraction(
                request, version, FailureReason.UNSUPPORTED_TYPE, f"{version.media_type} is not extracted"
            )
        content = self._original(request, version)
        if isinstance(content, Extracted):
            return content
        # The one step that reads the bytes whole: their hash says when a collection holds them twice (duplicateOf).
        digest = hashlib.sha256(content).hexdigest()
        self._attempts.record_content_hash(request.tenant_id, version.version_id, digest, attempt=request.attempt)
        outcome = self._extractor.extract(content, version.media_type)
        if isinstance(outcome, ExtractionFailure):
            return self._fail_extraction(request, version, outcome.reason, outcome.detail)
        return self._with_text_layer(request, found, outcome, original=content)

    def _original(self, request: ProcessVersion, version: FileVersionRecord) -> bytes | Extracted:
        """The original's bytes, or how the step ends without them."""
        try:
            return self._content.get(
                version.storage_key, version_id=version.storage_version_id, max_bytes=self._extractor.max_bytes
            )
        except ValueError as error:
            return self._fail_extraction(request, version, FailureReason.TOO_LARGE, str(error))
        except FileNotFoundError:
            # Deleting a file removes its bytes in the request: an attempt under way ends here, not in retries.
            if self._claims.stored(request) is None:
                return Extracted.halted(request, Halt.NOT_STORED)
            # Still stored, yet its bytes are gone (removed outside Quire): the same absence on every retry.
            return self._fail_extraction(
                request, version, FailureReason.BYTES_MISSING, "the original's bytes are not in storage"
            )

    def _fail_extraction(
        self, request: ProcessVersion, version: FileVersionRecord, reason: FailureReason, detail: str
    ) -> Extracted:
        return self.documents.fail(Extracted, request, version, reason, detail)

    def _with_text_layer(
        self, request: ProcessVersion, held: Held, document: ExtractedDocument, *, original: bytes
    ) -> Extracted:
        version = held.version
        plan = recognition_plan(version.media_type, document, every_page=request.rescan)
        if not plan.needed:
            return self.documents.store(Extracted, request, version, document)
        if self.recognition.can_read(plan):
            # The text layer is kept while OCR reads the rest: the recognize step starts from it.
            stored = self.documents.store(Extracted, request, version, document, awaiting_recognition=True)
            return stored.model_copy(update={"recognize": stored.proceed})
        # Nothing here can read the pages without text: the text layer is all there is, and it says why.
        finished = self.recognition.finish(request, held, document, plan, ocr=None, original=lambda: original)
        return Extracted.model_validate(finished.model_dump(include={*Extracted.model_fields}))

    def recognize(self, request: RecognitionInput | ProcessVersion) -> Recognized:
        """OCR the pages without text (and describe an image): the result at once, or the job to poll. With
        `ocr_job` in its input (a job the engine is still running) it polls that job once."""
        if not isinstance(request, RecognitionInput):
            request = RecognitionInput(**request.model_dump())
        if request.transcription_job is not None or self._is_recording(request):
            return self.recordings.transcribe(request)
        return self.recognition.recognize(request)

    def _is_recording(self, request: ProcessVersion) -> bool:
        found = self._claims.stored(request)
        return found is not None and found.version.media_type in RECORDING_TYPES

    def collect_recognition(self, request: ProcessVersion, job: RecognitionJob, *, polls: int = 0) -> Recognized:
        """One poll of a running OCR job (see PageRecognition.collect)."""
        return self.recognition.collect(request, job, polls=polls)

    def chunk(self, request: ProcessVersion) -> Chunked:
        """Cut the extracted document into chunks, stored in batches for the embed step: the workflow passes
        batch numbers, never text."""
        found = self._claims.stored(request)
        if found is None:
            return Chunked.halted(request, Halt.NOT_STORED)
        version = found.version
        # A redelivered chunk step of the same attempt finds it indexing already and does the same work again.
        if not self._claims.claim(
            request, to=ProcessingState.INDEXING, expected=[ProcessingState.EXTRACTED, ProcessingState.INDEXING]
        ):
            return Chunked.halted(request, Halt.NOT_HELD)
        try:
            drafts, truncated = self._indexer.chunks_of(
                self.documents.read(version),
                language=declared_language(version.declared_language, found.file.metadata),
                filename=found.file.filename,
            )
        except UnindexableDocument as error:
            return self.documents.fail(
                Chunked, request, version, FailureReason.MALFORMED, f"it could not be indexed: {error}"
            )
        head = document_head(drafts) if self._situations is not None and self._situations.enabled else None
        batches = self._work.store_chunks(request, drafts, truncated=truncated, document_head=head)
        return Chunked.going_on(request, chunks=len(drafts), batches=tuple(range(batches)))

    def embed(self, request: ProcessVersion, batch: int) -> Embedded:
        """Embed one batch of chunks (one task of the workflow's Map), each with its situating sentence first where
        a model writes them. A missing or failing model stores the gap in place of the vectors: the chunks are
        still indexed for the keyword lane, and a re-index embeds them."""
        if not self._claims.heartbeat(request, ProcessingState.INDEXING):
            return Embedded.halted(request, Halt.NOT_HELD, batch=batch)
        chunks = self._work.chunks(request, batch)
        situations, context_gap = self._situate(request, chunks)
        context_model = self._situations.model_id if situations and self._situations is not None else None
        drafts = EmbeddedBatch(batch=batch, count=0, situations=situations).situated(chunks.drafts)
        tokens = embedded_tokens(drafts)
        refusal = (
            self._spend.embedding_refusal(request.tenant_id, tokens=tokens, then="re-index") if self._spend else None
        )
        if refusal is not None:
            # Over the tenant's daily embedding limit: indexed for the keyword lane only, the gap saying why.
            self._work.store_vectors(
                request,
                EmbeddedBatch.missing(
                    batch,
                    len(drafts),
                    str(refusal),
                    situations=situations,
                    context_gap=context_gap,
                    context_model=context_model,
                ),
            )
            return Embedded.going_on(request, batch=batch, embedded=0)
        vectors, gap = self._indexer.embed([draft.content for draft in drafts])
        if vectors is None:
            missing = EmbeddedBatch.missing(
                batch,
                len(drafts),
                gap or "the embedding model gave no vectors",
                situations=situations,
                context_gap=context_gap,
                context_model=context_model,
            )
            self._work.store_vectors(request, missing)
            return Embedded.going_on(request, batch=batch, embedded=0)
        found = self._claims.find(request)
        if found is not None:
            # Paid for now, whatever happens to the attempt: recorded before the vectors are stored, once per
            # batch and attempt however often the task is delivered.
            self._metering.record(
                found.file,
                found.version,
                step=f"{UsageStep.EMBED.value}#{batch:05d}",
                attempt=request.attempt,
                usage=self._indexer.usage(tokens),
            )
        embedded = EmbeddedBatch.of(
            batch,
            vectors,
            model=self._indexer.model_id,
            tokens=tokens,
            situations=situations,
            context_gap=context_gap,
            context_model=context_model,
        )
        self._work.store_vectors(request, embedded)
        return Embedded.going_on(request, batch=batch, embedded=len(vectors))

    def _situate(self, request: ProcessVersion, chunks: ChunkBatch) -> tuple[tuple[Situation | None, ...], str | None]:
        """The batch's situating sentences (from the cache, or written and metered) and why some have none; nothing
        where no model writes them. Never raises for the model: a chunk without one keeps its deterministic
        context."""
        if self._situations is None or chunks.document_head is None or not self._situations.enabled:
            return (), None
        found = self._claims.find(request)
        if found is None:
            return (), None

        def meter(usage: Usage) -> None:
            # Paid for now, whatever happens to the attempt: once per batch and attempt, before the sentences are kept.
            step = f"{UsageStep.CONTEXT.value}#{chunks.batch:05d}"
            self._metering.record(found.file, found.version, step=step, attempt=request.attempt, usage=usage)

        outcome = self._situations.situate(
            request.tenant_id, found.file.file_id, chunks.drafts, document_head=chunks.document_head, on_generated=meter
        )
        situations = tuple(
            None if text is None else self._indexer.situation(text, draft)
            for text, draft in zip(outcome.situations, chunks.drafts, strict=True)
        )
        return situations, outcome.gap

    def index(self, request: ProcessVersion) -> Indexed:
        """Swap the version's chunks and vectors into the index, in one transaction, streamed batch by batch
        (a 20,000-chunk document never sits in memory whole). Its output names the storage version of every
        work object it read (`work`), which publish deletes."""
        held = self._claims.held(request, ProcessingState.INDEXING)
        if held is None:
            return Indexed.halted(request, Halt.NOT_HELD)
        model = self._indexer.model_id
        with self._work.fetched(request) as fetched:
            outcome = self._indexer.write_batches(
                IndexTarget.of(held.file, held.version),
                fetched.batches(model=model),
                count=fetched.manifest.chunk_count,
                gap=fetched.gap,
                context_gap=fetched.context_gap,
                context_model=fetched.context_model,
                truncated=fetched.manifest.truncated,
                attempt=request.attempt,
            )
            work = fetched.versions
        if outcome.written is not IndexWrite.STORED:
            return Indexed.halted(request, Halt.NOT_WRITTEN, written=outcome.written, work=work)
        return Indexed.going_on(request, indexed=True, chunks=outcome.result.chunk_count, work=work)

    def publish(self, request: ProcessVersion, *, work: WorkVersions | None = None) -> Published:
        """The attempt's last step: its work objects (those the index step read: `work`, from its output) are
        removed whatever the outcome; the version's row already says what happened."""
        removed = self._work.remove(request, work)
        found = self._claims.find(request)
        state = found.version.processing_state.value if found is not None else "gone"
        logger.info("published", extra={"processing": state, "work_objects_removed": removed})
        return Published.halted(request, None, processing=state)

    def record_infrastructure_failure(self, caught: CaughtFailure) -> InterruptionRecorded:
        """The workflow's Catch: a step failed after its retries for a reason that is not the document's. The
        version becomes `interrupted` with what failed (the sweep starts a new attempt later)."""
        step, error = caught.failed_step, caught.error.error
        detail = f"the {step} step failed: {error}: {caught_error_message(caught.error.cause)}"
        # The work first: storage may answer while the database (the usual reason to be here) does not.
        try:
            self._work.remove(caught, caught.work)
        except Exception:
            logger.exception("the attempt's work was not removed; reconciliation removes it")
        recorded = self._attempts.record_interruption(
            caught.tenant_id, UUID(caught.version_id), detail=detail, attempt=caught.attempt
        )
        logger.warning("processing interrupted", extra={"step": step, "error": error, "recorded": recorded})
        return InterruptionRecorded.halted(caught, None, interrupted=recorded, step=step, error=error)


def _item_field(each: ForEach) -> str:
    """The alias of the one field the Map's item fills in the step's input (beyond the references)."""
    reads = PIPELINE.spec(each.step).reads
    (extra,) = (name for name in reads.model_fields if name not in ProcessVersion.model_fields)
    return reads.model_fields[extra].alias or extra


def caught_error_message(cause: str) -> str:
    """The error message out of a Step Functions cause (a Lambda error's JSON), without its stack trace."""
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause[:500]
    if isinstance(parsed, dict):
        return str(parsed.get("errorMessage") or parsed.get("errorType") or "")[:500]
    return cause[:500]
