"""Recordings through the pipeline (issue 35): the extract step probes the container, the recognize step has the
speech engine transcribe it, and the transcript becomes the document (shared/domain/transcription.py), chunked and
cited by time like any other.

The probe reads the headers only (and, for some containers, the tail), through ranged reads served to the
sandbox's child: never the whole recording, which may be gigabytes. The speech engine gets the recording as a file
it fetches range by range (the local engine, in its own sandbox) or reads it from storage itself (Transcribe).
"""

import math
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from pydantic import TypeAdapter

from shared.domain.document import ExtractedDocument
from shared.domain.errors import CapabilityUnavailable, TranscriptionFailed
from shared.domain.files import FailureReason, FileVersionRecord, OcrState, ProcessingState, Recognition
from shared.domain.media import MediaInfo, MediaLimits, MediaRefusal
from shared.domain.steps import Extracted, Halt, RecognitionInput, Recognized
from shared.domain.transcription import MediaSource, Transcript, TranscriptionJob, transcript_document
from shared.domain.usage import UsageStep
from shared.domain.workflow import ProcessVersion
from shared.ports import FileContentStore, TranscriptionProvider
from shared.sandbox import Failure, TimedOut, dotted_name, pack, sandboxed
from shared.services import isolated
from shared.services.attempts import AttemptClaims, Held
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.limits import SpendLimits
from shared.services.metering import Metering
from shared.services.upload_completion import RangedObject

# Reads a recording's container headers from a seekable stream, within the limits.
MediaProbe = Callable[[BinaryIO, MediaLimits], MediaInfo | MediaRefusal]
_PROBED: TypeAdapter[MediaInfo | MediaRefusal] = TypeAdapter(MediaInfo | MediaRefusal)
PROBE_TIMEOUT_SECONDS = 30.0
PROBE_MEMORY_BYTES = 512 * 1024 * 1024
# Polls of one transcription job before it is given up (with the workflow's 10-second Wait: about four hours,
# Transcribe's own longest recording).
MAX_TRANSCRIPTION_POLLS = 1_440
# A recording is fetched for the local engine this much at a time.
FETCH_BYTES = 8 * 1024 * 1024


