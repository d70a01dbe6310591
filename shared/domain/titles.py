"""The title lane: a question that names a document by its complete title makes it a direct subject.

A document's titles are its first heading and its filename without the extension. Both a title and a question
are compared as words: NFKC, case-folded, split into runs of letters or digits as the keyword lane splits them
(so "Q3-Budget" and "q3 budget" are one title; a CJK run is its character pairs), joined by single
spaces. A question names a title when one of
its runs of consecutive words is exactly that title's words: the question's word n-grams are looked up by
equality, never a scan of every title.

When one named title sits inside another where the question names them ("JLPT N2" inside "JLPT N2 Window
Weekly Plan"), only the longer keeps direct authority; titles named side by side, or overlapping without one
containing the other, are peers. A title mentioned again on its own elsewhere in the question keeps its
authority from that mention.
"""

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from shared.domain.document import BlockKind, ExtractedDocument
from shared.domain.languages import cjk_pairs
from shared.domain.stopwords import ENGLISH_STOPWORDS

# Longer headings are sentences, not titles a question would repeat whole: they are not indexed as titles.
MAX_TITLE_WORDS = 20
MAX_TITLE_CHARACTERS = 200
# The n-grams one question looks up: a question of ordinary words at the 2,000-character limit (about 350 words)
# gives about 7,000; one of two-letter words would give 13,000, a megabyte of parameters per search.
MAX_QUESTION_KEYS = 8_000
# What one question may bring in: the documents it names (longest titles first), and for a named document
# no lane found, its best chunks among its first DIRECT_CHUNK_WINDOW.
MAX_NAMED_DOCUMENTS = 5
DIRECT_CHUNKS_PER_DOCUMENT = 3
DIRECT_CHUNK_WINDOW = 200

# As shared/domain/search.py splits query terms: a run of letters or digits.
_WORD = re.compile(r"[^\W_]+")


class TitleSource(StrEnum):
    HEADING = "heading"
    FILENAME = "filename"


def title_words(text: str) -> tuple[str, ...]:
    """The words of `text` as titles are compared: NFKC, case-folded, letters and digits only, a run of Chinese,
    Japanese or Korean characters as its overlapping pairs (a title inside a run of them is a run of its pairs:
    "数据保护条例" is named by "数据保护条例适用于谁")."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return tuple(_WORD.findall(cjk_pairs(folded)))


def _names_something(word: str) -> bool:
    return word not in ENGLISH_STOPWORDS and any(character.isalpha() for character in word)


def title_key(text: str) -> str | None:
    """The key a title is stored and looked up by, or None when `text` is no title: no word that is neither a
    stopword nor a bare number (a document called "The", or "2024.pdf", would be named by every question that
    says the word), or longer than MAX_TITLE_WORDS words or MAX_TITLE_CHARACTERS characters."""
    words = title_words(text)
    if not words or len(words) > MAX_TITLE_WORDS or not any(_names_something(word) for word in words):
        return None
    key = " ".join(words)
    return key if len(key) <= MAX_TITLE_CHARACTERS else None


def filename_stem(filename: str) -> str:
    """The filename without its folder and last extension ("q3-budget.xlsx" → "q3-budget"; ".env" stays)."""
    name = filename.replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem else name


def first_heading(document: ExtractedDocument) -> str | None:
    """The text of the document's first heading block with any text, or None."""
    for block in document.blocks:
        if block.kind is BlockKind.HEADING and block.text.strip():
            return block.text.strip()
    return None


def document_title_keys(heading: str | None, filename: str) -> dict[str, TitleSource]:
    """A document's title keys and where each comes from (the heading when both give the same key)."""
    keys: dict[str, TitleSource] = {}
    for text, source in ((heading, TitleSource.HEADING), (filename_stem(filename), TitleSource.FILENAME)):
        key = title_key(text) if text else None
        if key is not None and key not in keys:
            keys[key] = source
    return keys


