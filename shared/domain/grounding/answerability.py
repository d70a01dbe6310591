"""Whether the sentences an evidence-only answer would quote answer the question, and how few of them to quote.

No model reads meaning here, so these are the facts that separated answerable from unanswerable questions on the
train-side sets of `quire eval --answers` (docs/answers.md#answerability): the question's key terms (names,
numbers, identifiers) that no piece of evidence holds, its content words the quoted piece holds, and the kind of
answer it asks for (when: a date; how many: a number; who: a name) found in the quoted sentence. They read
questions, not statements (a claim to check); the kind of answer, names and coverage are read in English only,
numbers and identifiers in every language, so no English rule refuses another language's question.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum

from shared.domain.answers import Evidence
from shared.domain.grounding.extractive import EXTRACTIVE_SENTENCES, SENTENCES_PER_PIECE, Sentence
from shared.domain.search import query_terms, words_of
from shared.domain.text import CELL_SEPARATOR

# Calibrated on the train-side sets of `quire eval --answers` (docs/answers.md#answerability).
SENTENCE_MARGIN = 0.0  # a further sentence is quoted only this close (cosine) to the answering one: none
ANSWER_MARGIN = 0.3  # how far below the best sentence (cosine) the answering one may rank
RETRIEVAL_WEIGHT = 0.2  # how much a sentence's piece's retrieval score adds to its similarity (in_retrieval_order)
COVERAGE_FLOOR = 0.5  # the share of the question's content words the answering piece holds at least
MIN_ADDED_WORDS = 2  # a sentence of another piece adds a part of the question when it holds this many more words

# Words that frame an English question rather than say what it is about ("how many", "what kind of").
_QUESTION_FRAME = frozenset(
    {
        "many",
        "much",
        "long",
        "old",
        "far",
        "tall",
        "high",
        "big",
        "large",
        "often",
        "kind",
        "type",
        "sort",
        "name",
        "named",
        "called",
    }
)


class AnswerType(StrEnum):
    TIME = "time"  # when, what year
    QUANTITY = "quantity"  # how many, how much, how long
    NAME = "name"  # who, whom, whose: a person or an organisation


_ASKS = (
    (
        AnswerType.TIME,
        re.compile(
            r"^\W*(?:(?:in|since|until|by)\s+)?(?:when\b|(?:what|which)\s+(?:year|date|day|month|century|decade|time)"
            r"\b|how\s+long\s+ago\b)",
            re.I,
        ),
    ),
    (
        AnswerType.QUANTITY,
        re.compile(
            r"^\W*(?:(?:in|on|at|for|to|by|of)\s+)?(?:how\s+(?:many|much|long|old|far|tall|high|big|large|heavy|deep|"
            r"wide|fast|often)\b|what\s+(?:percentage|proportion|share|number|amount)\b)",
            re.I,
        ),
    ),
    (AnswerType.NAME, re.compile(r"^\W*(?:(?:by|to|with|for|from)\s+)?(?:who|whom|whose)\b", re.I)),
)
_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
_TIME = re.compile(
    r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b|\b\d+\s*(?:bc|bce|ad|ce)\b|\bq[1-4]\b|\b\d{1,2}:\d{2}\b|\b(?:"
    + "|".join(_MONTHS.split())
    + r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|century|centuries|decade|decades|today|yesterday|"
    r"tomorrow|ago|annually|weekly|daily)\b",
    re.I,
)
_NUMBER_WORDS = frozenset(
    {
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "hundreds",
        "thousand",
        "thousands",
        "million",
        "millions",
        "billion",
        "billions",
        "trillion",
        "dozen",
        "dozens",
        "half",
        "twice",
        "once",
        "single",
        "double",
        "triple",
        "percent",
    }
)
_DIGITS = re.compile(r"\d")
_HOW_MANY = re.compile(r"\bhow\s+many\s+(.*)", re.I)
COUNT_WINDOW = 4  # a number counts what the question asks about when one of its words is this many words near
_INTERROGATIVE = re.compile(
    r"(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|should|will|would|has|"
    r"have|had)\b",
    re.I,
)
_CAPITALISED = re.compile(r"\b[A-Z][\w'\u2019-]*")
_KEY = re.compile(r"[^\W_](?:[\w'\u2019.-]*[^\W_])?")


def asked_type(question: str, language: str | None) -> AnswerType | None:
    """The kind of answer an English question asks for by its first words (when, how many, who), else None: a
    question in another language, or one whose answer could be anything ("what", "why", "how")."""
    if language not in (None, "en"):
        return None
    return next((kind for kind, pattern in _ASKS if pattern.search(question)), None)


def holds_type(text: str, kind: AnswerType, question: str) -> bool:
    """Whether `text` holds something of `kind` beyond the question's own words: a date or time, a number, a name
    (a capitalised word that is not a stopword)."""
    asked = set(words_of(question))
    if kind is AnswerType.TIME:
        return any(match.group(0).casefold() not in asked for match in _TIME.finditer(text))
    if kind is AnswerType.QUANTITY:
        words = words_of(text)
        numbers = [
            index
            for index, word in enumerate(words)
            if (_DIGITS.search(word) or word in _NUMBER_WORDS) and word not in asked
        ]
        counted = _counted(question)
        if not counted or CELL_SEPARATOR in text:  # a table row's number counts what its header says
            return bool(numbers)
        # "How many towns": a number counting towns, not the one of three centuries.
        return any(
            len(missing(counted, " ".join(words[max(0, index - COUNT_WINDOW) : index + 1 + COUNT_WINDOW])))
            < len(counted)
            for index in numbers
        )
    # A name: a capitalised word after the sentence's first (which any sentence capitalises), not the question's,
    # and without a digit (a serial number or a code such as PV-40982 names no one).
    capitalised = (
        words_of(match.group(0))
        for match in _CAPITALISED.finditer(text)
        if match.start() > 0 and not _DIGITS.search(match.group(0))
    )
    return any(word not in asked and word in query_terms(word) for found in capitalised for word in found[:1])


def _counted(question: str) -> list[str]:
    """What a "how many" question counts: its first content words after "how many" ("how many checkout attempts":
    checkout, attempts)."""
    match = _HOW_MANY.search(question)
    if match is None:
        return []
    return [word for word in words_of(match.group(1)) if word in query_terms(word)][:2]


def key_terms(question: str, language: str | None) -> frozenset[str]:
    """The question's words that name one thing: numbers and identifiers (a word with a digit), in every language;
    in English also capitalised words after the first (names, places, acronyms). A question about something the
    evidence never mentions is not answered by it."""
    words = [match.group(0) for match in _KEY.finditer(question)]
    found: set[str] = set()
    for position, word in enumerate(words):
        if language in (None, "en") and position > 0 and word[0].isupper():
            found.update(words_of(word.removesuffix("'s").removesuffix("\u2019s")))
        elif _DIGITS.search(word):
            # Its numbers and the letters of an identifier ("ERR-4021"), not the CJK pairs a run of text around a
            # number splits into ("2026年的预算": 2026).
            found.update(part for part in words_of(word) if _DIGITS.search(part) or part.isascii())
    return frozenset(found) & query_terms(question, language)


def content_words(question: str, language: str | None) -> frozenset[str]:
    """The question's words without stopwords (English's and its language's) and English question framing."""
    return query_terms(question, language) - _QUESTION_FRAME


