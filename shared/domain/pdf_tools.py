"""PDF tools: merge, split, watermark and page composition over stored PDFs. Pure rules, no I/O."""

import re
from dataclasses import dataclass

# Pages of an input, as the caller named them: (first, last) with last None for "to the end", 1-based.
Segments = tuple[tuple[int, int | None], ...]

MAX_PDF_INPUTS = 50
MAX_SPLIT_PARTS = 100
MAX_WATERMARK_CHARS = 200
_SEGMENT = re.compile(r"^\s*(\d{1,6})\s*(?:(-)\s*(\d{1,6})?)?\s*$")


class PdfInputProblem(Exception):
    """An input cannot be used; `sentence` names it and says why."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


@dataclass(frozen=True)
class PdfInput:
    name: str  # the file's name, for outlines and sentences
    content: bytes


@dataclass(frozen=True)
class PagePick:
    """Pages of one input, in the order wanted."""

    source: int  # index into the inputs
    pages: Segments | None  # None: every page


def parse_pages(spec: str) -> Segments:
    """ "1-3,5,8-" → ((1, 3), (5, 5), (8, None)); ValueError naming the part that is not a page range."""
    segments: list[tuple[int, int | None]] = []
    for part in spec.split(","):
        match = _SEGMENT.fullmatch(part)
        if match is None:
            raise ValueError(f"{part.strip() or 'an empty part'!r} is not a page or a range like 2-5 or 7-")
        first = int(match[1])
        last: int | None = first if match[2] is None else (int(match[3]) if match[3] else None)
        if first < 1 or (last is not None and last < first):
            raise ValueError(f"{part.strip()!r} is not a range of pages counted from 1")
        segments.append((first, last))
    return tuple(segments)


def format_pages(segments: Segments) -> str:
    return ",".join(
        str(first) if last == first else f"{first}-{last if last is not None else ''}" for first, last in segments
    )
