"""An extractive outline of a document, for summarize_document when no generator model is configured.

Nothing in it is written by Quire: each section is a heading and the first sentences under it, each sentence a
verbatim span of one block, cited by that block's index and location. Sentences are split conservatively (a
missed boundary makes a long sentence, a wrong one a misleading fragment), and everything is bounded: sections,
characters, and the length of one sentence, so a document of thousands of headings or a megabyte paragraph
costs no more than a short one.
"""

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared.domain.document import Block, BlockKind, Location
from shared.domain.text import Span, sentence_ends

MAX_OUTLINE_SECTIONS = 100
MAX_OUTLINE_CHARACTERS = 16_000  # headings (their whole paths) and sentences: within one reading window
MAX_SENTENCE_CHARACTERS = 300  # a sentence with no clean end within this is cut at a word boundary
MAX_HEADING_CHARACTERS = 200

# The kinds a section's leading sentences come from: prose the document states. Tables, code, images and page
# breaks are not sentences, and a description is a vision model's inference, not the document's words.
_PROSE = frozenset({BlockKind.PARAGRAPH, BlockKind.LIST_ITEM, BlockKind.QUOTE})

_SPACE = re.compile(r"\s*")
# White space and quotes looked at after terminal punctuation: beyond it, no boundary (conservative).
_LOOKAHEAD = 64


class OutlineSentence(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str  # verbatim: blocks[block_index].text[i:i + len(text)] for some i
    block_index: int  # into the blocks the outline was made of: the citation
    location: Location  # the block's
    clipped: bool = False  # the sentence went on past MAX_SENTENCE_CHARACTERS: this is its start


class OutlineSection(BaseModel):
    model_config = ConfigDict(frozen=True)

    heading: str | None  # None: the blocks before the first heading
    heading_path: tuple[str, ...]  # the headings above this one, then this one; () before the first heading
    level: int | None
    block_index: int | None  # the heading's block
    sentences: tuple[OutlineSentence, ...]


class Outline(BaseModel):
    model_config = ConfigDict(frozen=True)

    method: Literal["extractive"] = "extractive"
    sections: tuple[OutlineSection, ...]
    truncated: bool  # a section, a sentence or part of a heading was left out to keep within the bounds


def _words_within(text: str, start: int, limit: int) -> int:
    """The end of the whole words of `text` from `start` that fit in `limit` characters (a single word longer
    than that is cut), trailing white space left out."""
    end = start + limit
    if end < len(text) and not text[end].isspace():
        boundary = next((position for position in range(end - 1, start, -1) if text[position].isspace()), None)
        end = end if boundary is None else boundary
    return _trimmed(text, start, end)


def _trimmed(text: str, start: int, end: int) -> int:
    """`end` moved back over trailing white space (a bounded walk: `text.rstrip()` would copy all of it)."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _skip_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


def _sentence_end(text: str, start: int) -> int | None:
    """Where the sentence from `start` ends (after its punctuation and closing quotes), if it ends cleanly within
    MAX_SENTENCE_CHARACTERS: before white space and a capital letter or a digit."""
    window_end = min(len(text), start + MAX_SENTENCE_CHARACTERS + _LOOKAHEAD)
    end = next(sentence_ends(text, start, window_end, only_before_capitals=True), None)
    return end if end is not None and end - start <= MAX_SENTENCE_CHARACTERS else None


def _leading_sentences(text: str, count: int) -> list[tuple[Span, bool]]:
    """The first `count` sentences of `text` as spans, each with whether it was clipped. Scans no further than
    the sentences it returns (and a bounded look past them), however long the text."""
    spans: list[tuple[Span, bool]] = []
    start = _skip_space(text, 0)
    while start < len(text) and len(spans) < count:
        end = _sentence_end(text, start)
        if end is None:
            if len(text) - start <= MAX_SENTENCE_CHARACTERS:
                spans.append(((start, _trimmed(text, start, len(text))), False))
            else:
                # No clean end in reach: its start, whole words only, and nothing after it (mid-sentence).
                spans.append(((start, _words_within(text, start, MAX_SENTENCE_CHARACTERS)), True))
            break
        spans.append(((start, end), False))
        start = _skip_space(text, end)
    return spans


def _heading_text(text: str) -> tuple[str, bool]:
    """A heading as shown, and whether it had to be cut."""
    stripped = text.strip()
    if len(stripped) <= MAX_HEADING_CHARACTERS:
        return stripped, False
    return stripped[: _words_within(stripped, 0, MAX_HEADING_CHARACTERS)], True


class _Builder:
    def __init__(self, blocks: Sequence[Block], max_sections: int, sentences: int, max_characters: int) -> None:
        self._blocks = blocks
        self._max_sections = max_sections
        self._sentences_per_section = sentences
        self._characters_left = max_characters
        self.sections: list[OutlineSection] = []
        self.truncated = False
        self._heading_index: int | None = None
        self._heading_path: tuple[str, ...] = ()
        self._sentences: list[OutlineSentence] = []

    def build(self) -> None:
        for index, block in enumerate(self._blocks):
            if block.kind is BlockKind.HEADING:
                self._finish()
                if not self._start(index, block):
                    self.truncated = True
                    return
            elif (
                block.kind in _PROSE
                and len(self._sentences) < self._sentences_per_section
                and not self._take_sentences(index, block)
            ):
                self.truncated = True
                break
        self._finish()

    def _start(self, index: int, block: Block) -> bool:
        """Open the heading's section, if the bounds leave room for it."""
        if len(self.sections) >= self._max_sections:
            return False
        shown = [_heading_text(text) for text in (*block.heading_path, block.text)]
        cost = sum(len(text) for text, _ in shown)
        if cost > self._characters_left:
            return False
        self._characters_left -= cost
        self.truncated |= any(clipped for _, clipped in shown)
        self._heading_index, self._heading_path = index, tuple(text for text, _ in shown)
        return True

    def _take_sentences(self, index: int, block: Block) -> bool:
        """The block's leading sentences, up to the section's share; False when the characters ran out."""
        wanted = self._sentences_per_section - len(self._sentences)
        for (start, end), clipped in _leading_sentences(block.text, wanted):
            if end - start > self._characters_left:
                return False
            self._characters_left -= end - start
            self._sentences.append(
                OutlineSentence(text=block.text[start:end], block_index=index, location=block.location, clipped=clipped)
            )
        return True

    def _finish(self) -> None:
        """Close the open section: a heading's always, the leading one only if it says something."""
        heading_index = self._heading_index
        if heading_index is not None or self._sentences:
            heading = self._blocks[heading_index] if heading_index is not None else None
            self.sections.append(
                OutlineSection(
                    heading=self._heading_path[-1] if heading is not None else None,
                    heading_path=self._heading_path,
                    level=heading.level if heading is not None else None,
                    block_index=heading_index,
                    sentences=tuple(self._sentences),
                )
            )
        self._heading_index, self._heading_path, self._sentences = None, (), []


def outline(
    blocks: Sequence[Block],
    *,
    max_sections: int = MAX_OUTLINE_SECTIONS,
    sentences_per_section: int = 2,
    max_characters: int = MAX_OUTLINE_CHARACTERS,
) -> Outline:
    """Each heading in order with the first sentences of the prose under it (the blocks before the first
    heading form a leading section, when they hold any), within the bounds; `truncated` says something was
    left out."""
    if min(max_sections, sentences_per_section, max_characters) < 0:
        raise ValueError("the outline's bounds cannot be negative")
    builder = _Builder(blocks, max_sections, sentences_per_section, max_characters)
    builder.build()
    return Outline(sections=tuple(builder.sections), truncated=builder.truncated)
