"""A recording's transcript through the document model: segments become located paragraphs, chunks cut along
them and keep their time span and speaker, a citation names the moment, and text windows and exports print it as
[mm:ss, an en dash, mm:ss] (issue 35, item 3)."""

from datetime import UTC, datetime

import pytest

from shared.domain.chunking import StructuralChunker
from shared.domain.document import BlockKind
from shared.domain.recognition import LOW_CONFIDENCE_THRESHOLD
from shared.domain.rendering import render_markdown
from shared.domain.search import Citation, CitedKind
from shared.domain.transcription import (
    RANGE_DASH as DASH,
)
from shared.domain.transcription import (
    TranscribedWord,
    Transcript,
    TranscriptSegment,
    time_span,
    timestamp,
    transcript_document,
)
from shared.domain.usage import Usage

USAGE = Usage(provider="faster-whisper", operation="transcribe", priced=False)


def segment(
    text: str, start: float, end: float, *, speaker: str | None = None, sure: float = 0.95
) -> TranscriptSegment:
    words = text.split()
    step = (end - start) / len(words)
    return TranscriptSegment(
        text=text,
        start_seconds=start,
        end_seconds=end,
        speaker=speaker,
        confidence=sure,
        words=tuple(
            TranscribedWord(
                text=word, start_seconds=start + i * step, end_seconds=start + (i + 1) * step, confidence=sure
            )
            for i, word in enumerate(words)
        ),
    )


def transcript(*segments: TranscriptSegment) -> Transcript:
    end = max((s.end_seconds for s in segments), default=0.0)
    return Transcript(engine="faster-whisper", language="en", duration_seconds=end + 1, segments=segments, usage=USAGE)


MEETING = transcript(
    segment("Welcome to the quarterly review of the Orion project.", 0.5, 4.0, speaker="spk_0"),
    segment("The launch moved to March because the supplier was late.", 4.6, 9.2, speaker="spk_0"),
    segment("Which supplier was it?", 10.0, 11.4, speaker="spk_1"),
    segment("Orion 42, the battery vendor in Lyon.", 12.0, 15.5, speaker="spk_0"),
    segment("Thank you, that closes the review.", 16.2, 18.0, speaker="spk_1"),
)


def citation_fields() -> dict[str, object]:
    return {
        "file_id": "f",
        "version_id": "v",
        "filename": "review.m4a",
        "media_type": "audio/mp4",
        "collection_id": "c",
        "retrieved_at": datetime.now(UTC),
    }


def test_each_segment_becomes_a_paragraph_located_by_its_time_span_and_speaker() -> None:
    document = transcript_document(MEETING, "audio/mp4")
    assert [block.kind for block in document.blocks] == [BlockKind.PARAGRAPH] * 5
    assert [(b.location.start_seconds, b.location.end_seconds, b.location.speaker) for b in document.blocks] == [
        (0.5, 4.0, "spk_0"),
        (4.6, 9.2, "spk_0"),
        (10.0, 11.4, "spk_1"),
        (12.0, 15.5, "spk_0"),
        (16.2, 18.0, "spk_1"),
    ]
    assert document.blocks[3].text == "Orion 42, the battery vendor in Lyon."
    assert (document.duration_seconds, document.language, document.confidence) == (19.0, "en", 0.95)
    assert document.warnings == () and not document.low_confidence


def test_words_below_the_threshold_are_flagged_on_the_block_and_the_document() -> None:
    unsure = transcript(segment("mumbled words here", 0.0, 2.0, sure=LOW_CONFIDENCE_THRESHOLD - 0.2))
    document = transcript_document(unsure, "audio/wav")
    assert document.blocks[0].confidence == pytest.approx(LOW_CONFIDENCE_THRESHOLD - 0.2)
    assert document.low_confidence
    assert document.warnings == ("the speech engine was unsure of 3 of 3 words; check them against the recording",)


def test_a_recording_with_no_speech_is_a_document_with_no_blocks_and_no_confidence() -> None:
    document = transcript_document(transcript(), "audio/ogg")
    assert document.blocks == () and document.confidence is None


def test_chunks_cut_along_segments_and_keep_the_span_they_are_spoken_in() -> None:
    document = transcript_document(MEETING, "audio/mp4")
    drafts = StructuralChunker(lambda text: len(text.split()), 22, overlap_blocks=0).chunk(document)
    assert len(drafts) >= 2
    texts = [block.text for block in document.blocks]
    for draft in drafts:
        spoken = texts[draft.block_start : draft.block_end + 1]
        # Whole segments only: a cut falls at a pause, never inside what was said between two.
        assert draft.text == "\n\n".join(spoken)
        first, last = document.blocks[draft.block_start], document.blocks[draft.block_end]
        assert (draft.location.start_seconds, draft.location.end_seconds) == (
            first.location.start_seconds,
            last.location.end_seconds,
        )
        assert [region.start_seconds for region in draft.location.regions] == [
            block.location.start_seconds for block in document.blocks[draft.block_start : draft.block_end + 1]
        ]
        speakers = {block.location.speaker for block in document.blocks[draft.block_start : draft.block_end + 1]}
        assert draft.location.speaker == (speakers.pop() if len(speakers) == 1 else None)
        assert draft.location.ocr_confidence == 0.95
    assert drafts[0].location.start_seconds == 0.5 and drafts[-1].location.end_seconds == 18.0


