"""The ingestion pipeline's steps: inspect, extract, recognize (OCR and vision), index.

Each step takes references (tenant, file, version) and returns references: the same code runs as
Step Functions tasks on AWS and in process locally. A document problem ends the step normally with
the failure recorded on the version; only an infrastructure failure raises (and is retried).
"""

import functools
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from shared.domain.document import MAX_DOCUMENT_BYTES, ExtractedDocument, ExtractionFailure
from shared.domain.errors import CapabilityUnavailable, RecognitionFailed, VisionFailed
from shared.domain.files import (
    ExtractionSummary,
    FailureReason,
    FileRecord,
    FileVersionRecord,
    OcrState,
    ProcessingState,
    Recognition,
    VersionState,
    VisionState,
)
from shared.domain.knowledge import ChunkBatch, ChunkDraft, ChunkManifest, EmbeddedBatch, IndexWrite, WorkVersions
from shared.domain.recognition import ImageDescription, RecognitionJob, RecognitionResult
from shared.domain.recognized_layout import with_recognition
from shared.domain.uploads import (
    chunk_batch_key,
    chunk_manifest_key,
    document_key,
    vector_batch_key,
    work_prefix,
)
from shared.domain.usage import Usage, UsageStep
from shared.domain.workflow import ProcessVersion
from shared.observability import logger
from shared.ports import FileContentStore, FileMetadataStore, OcrProvider, OcrSource, UsageLedger, VisionProvider
from shared.services.extraction import Extractor
from shared.services.indexing import Indexer, IndexOutcome, IndexTarget, UnindexableDocument, embedded_tokens
from shared.services.recognition import RecognitionPlan, recognition_plan

# The local runner's pause between polls of an engine's job (Step Functions waits in a Wait state).
POLL_SECONDS = 5.0
# Polls of one OCR job before it is given up as failed (with the workflow's 10-second Wait: about an hour).
MAX_OCR_POLLS = 360
# Chunks per task of the embed Map: one task embeds them within its timeout (Titan answers one text per call).
CHUNKS_PER_BATCH = 128
# The largest work object read back (a batch of chunks, or its vectors).
_WORK_BYTES = 64 * 1024 * 1024


class StaleWork(Exception):
    """An attempt's stored work no longer fits the deployment (its vectors came from another model)."""


@dataclass(frozen=True)
class Recognizers:
    """The engines that read what has no text layer, and the ledger their metered calls are written to."""

    ocr: OcrProvider
    vision: VisionProvider
    ledger: UsageLedger