class Recordings:
    def __init__(
        self,
        transcriber: TranscriptionProvider | None,
        *,
        claims: AttemptClaims,
        documents: ExtractedDocuments,
        content: FileContentStore,
        metering: Metering,
        limits: MediaLimits,
        probe: MediaProbe | None,
        spend: SpendLimits | None = None,
    ) -> None:
        """`probe` reads a recording's container (shared/adapters/parsers/media_probe.py:probe_media), run in the
        sandbox's child by name; None: recordings are not read here (each fails `no-transcription`)."""
        self._probe_name = dotted_name(probe) if probe is not None else None
        self._transcriber = transcriber
        self._spend = spend
        self._claims = claims
        self._documents = documents
        self._content = content
        self._metering = metering
        self._limits = limits

    # --- extract --------------------------------------------------------------------------------------------

    def inspect(self, request: ProcessVersion, held: Held) -> Extracted:
        """The extract step of a recording: its container probed within the limits (a refusal is the version's
        failure, with its sentence), then stored as a document of no blocks yet that knows its duration, for the
        recognize step to transcribe; or, with no speech engine here, the failure that says so."""
        version = held.version
        unavailable = self._unavailable()
        if unavailable is not None:
            return self._documents.fail(Extracted, request, version, FailureReason.NO_TRANSCRIPTION, unavailable)
        probed = self._probe(version)
        if isinstance(probed, str):
            return self._documents.fail(Extracted, request, version, FailureReason.NOT_TRANSCRIBABLE, probed)
        if isinstance(probed, MediaRefusal):
            return self._documents.fail(Extracted, request, version, FailureReason.NOT_TRANSCRIBABLE, probed.sentence)
        document = ExtractedDocument(media_type=version.media_type, blocks=(), duration_seconds=probed.duration_seconds)
        recognition = Recognition(duration_seconds=probed.duration_seconds)
        stored = self._documents.store(
            Extracted, request, version, document, recognition=recognition, awaiting_recognition=True
        )
        return stored.model_copy(update={"recognize": stored.proceed})

    def _unavailable(self) -> str | None:
        """Why no recording can be transcribed here, or None."""
        if self._transcriber is None or self._probe_name is None:
            return "no speech engine is configured in this deployment"
        status = self._transcriber.capability()
        return None if status.available else status.reason or "the speech engine is unavailable"

    def _probe(self, version: FileVersionRecord) -> MediaInfo | MediaRefusal | str:
        size = version.byte_size or 0
        ranged = RangedObject(
            self._content,
            version.storage_key,
            version.storage_version_id,
            size,
            budget=self._limits.max_header_bytes + 1024 * 1024,
        )
        header = {"probe": self._probe_name, "size": size, "limits": self._limits.model_dump(mode="json")}
        found: MediaInfo | MediaRefusal | Failure = sandboxed(
            isolated.probe_recording,
            pack(header),
            _PROBED.validate_json,
            timeout_seconds=PROBE_TIMEOUT_SECONDS,
            memory_limit_bytes=PROBE_MEMORY_BYTES,
            max_answer_bytes=64 * 1024,
            ranges=ranged.range,
        )
        if isinstance(found, TimedOut):
            return f"reading the recording's container took longer than {found.seconds:g} seconds"
        if isinstance(found, MediaInfo | MediaRefusal):
            return found
        return "the recording's container could not be read safely: save it again and upload it"

    # --- recognize ------------------------------------------------------------------------------------------

    def transcribe(self, request: RecognitionInput) -> Recognized:
        """Start the transcription (the transcript at once, or the job to poll), or poll the job the input names."""
        if request.transcription_job is not None:
            return self.collect(request, request.transcription_job, polls=request.transcription_polls)
        held = self._claims.held(request, ProcessingState.RECOGNIZING)
        if held is None:
            return Recognized.halted(request, Halt.NOT_HELD)
        transcriber = self._transcriber
        if transcriber is None:
            detail = self._unavailable() or ""
            return self._documents.fail(Recognized, request, held.version, FailureReason.NO_TRANSCRIPTION, detail)
        version = held.version
        probed = self._documents.read(version)
        source = MediaSource(
            media_type=version.media_type,
            storage_key=version.storage_key,
            storage_version_id=version.storage_version_id,
            fetch=self._fetcher(version),
            duration_seconds=probed.duration_seconds,
            run_id=f"{version.version_id}-{request.attempt}",
        )
        progress = self._started(request, version, transcriber, source)
        if isinstance(progress, Recognized):
            return progress
        if isinstance(progress, TranscriptionJob):
            return Recognized.going_on(request, transcription_job=progress)
        return self.finish(request, held, probed, progress)

    def _started(
        self,
        request: RecognitionInput,
        version: FileVersionRecord,
        transcriber: TranscriptionProvider,
        source: MediaSource,
    ) -> Transcript | TranscriptionJob | Recognized:
        """What the engine began (a transcript, a job), or how the step ends without it: past the tenant's daily
        minutes (checked before the engine is asked, said so on the version), or refused by the engine."""
        if self._spend is not None:
            refusal = self._spend.transcription_refusal(request.tenant_id, seconds=source.duration_seconds or 0)
            if refusal is not None:
                return self._documents.fail(Recognized, request, version, FailureReason.SPEND_LIMIT, str(refusal))
        try:
            return transcriber.start(source)
        except TranscriptionFailed as failure:
            return self._documents.fail(
                Recognized, request, version, FailureReason.TRANSCRIPTION_FAILED, failure.detail
            )
        except CapabilityUnavailable as unavailable:
            return self._documents.fail(
                Recognized, request, version, FailureReason.NO_TRANSCRIPTION, unavailable.reason
            )
        except FileNotFoundError:
            # The file was deleted while the engine started: nothing left to do.
            if self._claims.held(request, ProcessingState.RECOGNIZING) is None:
                return Recognized.halted(request, Halt.NOT_STORED)
            raise

    def collect(self, request: ProcessVersion, job: TranscriptionJob, *, polls: int = 0) -> Recognized:
        """One poll of a running transcription job (the workflow waits between polls)."""
        transcriber = self._transcriber
        if transcriber is None:
            raise ValueError(f"job {job.job_id} of {job.engine} cannot be collected here: no speech engine")
        held = self._claims.held(request, ProcessingState.RECOGNIZING)
        if held is None:
            transcriber.discard(job)
            return Recognized.halted(request, Halt.NOT_HELD)
        version = held.version
        try:
            transcript = transcriber.collect(job)
        except TranscriptionFailed as failure:
            transcriber.discard(job)
            return self._documents.fail(
                Recognized, request, version, FailureReason.TRANSCRIPTION_FAILED, failure.detail
            )
        if transcript is None:
            if polls + 1 >= MAX_TRANSCRIPTION_POLLS:
                transcriber.discard(job)
                detail = f"the speech engine had not finished after {polls + 1} polls; process the file again"
                return self._documents.fail(Recognized, request, version, FailureReason.TRANSCRIPTION_FAILED, detail)
            self._claims.heartbeat(request, ProcessingState.RECOGNIZING)
            return Recognized.going_on(request, transcription_job=job, transcription_polls=polls + 1)
        finished = self.finish(request, held, self._documents.read(version), transcript)
        # Only once its transcript is stored: a retried step (an outage in `finish`) polls the job again.
        transcriber.discard(job)
        return finished

    def finish(
        self, request: ProcessVersion, held: Held, probed: ExtractedDocument, transcript: Transcript
    ) -> Recognized:
        """The transcript as the version's document: usage first (the engine ran whatever follows), then the
        document, then the row; a recording in which no word was heard fails, saying so."""
        file, version = held.file, held.version
        duration = probed.duration_seconds or transcript.duration_seconds
        usage = transcript.usage
        if not usage.seconds:
            # Metered by the recording's length whatever the engine counted: what the limit and a bill go by.
            usage = usage.model_copy(update={"seconds": math.ceil(duration)})
        self._metering.record(file, version, step=UsageStep.TRANSCRIPTION, attempt=request.attempt, usage=usage)
        document = transcript_document(transcript, version.media_type).model_copy(update={"duration_seconds": duration})
        if not document.blocks:
            heard = f"the speech engine ({transcript.engine}) heard no words in {_length(duration)}"
            return self._documents.fail(Recognized, request, version, FailureReason.NO_SPEECH_FOUND, heard)
        recognition = Recognition(
            transcription_state=OcrState.RECOGNIZED,
            transcription_engine=transcript.engine,
            transcription_confidence=document.confidence,
            transcription_language=transcript.language,
            duration_seconds=duration,
        )
        return self._documents.store(Recognized, request, version, document, recognition=recognition)

    def _fetcher(self, version: FileVersionRecord) -> Callable[[Path], None]:
        """Write the original to `path` range by range: a recording is never held whole in memory."""

        def fetch(path: Path) -> None:
            size = version.byte_size or 0
            with path.open("wb") as target:
                for start in range(0, size, FETCH_BYTES):
                    target.write(
                        self._content.read_range(
                            version.storage_key,
                            version_id=version.storage_version_id,
                            start=start,
                            length=min(FETCH_BYTES, size - start),
                        )
                    )

        return fetch


def _length(seconds: float | None) -> str:
    if seconds is None:
        return "the recording"
    if seconds < 90:
        return f"{seconds:.0f} seconds of recording"
    return f"{seconds / 60:.0f} minutes of recording"
