"""The local TranscriptionProvider: faster-whisper (Whisper on CTranslate2, int8 on the CPU) over audio that PyAV
(FFmpeg's libraries) decodes to 16 kHz mono, with voice-activity filtering and word timestamps
(docs/transcription.md).

A recording is attacker-controlled input to FFmpeg's demuxers and decoders, so everything that reads it runs in
the sandbox's child (shared/sandbox/): a fresh confined interpreter with a wall clock proportional to the
recording's length and a memory limit. The original goes to a file in a private temporary directory (a recording
may be gigabytes: never into memory), which the child reads by path and the parent removes afterwards. FFmpeg
opens it with the file protocol only and the demuxers of the formats people record in (no playlist, no concat,
no image sequence). The model's files are checked against their pinned sha256 in the child, then loaded from
those bytes (shared/adapters/local/whisper_models.py); nothing is downloaded, ever.

Audio is transcribed in windows of about a minute, each cut at its quietest tenth of a second near its end, so
memory stays flat however long the recording is (faster-whisper keeps the whole signal and its spectrogram of what
it is given), and each window's times are put back on the recording's clock. Voice-activity filtering
(Silero VAD, shipped in faster-whisper) is always on: without it ten seconds of silence became the word "You".
"""

import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.adapters.local.audio_decoding import AudioWindows, clock, declared_seconds, onset, opened, too_long
from shared.adapters.local.whisper_models import (
    DEFAULT_MODEL,
    MODELS,
    ModelRefused,
    PinnedModel,
    installation_problem,
    verified_files,
)
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.errors import CapabilityUnavailable, TranscriptionFailed
from shared.domain.recognition import mean_confidence
from shared.domain.transcription import (
    MAX_MEDIA_SECONDS,
    MAX_TRANSCRIPT_WORDS,
    MediaSource,
    TranscribedWord,
    Transcript,
    TranscriptionJob,
    TranscriptSegment,
)
from shared.domain.usage import Usage
from shared.ports import TranscriptionProvider
from shared.sandbox import (
    AnswerTooLarge,
    Crashed,
    KilledFromOutside,
    OutOfMemory,
    TimedOut,
    Unreadable,
    pack,
    sandboxed,
    unpack,
)

ENGINE = "faster-whisper"
# TranscribedWord's bound.
MAX_WORD_CHARACTERS = 200
# A recording that decodes this much shorter than it declares (and at least TRUNCATION_SECONDS shorter) was cut off.
TRUNCATION_SHARE = 0.1
TRUNCATION_SECONDS = 2.0
# What MAX_TRANSCRIPT_WORDS words and their segments honestly take as JSON.
MAX_ANSWER_BYTES = 128 * 1024 * 1024
_OUT_OF_MEMORY = "the recording needs more memory than transcription allows"


@dataclass(frozen=True)
class TranscriptionLimits:
    # The longest recording (QUIRE_MAX_MEDIA_SECONDS), by what its container declares and by what decodes.
    max_media_seconds: float = MAX_MEDIA_SECONDS
    # The wall clock: this many seconds per second of recording (measured on two busy cores: tiny.en takes
    # 0.05-0.1, base 0.1-0.2; docs/transcription.md), never less than the minimum (loading takes 1-3 s).
    seconds_per_media_second: float = 0.5
    min_timeout_seconds: float = 120.0
    # What the child may add to its address space. Measured on a 20-minute recording: tiny.en's child peaks near
    # 0.5 GB resident and 1.4 GB of address space (CTranslate2's, MKL's and onnxruntime's threads reserve far
    # more than they touch); base's 0.62 and 1.4 (docs/transcription.md). tiny.en failed at 0.5 GiB.
    memory_limit_bytes: int = 2 * 1024 * 1024 * 1024
    # Windows of a minute: measured on 20 minutes of speech, tiny.en's peak memory was 0.46 GB with 60 s windows,
    # 0.94 GB with 600 s, and its word error rate 2.5% with 60 s and 120 s windows, 8.8% with 300 s (a long window
    # lets Whisper's conditioning on its own earlier text drift).
    window_seconds: float = 60.0
    max_words: int = MAX_TRANSCRIPT_WORDS