def question_keys(question: str, max_words: int = MAX_TITLE_WORDS, limit: int = MAX_QUESTION_KEYS) -> list[str]:
    """Every title key the question could name: its distinct word n-grams of up to `max_words` words and
    MAX_TITLE_CHARACTERS characters that are not all stopwords and numbers, in order of first appearance, at most
    `limit` of them (the titles a question names past that are not looked up)."""
    words = title_words(question)
    content = [_names_something(word) for word in words]
    keys: dict[str, None] = {}
    for start in range(len(words)):
        length = -1  # no space before the first word
        meaningful = False
        for end in range(start, min(start + max_words, len(words))):
            length += len(words[end]) + 1
            if length > MAX_TITLE_CHARACTERS:
                break
            meaningful = meaningful or content[end]
            if meaningful:
                keys.setdefault(" ".join(words[start : end + 1]), None)
                if len(keys) == limit:
                    return list(keys)
    return list(keys)


@dataclass(frozen=True)
class Mention:
    """Where the question names a title: words [start, end)."""

    key: str
    start: int
    end: int

    def inside(self, other: "Mention") -> bool:
        return other.start <= self.start and self.end <= other.end and other.end - other.start > self.end - self.start


def mentions(question: str, keys: Iterable[str]) -> list[Mention]:
    """Every place the question's words are exactly one of `keys`' words, in question order."""
    wanted = {tuple(key.split(" ")) for key in keys}
    if not wanted:
        return []
    longest = max(len(words) for words in wanted)
    words = title_words(question)
    found = []
    for start in range(len(words)):
        for end in range(start + 1, min(start + longest, len(words)) + 1):
            if words[start:end] in wanted:
                found.append(Mention(" ".join(words[start:end]), start, end))
    return found


def maximal_titles(question: str, named: Iterable[str]) -> list[str]:
    """Of the title keys `named` (those the question names and the caller can read), the ones with direct
    authority: those named at least once where no longer named title contains the mention. Longest first,
    then in order of first mention."""
    found = mentions(question, set(named))
    kept: dict[str, Mention] = {}
    for mention in found:
        if mention.key not in kept and not any(mention.inside(other) for other in found):
            kept[mention.key] = mention
    return sorted(kept, key=lambda key: (-(kept[key].end - kept[key].start), kept[key].start))


class NamedTitle(BaseModel):
    """An indexed document one of whose titles the question names."""

    model_config = ConfigDict(frozen=True)

    key: str
    file_id: str
    version_id: str


class DirectChunk(BaseModel):
    """A chunk of a directly named document: one the lanes found (`found`), or one of the best of a named
    document none of whose chunks they found."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    version_id: str
    found: bool


def named_documents(question: str, titles: Sequence[NamedTitle], limit: int = MAX_NAMED_DOCUMENTS) -> list[str]:
    """The version ids of the documents with direct authority, at most `limit`: those of the maximal titles,
    longest title first (then first mentioned, then by version id, so the choice is deterministic). Two
    documents sharing a title are peers."""
    authority = maximal_titles(question, {title.key for title in titles})
    by_key: dict[str, list[str]] = {}
    for title in titles:
        by_key.setdefault(title.key, []).append(title.version_id)
    chosen: dict[str, None] = {}
    for key in authority:
        for version_id in sorted(by_key[key]):
            chosen.setdefault(version_id, None)
    return list(chosen)[:limit]


class DirectSubjects(BaseModel):
    """What the title lane adds to one search: which candidates are direct subjects, and the chunks of named
    documents no lane found (joined after the lanes' candidates, in their documents' order)."""

    model_config = ConfigDict(frozen=True)

    chunk_ids: frozenset[str] = frozenset()
    added: tuple[str, ...] = ()

    @classmethod
    def of(cls, chunks: Sequence[DirectChunk]) -> "DirectSubjects":
        return cls(
            chunk_ids=frozenset(chunk.chunk_id for chunk in chunks),
            added=tuple(dict.fromkeys(chunk.chunk_id for chunk in chunks if not chunk.found)),
        )

    def joined(self, fused: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
        """The fused candidates, then the added chunks with a fused score of 0 (no lane ranked them)."""
        present = {chunk_id for chunk_id, _ in fused}
        return list(fused) + [(chunk_id, 0.0) for chunk_id in self.added if chunk_id not in present]

    def first(self, order: Sequence[str]) -> list[str]:
        """`order` with the direct subjects ahead of incidental evidence, each group in its own order."""
        return [c for c in order if c in self.chunk_ids] + [c for c in order if c not in self.chunk_ids]
