"""Amazon Transcribe's batch output (the JSON a job writes to S3) → the domain's transcript: a pure mapping (no
client, no retries). Shapes are those of the Transcribe developer guide ("Data input and output", "Example
diarization output (batch)"): `results.items` (pronunciation items timed, with `alternatives[0]` holding the word
and its confidence; punctuation items untimed), `results.audio_segments` (newer outputs: stretches of speech listing
their items' ids), `results.speaker_labels.segments` (speaker turns, when speakers were labelled) and
`results.language_code` (when the language was identified). Every number in it is a string.

The output is the engine's answer, not the tenant's bytes, but it is still read within bounds: its size (the
adapter's MAX_OUTPUT_BYTES), its words (MAX_TRANSCRIPT_WORDS) and each word's length.
"""

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from shared.domain.errors import TranscriptionFailed
from shared.domain.recognition import mean_confidence
from shared.domain.transcription import (
    MAX_SPEAKER_LABEL,
    MAX_TRANSCRIPT_WORDS,
    TranscribedWord,
    Transcript,
    TranscriptSegment,
)
from shared.domain.usage import Usage

# A silence longer than this between two words starts a new segment (where the output has no audio_segments).
PAUSE_SECONDS = 0.8
# Nor does one segment run longer than this: a citation names a moment, not a quarter of an hour of monologue.
MAX_SEGMENT_SECONDS = 30.0
# Punctuation that ends a sentence (Latin and CJK full stops, question and exclamation marks).
SENTENCE_ENDS = (".", "?", "!", "\u3002", "\uff1f", "\uff01")
# What one word may be (TranscribedWord's own bound), its punctuation attached.
MAX_WORD_CHARACTERS = 200
# An audio segment's own transcript is used as its text up to this long; past it, the words are joined.
MAX_SEGMENT_TEXT = 64 * 1024
UNREADABLE = (
    "Amazon Transcribe's transcript of the recording could not be read: process the file again; if it fails again,"
    " upload the recording again."
)


@dataclass(frozen=True)
class _Word:
    text: str
    start: float
    end: float
    confidence: float
    speaker: str | None


def transcript_of(raw: bytes, *, engine: str, language: str | None, usage: Usage) -> Transcript:
    """The transcript a job wrote (`raw`, its JSON), its segments the output's audio segments where they cover every
    word, else stretches between pauses, sentence ends and speaker turns. `language` is the job's (identified or
    fixed); the output's own `language_code` stands in when the job named none.

    Raises TranscriptionFailed when the output is not Transcribe's JSON or holds more than MAX_TRANSCRIPT_WORDS."""
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise TranscriptionFailed(UNREADABLE) from error
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, dict):
        raise TranscriptionFailed(UNREADABLE)
    items = results.get("items")
    words, word_of_item = _words(items if isinstance(items, list) else [])
    words = _with_speakers(words, results.get("speaker_labels"))
    segments = _from_audio_segments(results.get("audio_segments"), words, word_of_item)
    if segments is None:
        segments = [_segment(stretch) for stretch in _stretches(words)]
    identified = results.get("language_code")
    ends = [word.end for word in words] + [segment.end_seconds for segment in segments]
    return Transcript(
        engine=engine,
        language=language or (identified if isinstance(identified, str) and identified else None),
        duration_seconds=max(ends, default=0.0),
        segments=tuple(segments),
        usage=usage,
    )


def speaker_name(label: str) -> str:
    """How a speaker is named in a citation: Transcribe's `spk_0` as `Speaker 1`; any other label as it is."""
    prefix, _, number = label.partition("_")
    if prefix == "spk" and number.isdigit() and len(number) < 6:
        return f"Speaker {int(number) + 1}"
    return label[:MAX_SPEAKER_LABEL]


def _words(items: Sequence[Any]) -> tuple[list[_Word], dict[int, int]]:
    """The pronunciation items as words, each punctuation item attached to the word before it; and which word
    each item id (its `id`, else its position) belongs to."""
    words: list[_Word] = []
    word_of_item: dict[int, int] = {}
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        item_id = item["id"] if isinstance(item.get("id"), int) else position
        content, confidence = _best_alternative(item)
        if not content:
            continue
        if item.get("type") == "punctuation":
            if words:
                last = words[-1]
                words[-1] = replace(last, text=(last.text + content)[:MAX_WORD_CHARACTERS])
                word_of_item[item_id] = len(words) - 1
            continue
        start, end = _seconds(item.get("start_time")), _seconds(item.get("end_time"))
        if start is None or end is None:
            continue
        if len(words) >= MAX_TRANSCRIPT_WORDS:
            raise TranscriptionFailed(
                f"Amazon Transcribe heard more than {MAX_TRANSCRIPT_WORDS:,} words, more than Quire keeps of one"
                " recording: split it into shorter recordings and upload them."
            )
        label = item.get("speaker_label")
        word_of_item[item_id] = len(words)
        words.append(
            _Word(
                text=content[:MAX_WORD_CHARACTERS],
                start=start,
                end=max(start, end),
                confidence=confidence,
                speaker=speaker_name(label) if isinstance(label, str) and label else None,
            )
        )
    return words, word_of_item