def _matches(word: str, vocabulary: frozenset[str]) -> bool:
    """The word is in the vocabulary, or shares a long enough beginning with one of its words (a crude stem:
    "tardigrades" and "tardigrade", "discovered" and "discovery")."""
    if word in vocabulary:
        return True
    if len(word) < 5:
        return False
    stem = word[: max(5, len(word) - 3)]
    return any(
        len(other) >= 5 and (other.startswith(stem) or word.startswith(other[: max(5, len(other) - 3)]))
        for other in vocabulary
    )


def missing(words: Iterable[str], text: str) -> list[str]:
    """The words of `words` that `text` does not hold (matched loosely: see _matches)."""
    vocabulary = frozenset(words_of(text))
    return [word for word in words if not _matches(word, vocabulary)]


def coverage(words: frozenset[str], text: str) -> float:
    """The share of `words` that `text` holds (1.0 when there are none)."""
    if not words:
        return 1.0
    return 1 - len(missing(sorted(words), text)) / len(words)


def is_question(text: str, language: str | None) -> bool:
    """Whether `text` asks something (a question mark, or in English an interrogative first word), rather than
    states it: a statement to check (a claim) is answered by evidence about it, which need not repeat its every
    name or hold a kind of answer, so the rules below read questions only."""
    stripped = text.strip()
    if stripped.endswith(("?", "\uff1f", "\u061f")):
        return True
    return language in (None, "en") and bool(_INTERROGATIVE.match(stripped))


def in_retrieval_order(
    candidates: Sequence[tuple[Sentence, float]], pieces: Mapping[str, Evidence], weight: float
) -> list[tuple[Sentence, float]]:
    """The candidates (each with its own similarity) ordered by it plus `weight` times its piece's fused retrieval score
    relative to the best piece's (0 for the best, down to -weight): the sentence and the search agree more often
    than either alone on the train sets (docs/answers.md#answerability)."""
    top = max((piece.score for piece in pieces.values()), default=0.0)

    def prior(item: tuple[Sentence, float]) -> float:
        score = pieces[item[0].evidence_id].score
        return item[1] + weight * ((score / top) - 1 if top > 0 else 0.0)

    return sorted(candidates, key=prior, reverse=True)


