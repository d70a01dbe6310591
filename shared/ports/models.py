"""Model and engine providers, each a capability that may be absent here (and says why).

The docstrings are the contracts adapters keep (docs/architecture.md, "Ports and their adapters").
"""

from collections.abc import Sequence
from typing import Protocol

from shared.domain.answers import EvidenceBlock, GeneratedDraft
from shared.domain.capabilities import CapabilityStatus
from shared.domain.chunk_situations import GeneratedSituation, SituationRequest
from shared.domain.languages import LanguageGuess
from shared.domain.recognition import ImageDescription, OcrSource, RecognitionJob, RecognitionResult
from shared.domain.similarity import SimilarityScale
from shared.domain.summaries import GeneratedSummary
from shared.domain.transcription import MediaSource, Transcript, TranscriptionJob
from shared.domain.usage import Usage


class CapabilityPort(Protocol):
    def capability(self) -> CapabilityStatus:
        """Whether calls will produce real results here, and if not, why."""
        ...


class EmbeddingProvider(CapabilityPort, Protocol):
    """Text → vectors of a fixed dimension from one named model (Bedrock Titan v2; a local MiniLM).

    Chunks are sized in the model's own tokens (`count_tokens`, `max_tokens`), so a chunk is never
    silently truncated by the model it was cut for.
    """

    @property
    def model_id(self) -> str:
        """Names the model and everything that changes its vectors (e.g. `amazon.titan-embed-text-v2:0@384`)."""
        ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """The longest text the model reads whole (room for its own special tokens already taken off)."""
        ...

    @property
    def languages(self) -> frozenset[str] | None:
        """The languages (ISO 639-1) the model's vectors were trained to place: a question in another one gets the
        vector lane's weight for uncovered languages (docs/adr/0011). None: multilingual, every language."""
        ...

    @property
    def similarity_scale(self) -> SimilarityScale:
        """Where the model's similarities fall: the floors that read its scores (semantic floor, answer sentences,
        confidence) follow the model, not one model's numbers (shared/domain/similarity.py)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens `text` costs this model, special tokens excluded, so the counts of parts add up (an upper
        estimate where the model publishes no tokenizer)."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order.

        Raises CapabilityUnavailable when there is no model, EmbeddingFailed when the model did not
        answer (after its own retries); the caller keeps the chunks for keyword search and says so.
        """
        ...

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        """One vector per question, read as the model reads questions: E5 models are told "query: " where a chunk
        is a "passage: "; most models read a question as any text (`embed`). Raises as `embed` does."""
        ...

    def usage(self, tokens: int) -> Usage:
        """How embedding texts of `tokens` tokens (by `count_tokens`) is recorded in the usage ledger."""
        ...


class OcrProvider(CapabilityPort, Protocol):
    """Pixels → lines with boxes and a required confidence, tables where the engine finds them
    (Textract; RapidOCR locally). Transcribes only: it never interprets what the page means."""

    def start(self, source: OcrSource) -> RecognitionResult | RecognitionJob:
        """Read `source`'s pages: the result when the engine answers at once, or a job to `collect` later
        (the workflow waits between polls: no function sleeps on a job).

        Raises RecognitionFailed when the engine refuses the document (unreadable, unsupported, too
        large), CapabilityUnavailable when there is no engine; anything else is the infrastructure's
        failure and worth a retry.
        """
        ...

    def collect(self, job: RecognitionJob) -> RecognitionResult | None:
        """The finished job's result (pages numbered as in the original), or None while it runs.
        Raises RecognitionFailed when the job failed on the document."""
        ...

    def discard(self, job: RecognitionJob) -> None:
        """Nobody will collect `job` (its attempt was superseded, its file deleted): free what it holds,
        such as a copy of pages staged for it. Never raises."""
        ...


class VisionProvider(CapabilityPort, Protocol):
    """Image → a labelled description (Bedrock Converse). Locally there is none: never fabricate one."""

    def describe(self, image: bytes, media_type: str) -> ImageDescription:
        """Raises CapabilityUnavailable when no image-capable model is configured, VisionFailed when the
        model refuses this image; anything else is worth a retry."""
        ...