def _best_alternative(item: dict[str, Any]) -> tuple[str, float]:
    alternatives = item.get("alternatives")
    best = alternatives[0] if isinstance(alternatives, list) and alternatives else None
    if not isinstance(best, dict) or not isinstance(best.get("content"), str):
        return "", 0.0
    confidence = _seconds(best.get("confidence"))  # a non-negative finite number, like a time
    return best["content"].strip(), min(confidence or 0.0, 1.0)


def _seconds(value: object) -> float | None:
    """A non-negative finite number from Transcribe's string (or a number), else None."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _with_speakers(words: list[_Word], speaker_labels: object) -> list[_Word]:
    """Words without a speaker of their own take the speaker turn (`speaker_labels.segments`) they start in: older
    outputs label speakers there only."""
    turns = speaker_labels.get("segments") if isinstance(speaker_labels, dict) else None
    if not isinstance(turns, list) or all(word.speaker is not None for word in words):
        return words
    spans = sorted(
        (start, end, speaker_name(label))
        for turn in turns
        if isinstance(turn, dict)
        and (start := _seconds(turn.get("start_time"))) is not None
        and (end := _seconds(turn.get("end_time"))) is not None
        and isinstance(label := turn.get("speaker_label"), str)
        and label
    )
    labelled: list[_Word] = []
    turn = 0
    for word in words:  # in time order, as the spans: one pass
        while turn < len(spans) and spans[turn][1] < word.start:
            turn += 1
        inside = turn < len(spans) and spans[turn][0] <= word.start <= spans[turn][1]
        labelled.append(replace(word, speaker=spans[turn][2]) if word.speaker is None and inside else word)
    return labelled


def _from_audio_segments(
    audio_segments: object, words: Sequence[_Word], word_of_item: dict[int, int]
) -> list[TranscriptSegment] | None:
    """Transcribe's own segments, split where the speaker changes inside one; None when there are none, or when
    they leave a word out (then the words are segmented here instead, so nothing heard is lost)."""
    if not isinstance(audio_segments, list) or not audio_segments or not words:
        return None
    segments: list[TranscriptSegment] = []
    covered: set[int] = set()
    for audio_segment in audio_segments:
        if not isinstance(audio_segment, dict) or not isinstance(audio_segment.get("items"), list):
            return None
        indices = sorted(
            {word_of_item[item] for item in audio_segment["items"] if isinstance(item, int) and item in word_of_item}
        )
        if not indices:
            continue
        covered.update(indices)
        own = [words[index] for index in indices]
        turns = list(_stretches(own, pauses=False))
        transcript = audio_segment.get("transcript")
        if len(turns) == 1 and isinstance(transcript, str) and 0 < len(transcript.strip()) <= MAX_SEGMENT_TEXT:
            segments.append(_segment(own, text=transcript.strip()))
        else:
            segments.extend(_segment(turn) for turn in turns)
    return segments if len(covered) == len(words) else None


def _stretches(words: Sequence[_Word], *, pauses: bool = True) -> Iterable[list[_Word]]:
    """Runs of words one speaker said; with `pauses`, also cut at a silence over PAUSE_SECONDS, after a sentence's
    end, and before a run would pass MAX_SEGMENT_SECONDS."""
    current: list[_Word] = []
    for word in words:
        if current:
            last = current[-1]
            cut = word.speaker != last.speaker or (
                pauses
                and (
                    word.start - last.end > PAUSE_SECONDS
                    or last.text.endswith(SENTENCE_ENDS)
                    or word.end - current[0].start > MAX_SEGMENT_SECONDS
                )
            )
            if cut:
                yield current
                current = []
        current.append(word)
    if current:
        yield current


def _segment(words: Sequence[_Word], *, text: str | None = None) -> TranscriptSegment:
    return TranscriptSegment(
        text=text or " ".join(word.text for word in words),
        start_seconds=words[0].start,
        end_seconds=max(word.end for word in words),
        speaker=words[0].speaker,
        confidence=mean_confidence([(word.confidence, len(word.text)) for word in words]),
        words=tuple(
            TranscribedWord(text=word.text, start_seconds=word.start, end_seconds=word.end, confidence=word.confidence)
            for word in words
        ),
    )