class FasterWhisperTranscription(TranscriptionProvider):
    def __init__(self, model: str = DEFAULT_MODEL, limits: TranscriptionLimits | None = None) -> None:
        if model not in MODELS:
            raise ValueError(f"no pinned Whisper model named {model!r}: one of {', '.join(MODELS)}")
        self._model: PinnedModel = MODELS[model]
        self._limits = limits or TranscriptionLimits()

    @property
    def model(self) -> str:
        return self._model.name

    def capability(self) -> CapabilityStatus:
        problem = installation_problem(self._model)
        if problem is not None:
            return CapabilityStatus.unavailable(ENGINE, problem)
        return CapabilityStatus.ready(ENGINE)

    def start(self, source: MediaSource) -> Transcript:
        """Transcribe now (the local engine never leaves a job running)."""
        if not source.media_type.startswith(("audio/", "video/")):
            raise TranscriptionFailed(f"{source.media_type} is not audio or video: there is nothing to transcribe")
        language = self._language(source.language)
        limits = self._limits
        declared = source.duration_seconds
        if declared is not None and declared > limits.max_media_seconds:
            raise TranscriptionFailed(too_long(declared, limits.max_media_seconds))
        expected = declared if declared is not None else limits.max_media_seconds
        timeout = max(limits.min_timeout_seconds, limits.seconds_per_media_second * expected)
        # mkdtemp's directory is the process user's alone (0700); the original never outlives the call.
        with tempfile.TemporaryDirectory(prefix="quire-transcription-") as directory:
            original = Path(directory) / "original"
            source.fetch(original)
            header = {
                "path": str(original),
                "model": self._model.name,
                "language": language,
                "max_seconds": limits.max_media_seconds,
                "window_seconds": limits.window_seconds,
                "max_words": limits.max_words,
            }
            # Validated: never trust the shape of what a process that read hostile input sends back.
            answer = sandboxed(
                _transcribe_in_child,
                pack(header),
                lambda raw: _transcribed(raw, limits.max_words),
                timeout_seconds=timeout,
                memory_limit_bytes=limits.memory_limit_bytes,
                answer_too_large=json.dumps({"failed": "the transcript is too large"}).encode(),
                max_answer_bytes=MAX_ANSWER_BYTES,
            )
        match answer:
            case TimedOut():
                raise TranscriptionFailed(f"transcription took longer than {timeout:g} seconds")
            case OutOfMemory():
                raise TranscriptionFailed(_OUT_OF_MEMORY)
            case KilledFromOutside(exitcode=exitcode) | Crashed(exitcode=exitcode):
                raise TranscriptionFailed(f"the speech engine crashed on this recording (exit {exitcode})")
            case AnswerTooLarge():
                raise TranscriptionFailed("the transcript is too large")
            case Unreadable(error=error):
                raise TranscriptionFailed(
                    "the speech engine's answer could not be read (recorded for the operators)"
                ) from error
        return answer

    def collect(self, job: TranscriptionJob) -> Transcript | None:
        raise ValueError(f"{ENGINE} finishes in `start`; job {job.job_id} is not one of its jobs")

    def discard(self, job: TranscriptionJob) -> None:
        return None  # it never holds a job

    def _language(self, language: str | None) -> str | None:
        """The language to ask the model for (None: it identifies it), from the collection's BCP-47 tag."""
        if language is None:
            return None if self._model.multilingual else "en"
        primary = language.split("-")[0].lower()
        if not self._model.multilingual and primary != "en":
            raise TranscriptionFailed(
                f"the collection's language is {language}, and the local speech model ({self._model.name})"
                " transcribes English only: set QUIRE_TRANSCRIPTION_MODEL=base for other languages"
            )
        return primary


def _transcribed(answer: bytes, max_words: int) -> Transcript:
    decoded = json.loads(answer)
    if "failed" in decoded:
        raise TranscriptionFailed(str(decoded["failed"])[:2000])
    if "unavailable" in decoded:
        raise CapabilityUnavailable(Capability.TRANSCRIPTION.value, str(decoded["unavailable"])[:2000])
    transcript = Transcript.model_validate(decoded["result"])
    if transcript.engine != ENGINE or transcript.word_count > max_words:
        raise ValueError("not an answer this engine can give")
    return transcript


def _transcribe_in_child(payload: bytes) -> bytes:
    # Belt and braces, before faster-whisper imports huggingface_hub (which reads it then): the model's files are
    # given, so nothing is looked up (and the child has no socket), but a library that reached for the hub anyway
    # must fail at once rather than try.
    os.environ["HF_HUB_OFFLINE"] = "1"
    header, _ = unpack(payload)
    try:
        transcript = _transcribe(header)
    except TranscriptionFailed as failure:
        return json.dumps({"failed": failure.detail}).encode()
    except ModelRefused as refused:
        return json.dumps({"unavailable": refused.reason}).encode()
    except MemoryError:
        return json.dumps({"failed": _OUT_OF_MEMORY}).encode()
    except Exception as error:
        if isinstance(error, RuntimeError) and "alloc" in str(error):  # CTranslate2's and MKL's bad_alloc
            return json.dumps({"failed": _OUT_OF_MEMORY}).encode()
        # The library's words go to the log (the child's stderr), never into the detail the file's owner reads.
        print(f"transcription failed: {type(error).__name__}: {error}", file=sys.stderr)
        return json.dumps({"failed": f"the speech engine could not transcribe it ({type(error).__name__})"}).encode()
    return json.dumps({"result": transcript.model_dump(mode="json")}).encode()