class IngestionPipeline:
    def __init__(
        self,
        metadata: FileMetadataStore,
        content: FileContentStore,
        extractor: Extractor,
        indexer: Indexer,
        recognizers: Recognizers,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._metadata = metadata
        self._content = content
        self._extractor = extractor
        self._indexer = indexer
        self._ocr = recognizers.ocr
        self._vision = recognizers.vision
        self._ledger = recognizers.ledger
        self._sleep = sleep

    def run(self, request: ProcessVersion) -> dict[str, Any]:
        """Every step in order (the local runner; Step Functions calls them one by one). A step that raises
        is recorded as the state machine's Catch records it (`interrupted`, naming the step), then re-raised."""
        step = "inspect"
        work: object = None
        try:
            outcome = self.inspect(request)
            if outcome["proceed"]:
                step = "extract"
                outcome = self.extract(request)
            if outcome["proceed"] and outcome["recognize"]:
                step = "recognize"
                outcome = self.recognize(request)
                while outcome["proceed"] and "ocrJob" in outcome:
                    self._sleep(POLL_SECONDS)
                    job = RecognitionJob.model_validate(outcome["ocrJob"])
                    outcome = self.collect_recognition(request, job, polls=outcome.get("ocrPolls", 0))
            if not outcome["proceed"]:
                return outcome
            step = "chunk"
            outcome = self.chunk(request)
            if outcome["proceed"]:
                step = "embed"
                for batch in outcome["batches"]:
                    self.embed(request, batch)
                step = "index"
                outcome = self.index(request)
                step, work = "publish", outcome.get("work")
                self.publish(request, work=work)
            return outcome
        except Exception as error:
            try:
                self.record_infrastructure_failure(
                    request, step=step, error=type(error).__name__, cause=str(error), work=work
                )
            except Exception:
                logger.exception("the interruption could not be recorded; the version looks stalled to the sweep")
            raise

    def inspect(self, request: ProcessVersion) -> dict[str, Any]:
        version = self._version(request)
        if version is None or version.state is not VersionState.STORED:
            # Deleted or never stored since it was queued: nothing to process, and nothing wrong.
            return {**request.step_input(), "proceed": False, "why": "the version is not stored"}
        # Claimed for this attempt only: a superseded attempt, or a version already processed, stops here.
        started = self._metadata.move_processing(
            request.tenant_id,
            version.version_id,
            attempt=request.attempt,
            to=ProcessingState.EXTRACTING,
            expected=[ProcessingState.QUEUED],
        )
        if not started:
            return {**request.step_input(), "proceed": False, "why": f"processing is {version.processing_state.value}"}
        return {**request.step_input(), "proceed": True, "mediaType": version.media_type, "byteSize": version.byte_size}

    def extract(self, request: ProcessVersion) -> dict[str, Any]:
        """The text layer and structure; `recognize` says whether OCR or vision must read the rest (always
        present: the state machine's Choice reads it)."""
        outcome = self._extract(request)
        return {**outcome, "recognize": bool(outcome.get("recognize", False))}

    def _extract(self, request: ProcessVersion) -> dict[str, Any]:
        found = self._found(request)
        if found is None or found[1].state is not VersionState.STORED:
            return {**request.step_input(), "proceed": False, "why": "the version is not stored"}
        file, version = found
        if version.processing_state is not ProcessingState.EXTRACTING or version.processing_attempt != request.attempt:
            # Not claimed by this attempt (inspect did not run, or another attempt superseded it).
            return {**request.step_input(), "proceed": False, "why": "this attempt does not hold the version"}
        if not self._extractor.supports(version.media_type):
            return self._fail(
                request, version, FailureReason.UNSUPPORTED_TYPE, f"{version.media_type} is not extracted"
            )
        try:
            content = self._content.get(
                version.storage_key, version_id=version.storage_version_id, max_bytes=self._extractor.max_bytes
            )
        except ValueError as error:
            return self._fail(request, version, FailureReason.TOO_LARGE, str(error))
        outcome = self._extractor.extract(content, version.media_type)
        if isinstance(outcome, ExtractionFailure):
            return self._fail(request, version, outcome.reason, outcome.detail)
        return self._after_text_layer(request, file, version, outcome, original=lambda: content)

    def _after_text_layer(
        self,
        request: ProcessVersion,
        file: FileRecord,
        version: FileVersionRecord,
        document: ExtractedDocument,
        *,
        original: Callable[[], bytes],
    ) -> dict[str, Any]:
        plan = recognition_plan(version.media_type, document, every_page=request.rescan)
        if not plan.needed:
            return self._store(request, version, document)
        if (plan.ocr_pages and self._ocr.capability().available) or (
            plan.describe and self._vision.capability().available
        ):
            # The text layer is kept while OCR reads the rest: the recognize step starts from it.
            stored = self._store(request, version, document, awaiting_recognition=True)
            return {**stored, "recognize": stored["proceed"]}
        # Nothing here can read the pages without text: the text layer is all there is, and it says why.
        return self._finish_recognition(request, file, version, document, plan, ocr=None, original=original)

    def recognize(self, request: ProcessVersion) -> dict[str, Any]:
        """OCR the pages without text (and describe an image): the result at once, or the job to collect."""
        held = self._holding(request, ProcessingState.RECOGNIZING)
        if held is None:
            return {**request.step_input(), "proceed": False, "why": "this attempt does not hold the version"}
        file, version = held
        original = self._reader(version)  # read at most once, whether OCR or vision asks first
        document = self.read_document(version)
        plan = recognition_plan(version.media_type, document, every_page=request.rescan)
        if not plan.ocr_pages or not self._ocr.capability().available:
            return self._finish_recognition(request, file, version, document, plan, ocr=None, original=original)
        source = OcrSource(
            media_type=version.media_type,
            pages=plan.ocr_pages,
            page_count=document.page_count,
            storage_key=version.storage_key,
            storage_version_id=version.storage_version_id,
            read=original,
            run_id=f"{version.version_id}-{request.attempt}",
        )
        try:
            progress = self._ocr.start(source)
        except (RecognitionFailed, CapabilityUnavailable) as refusal:
            return self._finish_recognition(request, file, version, document, plan, ocr=refusal, original=original)
        if isinstance(progress, RecognitionJob):
            return {**request.step_input(), "proceed": True, "ocrJob": progress.model_dump(mode="json")}
        return self._finish_recognition(request, file, version, document, plan, ocr=progress, original=original)

    def collect_recognition(self, request: ProcessVersion, job: RecognitionJob, *, polls: int = 0) -> dict[str, Any]:
        """One poll of a running OCR job (the workflow waits between polls; nothing sleeps on a job). `polls`
        counts the polls before this one: a job still running after MAX_OCR_POLLS is given up as failed."""
        held = self._holding(request, ProcessingState.RECOGNIZING)
        if held is None:
            # Superseded, deleted or already done: nobody will collect this job, so let the engine free it.
            self._ocr.discard(job)
            return {**request.step_input(), "proceed": False, "why": "this attempt does not hold the version"}
        file, version = held
        try:
            result = self._ocr.collect(job)
        except (RecognitionFailed, CapabilityUnavailable) as refusal:
            result = None
            outcome: RecognitionResult | RecognitionFailed | CapabilityUnavailable = refusal
        else:
            if result is None and polls + 1 >= MAX_OCR_POLLS:
                self._ocr.discard(job)
                outcome = RecognitionFailed(
                    f"the OCR engine had not finished after {polls + 1} polls; scan the file again to retry"
                )
            elif result is None:
                # Still running: say so on the record, so the sweep does not take a long job for a dead one.
                self._metadata.move_processing(
                    request.tenant_id,
                    version.version_id,
                    attempt=request.attempt,
                    to=ProcessingState.RECOGNIZING,
                    expected=[ProcessingState.RECOGNIZING],
                )
                return {
                    **request.step_input(),
                    "proceed": True,
                    "ocrJob": job.model_dump(mode="json"),
                    "ocrPolls": polls + 1,
                }
            else:
                outcome = result
        document = self.read_document(version)
        plan = recognition_plan(version.media_type, document, every_page=request.rescan)
        return self._finish_recognition(
            request, file, version, document, plan, ocr=outcome, original=self._reader(version)
        )

    def _finish_recognition(
        self,
        request: ProcessVersion,
        file: FileRecord,
        version: FileVersionRecord,
        document: ExtractedDocument,
        plan: RecognitionPlan,
        *,
        ocr: RecognitionResult | RecognitionFailed | CapabilityUnavailable | None,
        original: Callable[[], bytes],
    ) -> dict[str, Any]:
        """Merge what OCR read (and the image's description) into the text layer, and store the document:
        usage is recorded first (a priced call happened whatever follows), then the document, then the row."""
        notes: list[str] = []
        recognition = Recognition()
        if isinstance(ocr, RecognitionResult):
            self._record_usage(file, version, step=UsageStep.OCR, attempt=request.attempt, usage=ocr.usage)
            recognition = Recognition(
                ocr_state=OcrState.RECOGNIZED,
                ocr_engine=ocr.engine,
                recognized_pages=tuple(page.page for page in ocr.pages),
                ocr_confidence=round(ocr.confidence, 4),
            )
        elif isinstance(ocr, RecognitionFailed):
            notes.append(f"OCR failed, so pages {_listed(plan.ocr_pages)} have no text: {ocr.detail}")
            recognition = Recognition(ocr_state=OcrState.FAILED, ocr_engine=self._engine(), ocr_detail=ocr.detail)
        elif plan.ocr_pages:
            reason = ocr.reason if isinstance(ocr, CapabilityUnavailable) else self._ocr.capability().reason
            reason = reason or "no OCR engine is configured"
            notes.append(f"pages {_listed(plan.ocr_pages)} have no text layer and OCR is unavailable here: {reason}")
            recognition = Recognition(ocr_state=OcrState.UNAVAILABLE, ocr_detail=reason)
        if plan.unread_pages:
            notes.append(
                f"only {len(plan.ocr_pages)} pages are read by OCR per document:"
                f" pages {_listed(plan.unread_pages)} were not read"
            )
        description: ImageDescription | None = None
        if plan.describe:
            description, vision = self._described(request, file, version, original)
            recognition = recognition.model_copy(
                update=vision.model_dump(include={"vision_state", "vision_model", "vision_detail"})
            )
            if vision.vision_detail and vision.vision_state is not VisionState.DESCRIBED:
                notes.append(f"no description of the image: {vision.vision_detail}")
        merged = with_recognition(
            document,
            self._extractor.limits,
            read_pages=plan.ocr_pages,
            result=ocr if isinstance(ocr, RecognitionResult) else None,
            description=description,
            notes=notes,
        )
        if not merged.blocks:
            return self._fail(request, version, *_nothing_read(document, ocr, recognition))
        return self._store(request, version, merged, recognition=recognition)

    def _described(
        self, request: ProcessVersion, file: FileRecord, version: FileVersionRecord, original: Callable[[], bytes]
    ) -> tuple[ImageDescription | None, Recognition]:
        status = self._vision.capability()
        if not status.available:
            return None, Recognition(vision_state=VisionState.UNAVAILABLE, vision_detail=status.reason)
        image = original()  # a storage failure is the infrastructure's: retried, not recorded
        try:
            description = self._vision.describe(image, version.media_type)
        except VisionFailed as failure:
            return None, Recognition(vision_state=VisionState.FAILED, vision_detail=failure.detail)
        except CapabilityUnavailable as error:
            return None, Recognition(vision_state=VisionState.UNAVAILABLE, vision_detail=error.reason)
        except Exception as error:
            # The adapter has retried already. A description enriches an image that OCR has read; it is
            # not worth leaving the whole version unprocessed for: recorded as failed, a rescan tries again.
            logger.exception("the vision model did not answer")
            detail = f"the vision model did not answer ({type(error).__name__}); scan the file again to retry"
            return None, Recognition(vision_state=VisionState.FAILED, vision_detail=detail)
        self._record_usage(file, version, step=UsageStep.VISION, attempt=request.attempt, usage=description.usage)
        return description, Recognition(vision_state=VisionState.DESCRIBED, vision_model=description.model_id)

    def _engine(self) -> str:
        return self._ocr.capability().provider

    def _reader(self, version: FileVersionRecord) -> Callable[[], bytes]:
        """The original's bytes, fetched on the first call only."""

        @functools.cache
        def read() -> bytes:
            return self._content.get(
                version.storage_key, version_id=version.storage_version_id, max_bytes=self._extractor.max_bytes
            )

        return read

    def _record_usage(
        self, file: FileRecord, version: FileVersionRecord, *, step: str, attempt: int, usage: Usage
    ) -> None:
        """Written before the result it paid for is stored; a failure is logged, never raised: an unbilled
        call is a smaller problem than a document the tenant paid for and cannot read."""
        try:
            self._ledger.record(
                file.tenant_id,
                file.file_id,
                version.version_id,
                file.collection_id,
                step=step,
                attempt=attempt,
                usage=usage,
            )
        except Exception:
            logger.exception("usage not recorded", extra={"step": step, "operation": usage.operation})

    def _store(
        self,
        request: ProcessVersion,
        version: FileVersionRecord,
        document: ExtractedDocument,
        *,
        recognition: Recognition | None = None,
        awaiting_recognition: bool = False,
    ) -> dict[str, Any]:
        key = document_key(
            request.tenant_id,
            UUID(request.file_id),
            version.version_id,
            request.attempt,
            text_layer=awaiting_recognition,
        )
        # The document first, then the row that points at it: a crash between leaves an unreferenced
        # derived object that the next run overwrites, never a row pointing at nothing.
        stored = self._content.put(key, document.model_dump_json().encode(), content_type="application/json")
        summary = ExtractionSummary(
            page_count=document.page_count,
            block_count=len(document.blocks),
            pages_without_text=document.pages_without_text,
            warnings=document.warnings,
            truncated=document.truncated,
            document_key=key,
            document_version_id=stored.version_id,
            recognition=recognition or Recognition(),
        )
        if not self._metadata.record_extraction(
            request.tenant_id,
            version.version_id,
            summary,
            attempt=request.attempt,
            awaiting_recognition=awaiting_recognition,
        ):
            # Deleted or superseded while it was extracted: the document belongs to nobody, unless this was
            # a second delivery of a step whose first delivery already recorded this very key.
            now = self._version(request)
            recorded_by_twin = (
                now is not None
                and now.state is VersionState.STORED
                and now.processing_attempt == request.attempt
                and now.document_key == key
            )
            if not recorded_by_twin:
                self._forget(key, stored.version_id)
            return {**request.step_input(), "proceed": False, "why": "the version changed while it was extracted"}
        if version.document_key and version.document_key != key:
            # What the row pointed at before (the text layer OCR started from, or an earlier attempt's
            # document): nothing points at it any more.
            self._forget(version.document_key, version.document_version_id)
        logger.info("extracted", extra={"blocks": len(document.blocks), "pages": document.page_count})
        return {**request.step_input(), "proceed": True, "blocks": len(document.blocks)}

    def _forget(self, key: str, version_id: str | None) -> None:
        """Remove the one version of `key` this pipeline wrote (every version, for a row recorded before the
        version was kept on it)."""
        try:
            if version_id is None:
                self._content.delete_all_versions(key)
            else:
                self._content.delete_version(key, version_id)
        except Exception:
            # Reconciliation reports it as a derived object no row points at; nothing depends on it.
            logger.exception("an intermediate document was not removed")

    def _fail(
        self, request: ProcessVersion, version: FileVersionRecord, reason: FailureReason, detail: str
    ) -> dict[str, Any]:
        self._metadata.record_failure(
            request.tenant_id, version.version_id, reason=reason, detail=detail, attempt=request.attempt
        )
        logger.info("extraction failed", extra={"reason": reason.value})
        return {**request.step_input(), "proceed": False, "failure": reason.value}

    def chunk(self, request: ProcessVersion) -> dict[str, Any]:
        """Cut the extracted document into chunks, stored in batches for the embed step: the workflow passes
        batch numbers, never text."""
        found = self._found(request)
        if found is None or found[1].state is not VersionState.STORED:
            return {**request.step_input(), "proceed": False, "why": "the version is not stored"}
        _, version = found
        # A redelivered chunk step of the same attempt finds it indexing already and does the same work again.
        if not self._metadata.move_processing(
            request.tenant_id,
            version.version_id,
            attempt=request.attempt,
            to=ProcessingState.INDEXING,
            expected=[ProcessingState.EXTRACTED, ProcessingState.INDEXING],
        ):
            return {**request.step_input(), "proceed": False, "why": "this attempt does not hold the version"}
        try:
            drafts, truncated = self._indexer.chunks_of(self.read_document(version))
        except UnindexableDocument as error:
            return self._fail(request, version, FailureReason.MALFORMED, f"it could not be indexed: {error}")
        prefix = self._work_prefix(request)
        batches = [drafts[start : start + CHUNKS_PER_BATCH] for start in range(0, len(drafts), CHUNKS_PER_BATCH)]
        for number, batch in enumerate(batches):
            self._put_json(chunk_batch_key(prefix, number), ChunkBatch(batch=number, drafts=tuple(batch)))
        self._put_json(
            chunk_manifest_key(prefix),
            ChunkManifest(chunk_count=len(drafts), batch_count=len(batches), truncated=truncated),
        )
        return {**request.step_input(), "proceed": True, "chunks": len(drafts), "batches": list(range(len(batches)))}

    def embed(self, request: ProcessVersion, batch: int) -> dict[str, Any]:
        """Embed one batch of chunks (one task of the workflow's Map). A missing or failing model stores the
        gap in place of the vectors: the chunks are still indexed for the keyword lane, and a re-index embeds
        them."""
        # Holding the version and saying so in one statement: a long Map does not look stalled to the sweep.
        if not self._metadata.move_processing(
            request.tenant_id,
            UUID(request.version_id),
            attempt=request.attempt,
            to=ProcessingState.INDEXING,
            expected=[ProcessingState.INDEXING],
        ):
            return {
                **request.step_input(),
                "proceed": False,
                "batch": batch,
                "why": "this attempt does not hold the version",
            }
        prefix = self._work_prefix(request)
        chunks = ChunkBatch.model_validate_json(
            self._content.get(chunk_batch_key(prefix, batch), max_bytes=_WORK_BYTES)
        )
        vectors, gap = self._indexer.embed([draft.content for draft in chunks.drafts])
        if vectors is None:
            missing = EmbeddedBatch.missing(batch, len(chunks.drafts), gap or "the embedding model gave no vectors")
            self._put_json(vector_batch_key(prefix, batch), missing)
            return {**request.step_input(), "proceed": True, "batch": batch, "embedded": 0}
        tokens = embedded_tokens(chunks.drafts)
        found = self._found(request)
        if found is not None:
            # Paid for now, whatever happens to the attempt: recorded before the vectors are stored, once per
            # batch and attempt however often the task is delivered.
            self._record_usage(
                *found,
                step=f"{UsageStep.EMBED.value}#{batch:05d}",
                attempt=request.attempt,
                usage=self._indexer.usage(tokens),
            )
        self._put_json(
            vector_batch_key(prefix, batch),
            EmbeddedBatch.of(batch, vectors, model=self._indexer.model_id, tokens=tokens),
        )
        return {**request.step_input(), "proceed": True, "batch": batch, "embedded": len(vectors)}

    def index(self, request: ProcessVersion) -> dict[str, Any]:
        """Swap the version's chunks and vectors into the index, in one transaction, streamed batch by batch
        (a 20,000-chunk document never sits in memory whole). Its output names the storage version of every
        work object it read (`work`), which publish deletes."""
        held = self._holding(request, ProcessingState.INDEXING)
        if held is None:
            return {**request.step_input(), "proceed": False, "why": "this attempt does not hold the version"}
        file, version = held
        prefix = self._work_prefix(request)
        raw, manifest_version = self._content.get_versioned(chunk_manifest_key(prefix), max_bytes=_WORK_BYTES)
        manifest = ChunkManifest.model_validate_json(raw)
        model = self._indexer.model_id
        with tempfile.TemporaryDirectory(prefix="quire-index-") as scratch:
            # Fetched before the swap's transaction opens: it locks the file's rows, and storage is slow.
            local = Path(scratch)
            read: dict[str, list[str | None]] = {"chunks": [], "vectors": []}
            for number in range(manifest.batch_count):
                for kind, key in (
                    ("chunks", chunk_batch_key(prefix, number)),
                    ("vectors", vector_batch_key(prefix, number)),
                ):
                    body, stored_version = self._content.get_versioned(key, max_bytes=_WORK_BYTES)
                    (local / key.rsplit("/", 1)[-1]).write_bytes(body)
                    read[kind].append(stored_version)
            work = WorkVersions(manifest=manifest_version, chunks=tuple(read["chunks"]), vectors=tuple(read["vectors"]))
            gap = _embedding_gap(local, manifest.batch_count)
            outcome = self._swap_in(file, version, request, manifest=manifest, gap=gap, model=model, local=local)
        if outcome.written is not IndexWrite.STORED:
            return {
                **request.step_input(),
                "proceed": False,
                "why": f"the chunks were not written ({outcome.written.value})",
                "work": work.model_dump(mode="json"),
            }
        return {
            **request.step_input(),
            "proceed": True,
            "indexed": True,
            "chunks": outcome.result.chunk_count,
            "work": work.model_dump(mode="json"),
        }

    def _swap_in(
        self,
        file: FileRecord,
        version: FileVersionRecord,
        request: ProcessVersion,
        *,
        manifest: ChunkManifest,
        gap: str | None,
        model: str,
        local: Path,
    ) -> IndexOutcome:
        """The fetched batches, read one at a time as the index's transaction writes them."""

        def batches() -> Iterator[tuple[Sequence[ChunkDraft], Sequence[Sequence[float]] | None]]:
            for number in range(manifest.batch_count):
                chunks = ChunkBatch.model_validate_json((local / chunk_batch_key("", number)).read_bytes())
                if gap is not None:
                    yield chunks.drafts, None
                    continue
                embedded = EmbeddedBatch.model_validate_json((local / vector_batch_key("", number)).read_bytes())
                if embedded.embedding_model != model:
                    # A deployment changed the model between the Map and this step: the attempt must run again.
                    raise StaleWork(f"batch {number} was embedded by {embedded.embedding_model}, not {model}")
                if embedded.count != len(chunks.drafts):
                    raise StaleWork(f"batch {number} has {embedded.count} vectors for {len(chunks.drafts)} chunks")
                yield chunks.drafts, embedded.vectors()

        return self._indexer.write_batches(
            self._index_target(file, version),
            batches(),
            count=manifest.chunk_count,
            gap=gap,
            truncated=manifest.truncated,
            attempt=request.attempt,
        )

    def publish(self, request: ProcessVersion, *, work: object = None) -> dict[str, Any]:
        """The attempt's last step: its work objects (those the index step read: `work`, from its output) are
        removed whatever the outcome; the version's row already says what happened."""
        removed = self._remove_work(request, work)
        version = self._version(request)
        state = version.processing_state.value if version is not None else "gone"
        logger.info("published", extra={"processing": state, "work_objects_removed": removed})
        return {**request.step_input(), "proceed": False, "processing": state}

    def record_infrastructure_failure(
        self, request: ProcessVersion, *, step: str, error: str, cause: str, work: object = None
    ) -> dict[str, Any]:
        """The workflow's Catch: a step failed after its retries for a reason that is not the document's. The
        version becomes `interrupted` with what failed (the sweep starts a new attempt later)."""
        detail = f"the {step} step failed: {error}: {caught_error_message(cause)}"
        # The work first: storage may answer while the database (the usual reason to be here) does not.
        try:
            self._remove_work(request, work)
        except Exception:
            logger.exception("the attempt's work was not removed; reconciliation removes it")
        recorded = self._metadata.record_interruption(
            request.tenant_id, UUID(request.version_id), detail=detail, attempt=request.attempt
        )
        logger.warning("processing interrupted", extra={"step": step, "error": error, "recorded": recorded})
        return {**request.step_input(), "proceed": False, "interrupted": recorded, "step": step, "error": error}

    def _holding(self, request: ProcessVersion, state: ProcessingState) -> tuple[FileRecord, FileVersionRecord] | None:
        """The file and version, when this attempt holds the version in `state`."""
        found = self._found(request)
        if found is None:
            return None
        version = found[1]
        if (
            version.state is not VersionState.STORED
            or version.processing_state is not state
            or version.processing_attempt != request.attempt
        ):
            return None
        return found

    def _work_prefix(self, request: ProcessVersion) -> str:
        return work_prefix(request.tenant_id, UUID(request.file_id), UUID(request.version_id), request.attempt)

    def _put_json(self, key: str, model: BaseModel) -> None:
        self._content.put(key, model.model_dump_json().encode(), content_type="application/json")

    def _remove_work(self, request: ProcessVersion, work: object) -> int:
        """The attempt's work objects. On every file's path the index step has read them (`work`) and each is
        deleted by its version: no listing, whose cost grows with the bucket. Only an attempt that stopped
        before its index step read them (an interruption, a superseded attempt) has its prefix listed; a
        version written twice by a redelivered step is removed by reconciliation's sweep of finished work."""
        prefix = self._work_prefix(request)
        if work is None:
            listed = list(self._content.object_versions(prefix))
            for stored in listed:
                if stored.version_id is None:
                    self._content.delete_all_versions(stored.key)
                else:
                    self._content.delete_version(stored.key, stored.version_id)
            return len({stored.key for stored in listed})
        versions = WorkVersions.model_validate(work)
        written = [(chunk_manifest_key(prefix), versions.manifest)]
        written += [(chunk_batch_key(prefix, n), v) for n, v in enumerate(versions.chunks)]
        written += [(vector_batch_key(prefix, n), v) for n, v in enumerate(versions.vectors)]
        for key, version_id in written:
            if version_id is None:
                self._content.delete_all_versions(key)  # a store that keeps no versions
            else:
                self._content.delete_version(key, version_id)
        return len(written)

    def _index_target(self, file: FileRecord, version: FileVersionRecord) -> IndexTarget:
        return IndexTarget(
            tenant_id=file.tenant_id,
            file_id=file.file_id,
            version_id=version.version_id,
            collection_id=file.collection_id,
            filename=version.filename,
            media_type=version.media_type,
            uploaded_at=version.stored_at or version.created_at,
        )

    def reindex(self, file: FileRecord, version: FileVersionRecord, *, attempt: int | None) -> IndexOutcome:
        """Index one extracted version from its stored document (the pipeline's step, and re-indexing)."""
        target = self._index_target(file, version)
        # A re-index (no attempt) is its own step for the ledger, per model: re-embedding is paid again.
        step, run = (
            (UsageStep.EMBED.value, attempt)
            if attempt is not None
            else (f"reembed:{self._indexer.model_id}", version.processing_attempt)
        )

        def record(usage: Usage) -> None:
            self._record_usage(file, version, step=step, attempt=run, usage=usage)

        return self._indexer.index(target, self.read_document(version), attempt=attempt, on_embedded=record)

    def _found(self, request: ProcessVersion) -> tuple[FileRecord, FileVersionRecord] | None:
        found = self._metadata.find_version(request.tenant_id, UUID(request.version_id))
        return found if found is not None and str(found[0].file_id) == request.file_id else None

    def _version(self, request: ProcessVersion) -> FileVersionRecord | None:
        found = self._found(request)
        return found[1] if found is not None else None

    def has_document(self, version: FileVersionRecord) -> bool:
        return version.document_key is not None and self._content.head(version.document_key) is not None

    def read_document(self, version: FileVersionRecord) -> ExtractedDocument:
        """The stored document of an extracted version."""
        if version.document_key is None:
            raise ValueError("this version has no extracted document")
        raw = self._content.get(version.document_key, max_bytes=MAX_DOCUMENT_BYTES)
        return ExtractedDocument.model_validate_json(raw)


def _embedding_gap(local: Path, batch_count: int) -> str | None:
    """Why the version stays keyword-only, or None when every batch has its vectors. One batch without them
    leaves all of it keyword-only, and says why: a re-index embeds it whole (never a version half in the
    vector lane)."""
    for number in range(batch_count):
        embedded = EmbeddedBatch.model_validate_json((local / vector_batch_key("", number)).read_bytes())
        if embedded.gap is not None:
            return embedded.gap
    return None


def _nothing_read(
    document: ExtractedDocument,
    ocr: RecognitionResult | RecognitionFailed | CapabilityUnavailable | None,
    recognition: Recognition,
) -> tuple[FailureReason, str]:
    """Why a document that needed OCR ended with no text at all: never an empty success."""
    pages = document.page_count or 1
    where = "the page" if pages == 1 else f"any of its {pages} pages"
    if isinstance(ocr, RecognitionFailed):
        return FailureReason.OCR_FAILED, f"OCR failed: {ocr.detail}"
    if isinstance(ocr, RecognitionResult):
        return FailureReason.NO_TEXT_FOUND, f"OCR found no words on {where}"
    reason = recognition.ocr_detail or "no OCR engine is configured"
    return FailureReason.NO_TEXT_LAYER, f"there is no text layer on {where}, and OCR is unavailable: {reason}"


def caught_error_message(cause: str) -> str:
    """The error message out of a Step Functions cause (a Lambda error's JSON), without its stack trace."""
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause[:500]
    if isinstance(parsed, dict):
        return str(parsed.get("errorMessage") or parsed.get("errorType") or "")[:500]
    return cause[:500]


def _listed(pages: tuple[int, ...]) -> str:
    shown = ", ".join(str(page) for page in pages[:20])
    return shown + (f" and {len(pages) - 20} more" if len(pages) > 20 else "")