class TranscriptionProvider(CapabilityPort, Protocol):
    """Speech → timed text (shared/domain/transcription.py): Amazon Transcribe's batch jobs on AWS, collected by the
    state machine's Wait loop as Textract's are; locally a Whisper model in the sandbox, which finishes in `start`.
    Raise TranscriptionFailed for a recording the engine refuses or fails on (its sentence is the owner's)."""

    def start(self, source: MediaSource) -> Transcript | TranscriptionJob:
        """The transcript now, or the job to collect it from (the same job for a re-delivered start)."""
        ...

    def collect(self, job: TranscriptionJob) -> Transcript | None:
        """The transcript once the job is done; None while it runs."""
        ...

    def discard(self, job: TranscriptionJob) -> None:
        """Whatever the job left behind (its output), once collected or abandoned."""
        ...


class Generator(CapabilityPort, Protocol):
    """A structured answer draft from retrieved evidence (Bedrock Converse). Absent → evidence-only answers.

    The evidence is document text and untrusted: the adapter fences every block as data and its system rules
    forbid following instructions inside it. The draft it returns is not trusted either: the answer service
    validates every claim against the evidence it sent (shared/domain/grounding/).
    """

    @property
    def model_id(self) -> str:
        """The model that drafts (part of the answer cache key)."""
        ...

    @property
    def prompt_version(self) -> str:
        """Changes whenever the instructions change (part of the answer cache key)."""
        ...

    def generate(self, question: str, evidence: Sequence[EvidenceBlock]) -> GeneratedDraft:
        """Raise CapabilityUnavailable for every way of not getting a draft (no model, throttled, timed out,
        a response that is not the requested structure), with a sentence for the caller."""
        ...


class DocumentSummarizer(CapabilityPort, Protocol):
    """One document's blocks → a summary a model wrote from them alone, every sentence citing the blocks that
    bear it out (Bedrock Converse with citations). Locally there is none: summaries are extractive outlines."""

    def summarize(self, blocks: Sequence[str], *, max_sentences: int) -> GeneratedSummary:
        """At most `max_sentences` sentences, each citing indexes into `blocks` with the spans it quoted: only
        what `validated_summary` (shared/domain/summaries.py) keeps. The summary says how many of `blocks` were
        sent (an adapter bounds what one call reads).

        Raises CapabilityUnavailable when it cannot: no model, throttled or timed out past its retries, the
        model refused or a guardrail withheld the answer, or no sentence of it survived validation. It never
        returns an invented or unchecked summary; the caller falls back to an extractive outline and says why.
        """
        ...


class ChunkSituator(CapabilityPort, Protocol):
    """One chunk → a model's one sentence on where it sits in its document (Anthropic's "contextual retrieval",
    Bedrock Converse), indexed as the chunk's context. Locally there is none: chunks keep their deterministic
    context (title, heading path, caption)."""

    @property
    def model_id(self) -> str:
        """The model that writes the sentences (part of their cache key)."""
        ...

    @property
    def prompt_version(self) -> str:
        """Changes whenever the instructions change (part of the sentences' cache key)."""
        ...

    def situate(self, request: SituationRequest) -> GeneratedSituation:
        """The sentence for `request.chunk` within `request.document` (its head: title, outline, beginning),
        cleaned and bounded by `cleaned_situation`, with the tokens the call consumed.

        Raises CapabilityUnavailable for every way of not getting one (no model, throttled or timed out past its
        retries, refused, withheld, or an answer that says nothing), with a sentence for the caller. It never
        returns an invented sentence; the caller indexes the chunk without one and says why."""
        ...


class LanguageDetector(Protocol):
    """Which language a text is written in, told on this machine: no text is sent anywhere to find out."""

    def detect(self, text: str) -> LanguageGuess | None:
        """The likeliest language of `text` with its probability, or None when the text has no letters or the
        model knows no language it could be. Never raises for any text."""
        ...