def _transcribe(header: dict[str, Any]) -> Transcript:
    pinned = MODELS[header["model"]]
    max_seconds, max_words = float(header["max_seconds"]), int(header["max_words"])
    with opened(header["path"]) as container:
        stream = container.streams.audio[0]
        declared = declared_seconds(container, stream)
        if declared is not None and declared > max_seconds:
            raise TranscriptionFailed(too_long(declared, max_seconds))
        language: str | None = header["language"]
        if language is not None and language not in _languages(pinned):
            raise TranscriptionFailed(
                f"the collection's language {language} is not one the speech model ({pinned.name}) transcribes"
            )
        model = _loaded(pinned)
        decoding = AudioWindows(container, stream, max_seconds)
        segments: list[TranscriptSegment] = []
        words = 0
        for offset, window in decoding.windows(float(header["window_seconds"])):
            pieces, info = model.transcribe(
                window,
                language=language,
                word_timestamps=True,
                vad_filter=True,
                beam_size=5,
            )
            found = [segment for piece in pieces if (segment := _segment(piece, window, offset)) is not None]
            words += sum(len(segment.words) or len(segment.text.split()) for segment in found)
            if words > max_words:
                raise TranscriptionFailed(f"the transcript would have more than {max_words:,} words")
            if found and language is None:
                language = info.language  # identified once, on the first window with speech, then kept
            segments.extend(found)
    decoded = decoding.seconds
    if declared is not None and declared - decoded > max(TRUNCATION_SECONDS, TRUNCATION_SHARE * declared):
        raise TranscriptionFailed(
            f"the recording stops after {clock(decoded)} of the {clock(declared)} it declares: it is truncated"
            " or damaged; upload it again"
        )
    return Transcript(
        engine=ENGINE,
        language=language if language is not None else (None if pinned.multilingual else "en"),
        duration_seconds=round(decoded, 3),
        segments=tuple(segments),
        usage=Usage(
            provider=ENGINE,
            operation=f"{ENGINE}:transcribe",
            model=pinned.name,
            priced=False,
            seconds=math.ceil(decoded),
        ),
    )


def _languages(pinned: PinnedModel) -> frozenset[str]:
    from faster_whisper.tokenizer import _LANGUAGE_CODES  # Whisper's 99 (100 with yue), as the model names them

    return frozenset(_LANGUAGE_CODES) if pinned.multilingual else frozenset({"en"})


def _loaded(pinned: PinnedModel) -> Any:
    from faster_whisper import WhisperModel

    files = verified_files(pinned)  # raises ModelRefused: the bytes checked are the bytes loaded
    threads = max(1, min(os.cpu_count() or 1, 4))
    # With `files`, the name only labels the model: nothing is looked up or fetched.
    return WhisperModel(pinned.name, device="cpu", compute_type="int8", cpu_threads=threads, files=files)


def _segment(piece: Any, window: Any, offset: float) -> TranscriptSegment | None:
    """A segment of `window` (which starts `offset` seconds into the recording) on the recording's clock."""
    text = " ".join(str(piece.text).split())
    if not text:
        return None
    spoken = list(piece.words or ())
    # Each word's sound is looked for up to where the next one starts (the last word: up to its own end).
    ends = [float(following.start) for following in spoken[1:]] + [float(spoken[-1].end) if spoken else 0.0]
    placed = (_word(word, until, window, offset) for word, until in zip(spoken, ends, strict=True))
    words = tuple(word for word in placed if word is not None)
    start = words[0].start_seconds if words else offset + max(float(piece.start), 0.0)
    end = max(offset + float(piece.end), start)
    if words:
        confidence = mean_confidence([(word.confidence, len(word.text)) for word in words])
    else:  # the model's own: the mean token probability
        confidence = math.exp(min(float(piece.avg_logprob), 0.0))
    return TranscriptSegment(
        text=text,
        start_seconds=round(start, 3),
        end_seconds=round(end, 3),
        confidence=_unit(confidence),
        words=words,
    )


def _word(word: Any, until: float, window: Any, offset: float) -> TranscribedWord | None:
    text = str(word.word).strip()[:MAX_WORD_CHARACTERS]
    if not text:
        return None
    said = min(max(float(word.start), 0.0), max(float(word.end), 0.0))
    start = onset(window, said, max(until, said))
    end = max(float(word.end), start)
    return TranscribedWord(
        text=text,
        start_seconds=round(offset + start, 3),
        end_seconds=round(offset + end, 3),
        confidence=_unit(float(word.probability)),
    )


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0
