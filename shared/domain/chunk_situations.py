"""A chunk's situating sentence: a model's one line on where a chunk sits in its document (Anthropic's "contextual
retrieval"), an optional part of the chunk's context on AWS (issue 37; docs/search.md#contextual-chunks).

The deterministic context (title, heading path, caption: chunk_context.py) says what a document is; the sentence
says what this chunk is about within it ("This section reports Northwind's revenue for Q3 2025, by region"),
which headings often do not. It is indexed as context, never quoted, and never invented: a chunk without one
keeps its deterministic context.

What the model reads is bounded whatever the document: the document's head (its title, its outline and its
first part, the same for every chunk of the version, so the model can cache it), the chunk and its neighbours.
"""

import hashlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.knowledge import HEADING_SEPARATOR, ChunkDraft

# The sentence is context, not a summary: longer than this it is cut at a sentence or a word.
MAX_SITUATION_CHARACTERS = 300
# What the model reads of the document (about 2,000 tokens), of the outline within it, and of each neighbour.
MAX_HEAD_CHARACTERS = 8_000
MAX_OUTLINE_CHARACTERS = 2_000
MAX_NEIGHBOUR_CHARACTERS = 1_200
# A chunk sent is cut at this many characters (chunks are a few hundred tokens; this bounds a stray one).
MAX_CHUNK_CHARACTERS = 4_000

