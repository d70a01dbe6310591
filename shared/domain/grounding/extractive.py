"""Extractive answers: sentences of the evidence, verbatim, ranked against the question."""

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shared.domain.answers import MAX_CLAIM_CHARACTERS, Evidence
from shared.domain.grounding.evidence import NEAR_DUPLICATE, shingle_containment, word_shingles
from shared.domain.grounding.validation import clipped_at_word
from shared.domain.search import query_terms
from shared.domain.text import BLOCK_SEPARATOR, CELL_SEPARATOR, sentence_spans

EXTRACTIVE_SENTENCES = 3
SENTENCES_PER_PIECE = 2  # quoted from one piece at most
# Sentences embedded to rank an extractive answer: all of the LEADING_PIECES best pieces', then word-sharing ones.
# Fewer cost recall on the train sets (16 with one or two whole pieces: docs/answers.md#which-sentences-are-embedded).
MAX_RANKED_SENTENCES = 24
LEADING_PIECES = 2
# Word pieces of those sentences, in all: a sentence of a script the model reads a piece per character or syllable
# costs several times an English one, and the time grows with the pieces (docs/answers.md#which-sentences-are-embedded).
MAX_RANKED_PIECES = 1_000
MAX_SENTENCES_PER_EVIDENCE = 60  # a hostile chunk of a thousand one-word "sentences" is not ranked whole
MIN_SENTENCE_CHARACTERS = 12  # "Yes." or a page number is no answer on its own


@dataclass(frozen=True)
class Sentence:
    """A sentence of one piece of evidence: verbatim `evidence.text[start:end]`."""

    evidence_id: str
    start: int
    end: int
    text: str


def sentences_of(piece: Evidence) -> list[Sentence]:
    """The piece's sentences, each a verbatim slice of its text: blocks (and a table's rows) first, then the
    chunker's sentence boundaries inside each; bounded per piece."""
    body = piece.text
    found: list[Sentence] = []
    offset = 0
    for block in body.split(BLOCK_SEPARATOR):
        # A table's rows are its sentences.
        for start, end in sentence_spans(block, by_line=CELL_SEPARATOR in block):
            text = block[start:end]
            if len(text) >= MIN_SENTENCE_CHARACTERS and any(character.isalpha() for character in text):
                clipped = clipped_at_word(text, MAX_CLAIM_CHARACTERS)
                begin = offset + start
                found.append(Sentence(piece.evidence_id, begin, begin + len(clipped), clipped))
            if len(found) == MAX_SENTENCES_PER_EVIDENCE:
                return found
        offset += len(block) + len(BLOCK_SEPARATOR)
    return found


def sentences_to_rank(
    question: str,
    sentences: Sequence[Sentence],
    evidence_order: Mapping[str, int],
    *,
    limit: int = MAX_RANKED_SENTENCES,
    language: str | None = None,
    cost: Callable[[str], int] | None = None,
    budget: int = MAX_RANKED_PIECES,
) -> list[Sentence]:
    """The sentences worth embedding, at most `limit` and, when `cost` counts a text's word pieces, at most `budget`
    pieces in all: every sentence of the best-ranked pieces (where a paraphrase with no shared word is likeliest to
    be), then those of the rest that share a word with the question, best-sharing first; a sentence that would
    overrun the budget is passed over for a shorter one. Embedding every sentence of eight pieces costs most of an
    answer's time and changes its choice seldom: the pieces are already ranked."""
    counted: dict[int, int] = {}

    def pieces(sentence: Sentence) -> int:
        # Counted once, and only for the sentences the budget is checked on (the tokenizer is not free).
        if id(sentence) not in counted:
            counted[id(sentence)] = cost(sentence.text) if cost is not None else 0
        return counted[id(sentence)]

    if len(sentences) <= limit and sum(map(pieces, sentences)) <= budget:
        return list(sentences)
    rest = [sentence for sentence in sentences if evidence_order[sentence.evidence_id] >= LEADING_PIECES]
    shares = {id(sentence): lexical_similarity(question, sentence.text, language) for sentence in rest}
    leading = [sentence for sentence in sentences if evidence_order[sentence.evidence_id] < LEADING_PIECES]
    rest.sort(key=lambda sentence: (-shares[id(sentence)], evidence_order[sentence.evidence_id], sentence.start))
    # Few enough to embed all but for the budget: those sharing no word come last, not never.
    candidates = leading + [sentence for sentence in rest if len(sentences) <= limit or shares[id(sentence)] > 0]
    kept: set[int] = set()
    spent = 0
    for sentence in candidates:
        if len(kept) == limit:
            break
        if spent + pieces(sentence) <= budget:
            kept.add(id(sentence))
            spent += pieces(sentence)
    return [sentence for sentence in sentences if id(sentence) in kept]


def lexical_similarity(question: str, sentence: str, language: str | None = None) -> float:
    """The share of the question's words (stopwords off: English's, and the question's `language`'s) the sentence
    holds: the ranking when no embedding runs, or when the model does not read the question's language."""
    wanted = query_terms(question, language)
    if not wanted:
        return 0.0
    return len(wanted & query_terms(sentence, language)) / len(wanted)


def cosine(first: Sequence[float], second: Sequence[float]) -> float:
    dot = sum(a * b for a, b in zip(first, second, strict=True))
    norms = math.sqrt(sum(a * a for a in first)) * math.sqrt(sum(b * b for b in second))
    return dot / norms if norms else 0.0


def ranked_sentences(
    sentences: Sequence[Sentence], similarity: Sequence[float], evidence_order: Mapping[str, int]
) -> list[tuple[Sentence, float]]:
    """Sentences best first; ties by evidence rank, then position (deterministic)."""
    paired = list(zip(sentences, similarity, strict=True))
    return sorted(paired, key=lambda item: (-round(item[1], 6), evidence_order[item[0].evidence_id], item[0].start))


def extractive_choice(
    ranked: Sequence[tuple[Sentence, float]],
    *,
    count: int = EXTRACTIVE_SENTENCES,
    floor: float,
    per_piece: int = SENTENCES_PER_PIECE,
) -> list[tuple[Sentence, float]]:
    """The best `count` sentences at or above `floor`, no two near-identical, at most `per_piece` from one piece."""
    chosen: list[tuple[Sentence, float]] = []
    taken: dict[str, int] = {}
    shingles: list[frozenset[tuple[str, ...]]] = []
    for sentence, score in ranked:
        if len(chosen) == count or score < floor:
            break
        if taken.get(sentence.evidence_id, 0) == per_piece:
            continue
        own = word_shingles(sentence.text)
        if any(shingle_containment(own, other) >= NEAR_DUPLICATE for other in shingles):
            continue
        chosen.append((sentence, score))
        shingles.append(own)
        taken[sentence.evidence_id] = taken.get(sentence.evidence_id, 0) + 1
    return chosen
