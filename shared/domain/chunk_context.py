"""What a chunk is indexed with besides its own text: the document it belongs to, in a few words (issue 37).

"Revenue rose 9% this quarter" says nothing of which company or which quarter; under "Northwind Traders: Q3
2025 report > Results" it is found by a question that names them. A chunk's context is deterministic (no model):

- the document's title: its first heading when that heading is the document's top (no later heading is at its
  level or above), else the title its file declares (a PDF's or an Office file's title property, an HTML
  <title>), else the file name without its extension;
- its heading path, as before;
- for a table, its caption: the short paragraph just before it in its section.

The context is embedded and keyword-indexed with the chunk (the keyword lane weighs it on its own,
`QUIRE_SEARCH_CONTEXT_WEIGHT`), never quoted: excerpts and citations are the chunk's body only.
"""

import re
import unicodedata
from pathlib import PurePosixPath

from shared.domain.document import Block, BlockKind, ExtractedDocument

# What a version's chunks were indexed with, recorded on it: a version indexed under an older context (None: before
# issue 37, the heading path only) is stale, and a re-index (`quire reindex`, POST /v1/reindex, the local stack's
# start) cuts it again with the current one.
CONTEXT_VERSION = 1
# A title longer than this is cut at a word: the context says what the document is, it does not retell it.
MAX_TITLE_CHARACTERS = 160
# A paragraph longer than this before a table is prose about it, not its caption.
MAX_CAPTION_CHARACTERS = 200
# File names that name nothing (a scanner's, a camera's, a browser's default).
_GENERIC_STEMS = re.compile(
    r"(?:untitled|document|doc|file|scan|image|img|photo|dsc|pxl|screenshot|download|new document|copy)"
    r"[\s_()\d-]*",  # linear: no nested repetition for a near-miss to backtrack through
    re.IGNORECASE,
)
# Word processors write "Microsoft Word - report.docx" into a PDF's title property.
_PRODUCER_PREFIX = re.compile(r"^(?:microsoft\s+(?:word|excel|powerpoint)|word|pages)\s+-\s+", re.IGNORECASE)
_FILE_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
# The extensions a title property that is really a file name ends with.
_DOCUMENT_EXTENSION = re.compile(r"\.(?:docx?|pdf|pptx?|xlsx?|odt|ods|odp|rtf|txt|md|html?|pages|key)$", re.IGNORECASE)
_LETTERS = re.compile(r"[^\W\d_]{2}")


def readable(text: str | None, limit: int = MAX_TITLE_CHARACTERS) -> str | None:
    """`text` on one line, its spaces collapsed, cut at a word within `limit` characters; None when it has no
    word of two letters."""
    if not text:
        return None
    line = " ".join(unicodedata.normalize("NFKC", text).split())
    if not _LETTERS.search(line):
        return None
    if len(line) > limit:
        cut = line[: limit + 1].rsplit(" ", 1)[0] if " " in line[:limit] else line[:limit]
        line = cut.rstrip(" ,;:-")
    return line or None


def readable_stem(filename: str) -> str | None:
    """The file's name without its extension, underscores as spaces; None for a name that names nothing."""
    stem = PurePosixPath(filename.replace("\\", "/")).name
    stem = _FILE_EXTENSION.sub("", stem)
    stem = stem.replace("_", " ")
    if _GENERIC_STEMS.fullmatch(stem.strip()):
        return None
    return readable(stem)


def declared_title(value: str | None) -> str | None:
    """A title property as a title: without the producer's prefix, a file name read as one; None when it is a
    generic name or says nothing."""
    line = readable(value, limit=4 * MAX_TITLE_CHARACTERS)
    if line is None:
        return None
    line = _PRODUCER_PREFIX.sub("", line)
    if _DOCUMENT_EXTENSION.search(line):
        return readable_stem(line)
    if _GENERIC_STEMS.fullmatch(line.strip()):
        return None
    return readable(line)


def top_heading(blocks: tuple[Block, ...]) -> str | None:
    """The first heading when it is the document's top: no later heading is at its level or above."""
    first: Block | None = None
    for block in blocks:
        if block.kind is not BlockKind.HEADING or not block.text.strip():
            continue
        if first is None:
            first = block
            continue
        if (block.level or 1) <= (first.level or 1):
            return None
    return readable(first.text) if first is not None else None


def document_title(document: ExtractedDocument, filename: str) -> str | None:
    """The title a chunk's context names its document by (see the module's docstring)."""
    return top_heading(document.blocks) or declared_title(document.title) or readable_stem(filename)


def same_words(one: str, other: str) -> bool:
    """Whether two titles say the same, as a reader would (case, spacing and punctuation aside)."""

    def words(text: str) -> list[str]:
        return re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold())

    return words(one) == words(other)


def caption_before(blocks: tuple[Block, ...], members: list[int], position: int) -> str | None:
    """A table's caption: the paragraph just before it in its section, when it is short enough to be one."""
    if position == 0:
        return None
    before = blocks[members[position - 1]]
    if before.kind is not BlockKind.PARAGRAPH or len(before.text.strip()) > MAX_CAPTION_CHARACTERS:
        return None
    return readable(before.text, limit=MAX_CAPTION_CHARACTERS)