_BEGINNING = "Beginning:\n"
_LETTERS = re.compile(r"[^\W\d_]{2}")
# What a model writes before its answer although it was asked not to.
_PREAMBLE = re.compile(
    r"^(?:(?:here is|here's)\b[^:\n]*:|(?:succinct\s+|short\s+)?context\s*:|situating context\s*:)\s*", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*(?=\s|$)")


class GeneratedSituation(BaseModel):
    """A model's situating sentence for one chunk and what the call consumed."""

    model_config = ConfigDict(frozen=True)

    text: str
    model: str
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


@dataclass(frozen=True)
class SituationRequest:
    """What a model reads to situate one chunk: the document's head (shared by every chunk of the version), the
    chunk, and the text just before and after it."""

    document: str
    chunk: str
    before: str = ""
    after: str = ""


def situating_model(model_id: str, prompt_version: str) -> str:
    """What a sentence is cached under and a version records it was situated by: the model and its prompt (a new
    prompt makes the sentences written with the old one stale)."""
    return f"{model_id}#{prompt_version}"


def situation_key(draft: ChunkDraft) -> str:
    """The cache key of a chunk's sentence: the hash of what it is indexed with but the sentence (its deterministic
    context and its body), so a re-index of the same document finds the sentence it paid for."""
    deterministic = draft if draft.situation is None else draft.model_copy(update={"situation": None})
    return hashlib.sha256(deterministic.content.encode()).hexdigest()


def document_head(drafts: Sequence[ChunkDraft], *, title: str | None = None) -> str:
    """The document as a model reads it to situate any of its chunks: its title, its outline (each heading path
    once, in order) and its first chunks, within MAX_HEAD_CHARACTERS."""
    parts: list[str] = []
    # A chunk's title is only set where its heading path does not begin with it: else the path's first heading is it.
    named = title or next((draft.title for draft in drafts if draft.title), None)
    named = named or next((draft.heading_path[0] for draft in drafts if draft.heading_path), None)
    if named:
        parts.append(f"Title: {named}")
    outline: list[str] = []
    seen: set[tuple[str, ...]] = set()
    used = 0
    for draft in drafts:
        path = draft.heading_path
        if not path or path in seen:
            continue
        seen.add(path)
        line = HEADING_SEPARATOR.join(path)
        if used + len(line) > MAX_OUTLINE_CHARACTERS:
            break
        outline.append(line)
        used += len(line) + 1
    if outline:
        parts.append("Outline:\n" + "\n".join(outline))
    room = MAX_HEAD_CHARACTERS - sum(len(part) + 2 for part in parts) - len(_BEGINNING)
    opening: list[str] = []
    for draft in drafts:
        if room <= 0:
            break
        text = _clipped(draft.text, room)
        if text:
            opening.append(text)
            room -= len(text) + 2
    if opening:
        parts.append(_BEGINNING + "\n\n".join(opening))
    return "\n\n".join(parts)


def request_for(drafts: Sequence[ChunkDraft], index: int, document: str) -> SituationRequest:
    """The request for chunk `index` of `drafts` (a batch in document order): its neighbours within the batch."""
    before = drafts[index - 1].text if index > 0 else ""
    after = drafts[index + 1].text if index + 1 < len(drafts) else ""
    return SituationRequest(
        document=document,
        chunk=_clipped(drafts[index].text, MAX_CHUNK_CHARACTERS),
        before=_clipped(before, MAX_NEIGHBOUR_CHARACTERS, keep_end=True),
        after=_clipped(after, MAX_NEIGHBOUR_CHARACTERS),
    )


def cleaned_situation(text: str) -> str | None:
    """A model's answer as a situating sentence: on one line, without a preamble or quotes, cut at a sentence
    (or a word) within MAX_SITUATION_CHARACTERS; None when it says nothing."""
    line = " ".join(unicodedata.normalize("NFKC", text).split())
    line = _PREAMBLE.sub("", line).strip().strip("\"'\u201c\u201d\u2018\u2019").strip()
    if not _LETTERS.search(line):
        return None
    if len(line) > MAX_SITUATION_CHARACTERS:
        window = line[: MAX_SITUATION_CHARACTERS + 1]
        ends = [match.end() for match in _SENTENCE_END.finditer(window)]
        if ends:
            line = window[: ends[-1]]
        else:
            line = window.rsplit(" ", 1)[0].rstrip(" ,;:-") if " " in window else window[:MAX_SITUATION_CHARACTERS]
    return line or None


class Situation(BaseModel):
    """A chunk's sentence as the embed step leaves it for the index step, with the embedding model's tokens the
    sentence adds to the chunk."""

    model_config = ConfigDict(frozen=True)

    text: str
    tokens: int = Field(default=0, ge=0)


def fitted_situation(draft: ChunkDraft, text: str, *, count: Callable[[str], int], max_tokens: int) -> Situation | None:
    """The sentence for `draft` as much of it as the embedding model reads: the chunk with it, counted whole by `count`
    (the model's tokens), within `max_tokens`, the sentence cut at a word where it would pass; None when not even its
    first word fits (a chunk cut to the limit already). The chunker sized the chunk without it, to the same limit."""
    words = text.split(" ")

    def total(kept: int) -> int:
        return count(situated_content(draft, " ".join(words[:kept])))

    kept = len(words)
    if total(kept) > max_tokens:
        # The most words that fit: the count grows with the words kept, so halve the range each time.
        low, high = 0, kept - 1
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if total(middle) <= max_tokens else (low, middle - 1)
        kept = low
    sentence = " ".join(words[:kept]).rstrip(" ,;:-") if kept < len(words) else text
    if not sentence:
        return None
    return Situation(text=sentence, tokens=max(0, count(situated_content(draft, sentence)) - draft.token_count))


def situated_content(draft: ChunkDraft, sentence: str) -> str:
    """What is embedded for `draft` with `sentence` as its situating context."""
    return draft.model_copy(update={"situation": sentence or None}).content


def situated(draft: ChunkDraft, situation: Situation | None) -> ChunkDraft:
    """The chunk indexed with its sentence (None: as it was cut), its body, excerpt and citation untouched."""
    if situation is None:
        return draft
    return draft.model_copy(update={"situation": situation.text, "token_count": draft.token_count + situation.tokens})


def _clipped(text: str, limit: int, *, keep_end: bool = False) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    if keep_end:
        tail = text[-limit:]
        return tail.split(" ", 1)[1] if " " in tail else tail
    head = text[:limit]
    return head.rsplit(" ", 1)[0] if " " in head else head
