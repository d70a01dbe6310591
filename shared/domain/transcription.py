"""What a speech engine returns, independent of the engine (Amazon Transcribe, the local Whisper): segments of a
recording, each with its time span, its speaker when known and its words' confidences, so a citation can name the
second as an OCR citation names the box (issue 35; docs/formats.md, "Recordings").

A transcript is a transcription, not an inference: like OCR's words it is quoted, and its low-confidence words
are flagged three ways (the segment, the version's summary, the citation) as OCR's are.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.domain.document import Block, BlockKind, ExtractedDocument, Location
from shared.domain.recognition import LOW_CONFIDENCE_THRESHOLD, mean_confidence
from shared.domain.usage import Usage

# The longest recording transcribed by default (QUIRE_MAX_MEDIA_SECONDS): Transcribe's own limit is 4 hours.
MAX_MEDIA_SECONDS = 4 * 60 * 60
# Words a transcript may hold, whatever the engine says (about 10 hours of fast speech): bounds what a job's
# output, and a sandboxed engine's answer, may make the pipeline hold.
MAX_TRANSCRIPT_WORDS = 250_000
# Characters of one segment, and of a whole transcript (the words above at a generous 40 characters each): a word
# count alone would let one segment of text without spaces hold anything.
MAX_SEGMENT_CHARACTERS = 20_000
MAX_TRANSCRIPT_CHARACTERS = 10 * 1024 * 1024
MAX_SPEAKER_LABEL = 64


class TranscribedWord(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str = Field(min_length=1, max_length=200)
    start_seconds: float = Field(ge=0)
    end_seconds: float = Field(ge=0)
    confidence: float = Field(ge=0, le=1)

    @property
    def low_confidence(self) -> bool:
        return self.confidence < LOW_CONFIDENCE_THRESHOLD


class TranscriptSegment(BaseModel):
    """A stretch of speech between pauses (or one speaker's turn): its text, where it is in the recording, who
    spoke it when the engine labels speakers, and its words."""

    model_config = ConfigDict(frozen=True)

    text: str = Field(min_length=1, max_length=MAX_SEGMENT_CHARACTERS)
    start_seconds: float = Field(ge=0)
    end_seconds: float = Field(ge=0)
    speaker: str | None = Field(default=None, max_length=MAX_SPEAKER_LABEL)
    # The words' mean confidence (weighted by length); the engine's own where it gives no words.
    confidence: float = Field(ge=0, le=1)
    words: tuple[TranscribedWord, ...] = ()

    @model_validator(mode="after")
    def _ordered(self) -> "TranscriptSegment":
        if self.end_seconds < self.start_seconds:
            raise ValueError(f"a segment ends ({self.end_seconds}s) before it starts ({self.start_seconds}s)")
        return self

    @property
    def low_confidence(self) -> bool:
        return self.confidence < LOW_CONFIDENCE_THRESHOLD


class Transcript(BaseModel):
    model_config = ConfigDict(frozen=True)

    engine: str
    # BCP-47 as the engine names it (en, en-US, de-DE), or None when it did not say.
    language: str | None = None
    duration_seconds: float = Field(ge=0)
    segments: tuple[TranscriptSegment, ...]
    usage: Usage

    @model_validator(mode="after")
    def _bounded(self) -> "Transcript":
        words = sum(len(segment.words) for segment in self.segments)
        characters = sum(len(segment.text) for segment in self.segments)
        if words > MAX_TRANSCRIPT_WORDS or characters > MAX_TRANSCRIPT_CHARACTERS:
            raise ValueError(
                f"a transcript holds at most {MAX_TRANSCRIPT_WORDS} words and {MAX_TRANSCRIPT_CHARACTERS} characters;"
                f" this one {words} and {characters}"
            )
        return self

    @property
    def text(self) -> str:
        return "\n".join(segment.text for segment in self.segments)

    @property
    def confidence(self) -> float:
        return mean_confidence([(segment.confidence, len(segment.text)) for segment in self.segments])

    @property
    def word_count(self) -> int:
        return sum(len(segment.words) or len(segment.text.split()) for segment in self.segments)


@dataclass(frozen=True)
class MediaSource:
    """The recording to transcribe: engines that read storage themselves (Transcribe) use the key and version;
    engines that need the bytes (the local one) have `fetch` write the original to a path, never to memory (a
    recording may be gigabytes)."""

    media_type: str
    storage_key: str
    storage_version_id: str | None
    fetch: Callable[[Path], None]
    # From the probe (shared/adapters/parsers/media_probe.py): what the container says, before any decoding.
    duration_seconds: float | None = None
    # The collection's language when it fixes one; None asks the engine to identify it.
    language: str | None = None
    speaker_labels: bool = False
    # Names this transcription (version and attempt): a re-delivered start is the same job.
    run_id: str = ""


class TranscriptionJob(BaseModel):
    """An engine's job still running (a Transcribe batch job): what is needed to collect it later, small enough to
    ride in the workflow's state between polls."""

    model_config = ConfigDict(frozen=True)

    engine: str
    job_id: str
    # Where the engine writes its output (under the tenant's derived prefix), removed once collected.
    output_key: str | None = None


def timestamp(seconds: float) -> str:
    """`mm:ss`, or `h:mm:ss` past the first hour: whole seconds, rounded down (a citation's moment has begun)."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, rest = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{rest:02d}" if hours else f"{minutes:02d}:{rest:02d}"


# The en dash of a range, as the issue writes a moment.
RANGE_DASH = "\u2013"


def time_span(start_seconds: float, end_seconds: float) -> str:
    """`[mm:ss` en dash `mm:ss]`, as extracted text windows, exports and the CLI print a moment of a recording."""
    return f"[{timestamp(start_seconds)}{RANGE_DASH}{timestamp(end_seconds)}]"


def transcript_document(transcript: Transcript, media_type: str) -> ExtractedDocument:
    """A transcript as the document the rest of the pipeline reads: one paragraph per segment (a stretch of speech
    between pauses, or a speaker's turn), located by its time span and speaker, with its confidence, so chunks
    cut along segments and cite the moment (and a low-confidence segment is flagged as an OCR line is)."""
    blocks = tuple(
        Block(
            kind=BlockKind.PARAGRAPH,
            text=" ".join(segment.text.split()),
            location=Location(
                start_seconds=round(segment.start_seconds, 2),
                end_seconds=round(segment.end_seconds, 2),
                speaker=segment.speaker,
            ),
            confidence=round(segment.confidence, 4),
        )
        for segment in transcript.segments
        if segment.text.strip()
    )
    unsure = sum(1 for segment in transcript.segments for word in segment.words if word.low_confidence)
    unsure_words = f"the speech engine was unsure of {unsure} of {transcript.word_count} words"
    warnings = (f"{unsure_words}; check them against the recording",) if unsure else ()
    return ExtractedDocument(
        media_type=media_type,
        blocks=blocks,
        warnings=warnings,
        confidence=round(transcript.confidence, 4) if blocks else None,
        duration_seconds=transcript.duration_seconds,
        language=transcript.language,
    )


def with_moments(blocks: tuple[Block, ...]) -> tuple[Block, ...]:
    """A recording's segments with their moment (and speaker) written into their text, for a rendering that shows
    text only (a PDF, a Word document, an export), as `time_span` writes it. Other blocks unchanged."""
    return tuple(_with_moment(block) if block.location.start_seconds is not None else block for block in blocks)


def _with_moment(block: Block) -> Block:
    where = block.location
    start = where.start_seconds or 0.0
    speaker = f"{where.speaker}: " if where.speaker else ""
    return block.model_copy(
        update={
            "text": f"{time_span(start, where.end_seconds or start)} {speaker}{block.text}",
            "location": where.model_copy(update={"start_seconds": None, "end_seconds": None, "speaker": None}),
        }
    )