OTHER_DOCUMENTS = 2  # the nearness of a sentence of another document than the best sentence's


def _earlier(items: Sequence[tuple[Sentence, float]], index: int) -> int:
    """How many of `items` before `index` are of the same piece as it."""
    piece = items[index][0].evidence_id
    return sum(item[0].evidence_id == piece for item in items[:index])


def answering_sentences(
    question: str,
    language: str | None,
    candidates: Sequence[tuple[Sentence, float]],
    pieces: Mapping[str, Evidence],
    *,
    margin: float,
    count: int = EXTRACTIVE_SENTENCES,
) -> list[tuple[Sentence, float]]:
    """The sentences to quote, at most SENTENCES_PER_PIECE of one piece, from `candidates` (distinct, at or above the
    floor, best first: in_retrieval_order; any number of one piece, whose third may be the one that answers),
    or none when they do not answer the question. A statement (not is_question) is judged by the margin alone.

    - A key term of the question (a number, an identifier; in English a name) that no piece of evidence holds: none.
    - The answering sentence is the first within ANSWER_MARGIN of the best that holds the kind of answer the
      question asks for (English: a date for "when", a number for "how many", a name for "who") and whose piece
      holds at least COVERAGE_FLOOR of the question's content words (an English question and piece), looked for
      in the best sentence's piece, then in the rest of its document, then elsewhere, best first. Further ones that
      would answer too are quoted only within `margin` of it: one sentence when one clearly answers.
    - No one piece holds enough of the question's words: the first sentence holding the kind of answer, if it is of
      the best sentence's document and with the sentences added below they hold enough; else none.
    - Either way, a sentence of another piece that holds at least MIN_ADDED_WORDS of the question's words the
      quoted pieces lack is added (a question of two parts), up to `count`."""
    if not candidates:
        return []
    asking = is_question(question, language)
    everything = " ".join(f"{piece.snapshot.context} {piece.text}" for piece in pieces.values())
    if asking and missing(sorted(key_terms(question, language)), everything):
        return []
    best, best_score = candidates[0]
    home = pieces[best.evidence_id]
    kind = asked_type(question, language) if asking else None
    words = sorted(content_words(question, language)) if asking else []
    position = {id(item): index for index, item in enumerate(candidates)}

    def nearness(item: tuple[Sentence, float]) -> tuple[int, int]:
        piece = pieces[item[0].evidence_id]
        group = 0 if piece is home else 1 if piece.snapshot.file_id == home.snapshot.file_id else OTHER_DOCUMENTS
        return group, position[id(item)]

    def lacking(items: Sequence[tuple[Sentence, float]]) -> list[str]:
        quoted = {item[0].evidence_id: pieces[item[0].evidence_id] for item in items}
        return missing(words, " ".join(f"{piece.snapshot.context} {piece.text}" for piece in quoted.values()))

    def covered(items: Sequence[tuple[Sentence, float]]) -> bool:
        # Words are compared in English only: another language's question or piece is not judged by them.
        english = language in (None, "en") and all(
            pieces[item[0].evidence_id].snapshot.language in (None, "en") for item in items
        )
        return not english or not words or 1 - len(lacking(items)) / len(words) >= COVERAGE_FLOOR

    near = sorted((item for item in candidates if item[1] >= best_score - ANSWER_MARGIN), key=nearness)
    typed = [item for item in near if kind is None or holds_type(item[0].text, kind, question)]

    def with_parts(chosen: list[tuple[Sentence, float]]) -> list[tuple[Sentence, float]]:
        # Sentences of other pieces that hold a part of the question the quoted ones lack (a question of two parts).
        for item in near:
            apart = item[0].evidence_id not in {quoted[0].evidence_id for quoted in chosen}
            if (
                len(chosen) < count
                and apart
                and len(lacking(chosen)) - len(lacking([*chosen, item])) >= MIN_ADDED_WORDS
            ):
                chosen = [*chosen, item]
        return chosen

    answer = next((item for item in typed if covered([item])), None)
    if answer is not None:
        further = (item for item in typed if item is not answer and abs(answer[1] - item[1]) < margin)
        quoted = [answer, *(item for item in further if covered([item]))]
        return with_parts(
            [item for index, item in enumerate(quoted) if _earlier(quoted, index) < SENTENCES_PER_PIECE][:count]
        )
    if not typed or nearness(typed[0])[0] == OTHER_DOCUMENTS:
        return []  # the best sentence's document does not hold the kind of answer: another's does not answer for it
    chosen = with_parts([typed[0]])
    return chosen if covered(chosen) else []