def test_a_citation_names_the_moment_of_the_segment_that_matched_and_how_surely_it_was_heard() -> None:
    document = transcript_document(MEETING, "audio/mp4")
    (draft,) = StructuralChunker(lambda text: len(text.split()), 200).chunk(document)
    matched = [region for region in draft.location.regions if region.start_seconds == 12.0]
    citation = Citation.at(draft.location, matched=matched, excerpt="Orion 42", **citation_fields())  # type: ignore[arg-type]
    assert citation.kind is CitedKind.TRANSCRIPTION
    assert (citation.start_seconds, citation.end_seconds, citation.speaker) == (12.0, 15.5, "spk_0")
    assert citation.speech_confidence == 0.95 and citation.ocr_confidence is None
    assert citation.page is None and citation.box is None
    # With no matching words (a semantic hit), the chunk's whole span, and no speaker where they differ.
    whole = Citation.at(draft.location, excerpt="x", **citation_fields())  # type: ignore[arg-type]
    assert (whole.start_seconds, whole.end_seconds, whole.speaker) == (0.5, 18.0, None)
    assert [region.speaker for region in whole.regions] == ["spk_0", "spk_0", "spk_1", "spk_0", "spk_1"]


def test_text_windows_and_exports_print_each_segment_with_its_moment() -> None:
    rendered = render_markdown(transcript_document(MEETING, "audio/mp4").blocks)
    assert (
        rendered.splitlines()[0] == f"[00:00{DASH}00:04] spk_0: Welcome to the quarterly review of the Orion project."
    )
    assert f"[00:12{DASH}00:15] spk_0: Orion 42, the battery vendor in Lyon." in rendered
    # A speaker label or a segment cannot open a block of its own (no heading, no raw HTML).
    hostile = transcript(segment("# not a heading <script>", 0.0, 1.0, speaker="<b>x</b>"))
    assert render_markdown(transcript_document(hostile, "audio/wav").blocks).strip() == (
        f"[00:00{DASH}00:01] &lt;b>x&lt;/b>: # not a heading &lt;script>"
    )


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0, "00:00"), (59.99, "00:59"), (61, "01:01"), (3599, "59:59"), (3725.9, "1:02:05")]
)
def test_a_moment_is_minutes_and_seconds_then_hours(seconds: float, shown: str) -> None:
    assert timestamp(seconds) == shown
    assert time_span(seconds, seconds) == f"[{shown}{DASH}{shown}]"


def test_an_exports_citation_note_names_the_moment_and_the_speaker() -> None:
    from shared.domain.exports import describe_location

    document = transcript_document(MEETING, "audio/mp4")
    (draft,) = StructuralChunker(lambda text: len(text.split()), 200).chunk(document)
    matched = [region for region in draft.location.regions if region.start_seconds == 12.0]
    citation = Citation.at(draft.location, matched=matched, excerpt="Orion 42", **citation_fields())  # type: ignore[arg-type]
    assert describe_location(citation) == f"at [00:12{DASH}00:15], spk_0"


def test_a_transcript_is_bounded_in_characters_not_only_in_words() -> None:
    from pydantic import ValidationError

    from shared.domain.transcription import MAX_SEGMENT_CHARACTERS, MAX_TRANSCRIPT_CHARACTERS

    with pytest.raises(ValidationError, match="at most"):
        TranscriptSegment(text="x" * (MAX_SEGMENT_CHARACTERS + 1), start_seconds=0, end_seconds=1, confidence=1)
    many = tuple(
        TranscriptSegment(text="y" * MAX_SEGMENT_CHARACTERS, start_seconds=i, end_seconds=i + 1, confidence=1)
        for i in range(MAX_TRANSCRIPT_CHARACTERS // MAX_SEGMENT_CHARACTERS + 1)
    )
    with pytest.raises(ValidationError, match="characters"):
        transcript(*many)


def test_a_converted_transcript_keeps_each_segments_moment_in_its_text_once() -> None:
    from shared.domain.transcription import with_moments

    blocks = with_moments(transcript_document(MEETING, "audio/mp4").blocks)
    assert blocks[3].text == f"[00:12{DASH}00:15] spk_0: Orion 42, the battery vendor in Lyon."
    assert blocks[3].location.start_seconds is None
    # Rendered as Markdown (an export to .md), the moment is said once, not twice.
    assert render_markdown(blocks[3:4]).count("00:12") == 1
