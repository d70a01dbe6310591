"""Text primitives shared by chunking, outlines, grounding and summaries: the one sentence splitter, a block's
text as a chunk quotes it, and how quotes, figures and tokens are compared.

A sentence ends at terminal punctuation (and its closing quotes) before white space, or at Chinese and Japanese
full-width terminals (the ideographic full stop, full-width ! and ?) before anything, unless a full stop follows
an abbreviation, an initial or a list number; with `only_before_capitals`, only where a capital letter, a digit or
a letter of a caseless script comes next (an outline shows its sentences alone: a wrong boundary there is a
misleading fragment).
"""

import re
import unicodedata
from collections.abc import Iterator, Sequence

from shared.domain.document import Block
from shared.domain.languages import cjk_apart

Span = tuple[int, int]  # text[start:end]

BLOCK_SEPARATOR = "\n\n"
ROW_SEPARATOR = "\n"
CELL_SEPARATOR = " | "

# A full stop after one of these (compared in lower case) does not end a sentence.
ABBREVIATIONS = frozenset(
    {"e.g.", "i.e.", "cf.", "vs.", "al.", "approx.", "ca.", "dr.", "mr.", "mrs.", "ms.", "prof.", "sr.", "jr."}
    | {"st.", "fig.", "figs.", "eq.", "eqs.", "vol.", "pp."}
)
# These also end sentences ("Acme Inc. The company …", "The answer was no. Then …"): before a capital letter they
# do, unless a capital is what every boundary needs (`only_before_capitals`, where they never do); before anything
# else ("No. 5", "p. 12", "Inc. last year") they never do.
BEFORE_A_NUMBER = frozenset(
    {"p.", "no.", "nos.", "sec.", "ch.", "art.", "etc.", "inc.", "ltd.", "co.", "corp.", "dept.", "est.", "gen."}
    | {"gov.", "jan.", "feb.", "mar.", "apr.", "aug.", "sept.", "sep.", "oct.", "nov.", "dec.", "ref.", "refs."}
    | {"tab.", "resp.", "viz."}
)
OPENERS = "\"'([{«\u201c\u2018\u300c\u300e\uff08\u3010\u3014\u300a\u3008"
CLOSERS = "\"')]}»\u201d\u2019\u300d\u300f\uff09\u3011\u3015\u300b\u3009"
# Terminal punctuation: Latin's, Arabic's question mark and Urdu's full stop, the Devanagari danda, Armenian's
# and Ethiopic's full stops, each before white space; and the full-width ones of Chinese and Japanese (the
# ideographic full stop, the full-width exclamation and question marks), which need none: those scripts leave no
# space between sentences.
_SPACED_TERMINALS = ".!?…\u061f\u06d4\u0964\u0965\u0589\u1362"
_FULL_WIDTH_TERMINALS = "\u3002\uff01\uff1f\uff61"
# A terminal run, its closing quotes, then (white space and) the first character of what follows past any opening
# quotes, captured. Only from the first mark of a run: otherwise a run of thousands of dots is rescanned from each
# of its marks.
_TERMINAL = re.compile(
    f"(?<![{_SPACED_TERMINALS}])[{_SPACED_TERMINALS}]+[{re.escape(CLOSERS)}]*(?=\\s+[{re.escape(OPENERS)}]*(\\S))"
    f"|(?<![{_FULL_WIDTH_TERMINALS}])[{_FULL_WIDTH_TERMINALS}]+[{re.escape(CLOSERS)}]*"
    f"(?=\\s*[{re.escape(OPENERS)}]*(\\S))"
)
_INITIALS = re.compile(r"[A-Z]\.|(?:[A-Za-z]\.){2,}")  # "J. Smith", "U.S. law"
_NUMBERING = re.compile(r"[\d.]+|[IVXLivxl]+\.")  # "1." or "2.3." or "IV." opening a list item or heading
_ABBREVIATION_LOOKBACK = 16  # every abbreviation is shorter: a short look-back never rescans a long word

_SPACE = re.compile(r"\s+")
_LEADING_SPACE = re.compile(r"\s*")
# A token: letters and digits, joined by . / : - _ inside it (v2.1, ERR-4021, 2026-03-01, 12:30, a_b).
_TOKEN = re.compile(r"[^\W_](?:[\w./:-]*[^\W_])?")
# An all-capitals code joined by a hyphen or underscore, digits or not (SKU-ABX, HTTP_PROXY).
_CODE = re.compile(r"(?<![\w-])[A-Z]{2,}(?:[-_][A-Z0-9]+)+(?![\w-])")


# --- sentences ------------------------------------------------------------------------------------------------


def _skip_space(text: str, position: int, stop: int) -> int:
    match = _LEADING_SPACE.match(text, position, stop)
    return match.end() if match else position


