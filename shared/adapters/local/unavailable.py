"""Adapters for capabilities that are not present here. They say so and refuse; they never pretend.

A refusal raises CapabilityUnavailable carrying the same reason `quire status` prints, so a pipeline
step can record "no vision model configured" on the file instead of an empty or invented result.
"""

from collections.abc import Sequence
from typing import NoReturn

from shared.domain.answers import EvidenceBlock, GeneratedDraft
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.chunk_situations import GeneratedSituation, SituationRequest
from shared.domain.errors import CapabilityUnavailable
from shared.domain.exports import RenderJob
from shared.domain.recognition import ImageDescription, RecognitionJob, RecognitionResult
from shared.domain.similarity import MINILM_SCALE, SimilarityScale
from shared.domain.summaries import GeneratedSummary
from shared.domain.transcription import MediaSource, Transcript, TranscriptionJob
from shared.domain.usage import Usage
from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.ports import (
    ChunkSituator,
    DocumentSummarizer,
    EmbeddingProvider,
    Generator,
    MalwareScanning,
    OcrProvider,
    OcrSource,
    RenderQueue,
    TranscriptionProvider,
    VisionProvider,
    Workflow,
)


class _Unavailable:
    def __init__(self, capability: Capability, reason: str) -> None:
        self._status = CapabilityStatus.unavailable(provider="none", reason=reason)
        self._capability = capability

    def capability(self) -> CapabilityStatus:
        return self._status

    def _refuse(self) -> NoReturn:
        raise CapabilityUnavailable(self._capability.value, self._status.reason or "unavailable")


class UnavailableEmbedder(_Unavailable, EmbeddingProvider):
    def __init__(self, reason: str, *, dimension: int) -> None:
        super().__init__(Capability.EMBEDDER, reason)
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return "none"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return 0

    @property
    def languages(self) -> None:
        return None

    @property
    def similarity_scale(self) -> SimilarityScale:
        return MINILM_SCALE

    def count_tokens(self, text: str) -> int:
        self._refuse()

    def usage(self, tokens: int) -> Usage:
        self._refuse()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self._refuse()

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        self._refuse()


class UnavailableOcr(_Unavailable, OcrProvider):
    def __init__(self, reason: str) -> None:
        super().__init__(Capability.OCR, reason)

    def start(self, source: OcrSource) -> RecognitionResult | RecognitionJob:
        self._refuse()

    def collect(self, job: RecognitionJob) -> RecognitionResult | None:
        self._refuse()

    def discard(self, job: RecognitionJob) -> None:
        return None


class UnavailableVision(_Unavailable, VisionProvider):
    def __init__(self, reason: str) -> None:
        super().__init__(Capability.VISION, reason)

    def describe(self, image: bytes, media_type: str) -> ImageDescription:
        self._refuse()


class UnavailableTranscription(_Unavailable, TranscriptionProvider):
    def __init__(self, reason: str) -> None:
        super().__init__(Capability.TRANSCRIPTION, reason)

    def start(self, source: MediaSource) -> Transcript | TranscriptionJob:
        self._refuse()

    def collect(self, job: TranscriptionJob) -> Transcript | None:
        self._refuse()

    def discard(self, job: TranscriptionJob) -> None:
        return None


class UnavailableMalwareScanning(_Unavailable, MalwareScanning):
    """No scanner: nothing waits for a verdict, and nothing claims one (a file says it was not scanned)."""

    def __init__(self, reason: str) -> None:
        super().__init__(Capability.MALWARE_SCANNING, reason)

    @property
    def gates_processing(self) -> bool:
        return False


class UnavailableGenerator(_Unavailable, Generator):
    def __init__(self, reason: str) -> None:
        super().__init__(Capability.GENERATOR, reason)

    @property
    def model_id(self) -> str:
        return "none"

    @property
    def prompt_version(self) -> str:
        return "none"

    def generate(self, question: str, evidence: Sequence[EvidenceBlock]) -> GeneratedDraft:
        self._refuse()


class UnavailableSummarizer(_Unavailable, DocumentSummarizer):
    """No model writes summaries here: the caller makes an extractive outline and passes this reason on."""

    def __init__(self, reason: str) -> None:
        super().__init__(Capability.SUMMARIZER, reason)

    def summarize(self, blocks: Sequence[str], *, max_sentences: int) -> GeneratedSummary:
        self._refuse()


class UnavailableSituator(_Unavailable, ChunkSituator):
    """No model writes chunks' situating sentences here: chunks keep their deterministic context."""

    def __init__(self, reason: str) -> None:
        super().__init__(Capability.CHUNK_CONTEXT, reason)

    @property
    def model_id(self) -> str:
        return "none"

    @property
    def prompt_version(self) -> str:
        return "none"

    def situate(self, request: SituationRequest) -> GeneratedSituation:
        self._refuse()


class UnavailableWorkflow(Workflow):
    """No way to start processing here (no state machine configured): starting says so and refuses."""

    def __init__(self, reason: str) -> None:
        self._reason = reason

    def start(self, request: ProcessVersion) -> StartOutcome:
        raise CapabilityUnavailable("workflow", self._reason)


class UnavailableRenderQueue(RenderQueue):
    """No render worker configured: a submitted export stays pending (said in the log), never faked."""

    def __init__(self, reason: str) -> None:
        self._reason = reason

    def submit(self, job: RenderJob) -> None:
        raise CapabilityUnavailable("render worker", self._reason)