def _ends_no_sentence(text: str, start: int, terminal: re.Match[str], *, only_before_capitals: bool) -> bool:
    """An abbreviation ("e.g.", "Fig."), an initial ("J. Smith") or a list number ("1.") opening the sentence
    (which began at `start`) before a full stop. Decimals ("3.14") need no rule: no white space follows."""
    if terminal.group().rstrip(CLOSERS) != ".":
        return False
    before = text[max(start, terminal.start() - _ABBREVIATION_LOOKBACK) : terminal.start() + 1]
    words = before.split()
    word = words[-1].lstrip(OPENERS) if words else ""
    if word.lower() in ABBREVIATIONS or _INITIALS.fullmatch(word):
        return True
    if word.lower() in BEFORE_A_NUMBER and (only_before_capitals or not terminal.group(1).isupper()):
        return True
    return len(words) == 1 and terminal.start() - start < _ABBREVIATION_LOOKBACK and bool(_NUMBERING.fullmatch(word))


def sentence_ends(
    text: str, start: int = 0, stop: int | None = None, *, only_before_capitals: bool = False
) -> Iterator[int]:
    """Where each sentence from `start` ends (after its punctuation and closing quotes), in order, looking no
    further than `stop`: lazily, so a caller that wants the first few sentences scans no more than those."""
    stop = len(text) if stop is None else stop
    sentence_start = _skip_space(text, start, stop)
    for terminal in _TERMINAL.finditer(text, start, stop):
        following = terminal.group(1) or terminal.group(2)
        if only_before_capitals and not (following.isupper() or following.isdigit() or _caseless(following)):
            continue
        if not _ends_no_sentence(text, sentence_start, terminal, only_before_capitals=only_before_capitals):
            yield terminal.end()
            sentence_start = _skip_space(text, terminal.end(), stop)


def _caseless(character: str) -> bool:
    """A letter of a script with no capitals (Chinese, Arabic, Devanagari): any sentence may start with it."""
    return character.isalpha() and character.lower() == character.upper()


def _stripped(text: str, start: int, end: int) -> Span | None:
    start = _skip_space(text, start, end)
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def sentence_spans(text: str, *, by_line: bool = False, only_before_capitals: bool = False) -> list[Span]:
    """Every sentence of `text`, white space trimmed, in order. `by_line`: a line break ends a sentence too (a
    table's rows, a model's list)."""
    if by_line:
        spans: list[Span] = []
        offset = 0
        for line in text.split("\n"):
            found = sentence_spans(line, only_before_capitals=only_before_capitals)
            spans.extend((offset + start, offset + end) for start, end in found)
            offset += len(line) + 1
        return spans
    spans = []
    start = 0
    for end in sentence_ends(text, only_before_capitals=only_before_capitals):
        if (span := _stripped(text, start, end)) is not None:
            spans.append(span)
        start = end
    if (span := _stripped(text, start, len(text))) is not None:
        spans.append(span)
    return spans


# --- blocks ---------------------------------------------------------------------------------------------------


def block_text(block: Block) -> str:
    """A block as a chunk's body quotes it: its text, or a table's rows of cells joined " | ", one row a line."""
    if block.table is None:
        return block.text
    return ROW_SEPARATOR.join(row_text(row) for row in block.table.rows)


def row_text(row: tuple[str, ...]) -> str:
    # A line break inside a cell would make one row two lines, and a piece could then cut a row in half.
    return CELL_SEPARATOR.join(" ".join(cell.splitlines()) for cell in row)


# --- quotes, figures and tokens -------------------------------------------------------------------------------


def normalised(text: str) -> str:
    """NFC, every run of white space one space, no white space at either end: how quotes are compared."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def quote_fits(quote: str, blocks_text: Sequence[str]) -> bool:
    """Whether `quote` is a verbatim substring of these blocks (white space normalised). Over several blocks it
    may run from one into the next, whether the model joined them with white space or with nothing."""
    wanted = normalised(quote)
    if not wanted:
        return False
    texts = [normalised(text) for text in blocks_text]
    return any(wanted in text for text in texts) or (
        len(texts) > 1 and (wanted in " ".join(texts) or wanted in "".join(texts))
    )


def stated_figures(text: str) -> list[str]:
    """The numbers and identifiers `text` states, case-folded: tokens holding a digit, and all-capitals codes."""
    text = cjk_apart(text)  # a figure inside Chinese or Japanese text ("根据第12条") is the figure alone
    figures = [token for token in _TOKEN.findall(text) if any(ch.isdigit() for ch in token)]
    figures.extend(_CODE.findall(text))
    return list(dict.fromkeys(figure.casefold() for figure in figures))


def contains_token(text: str, token: str) -> bool:
    # As a whole token: ERR-402 must not be found inside ERR-4021, nor 12 inside 2012.
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", cjk_apart(text)) is not None
