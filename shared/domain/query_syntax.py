"""How a search query is read (seeds/000 retrieval, stage 1): "quoted phrases" a hit must contain, a leading -word
(or -"a phrase") a hit must not contain, and identifier-shaped terms (ERR-4021, Q3-2026, v2.1).

The rules (docs/search.md#query-syntax):
- Quotes pair up in order: the first quote character opens, the next one closes, whatever their shape (`"`, the
  typographic “ ” „ ‟, the guillemets « », the full-width quotation mark U+FF02 and 〝 〞 〟). They do not nest. A
  last quote with no partner is a plain character, and the words after it plain words. A pair with no word between
  its quotes is no phrase.
- A '-' excludes only at the start of the query or after whitespace, and only before a letter or a quote pair:
  `e-mail` and `ERR-4021` are words, `-5` is a number, a lone `-` is a character.
- What the lanes search (`text`) is the query without its syntax: a phrase's words stay (without their quotes),
  excluded words and phrases go.

Every count and length is bounded (shared/domain/query_constraints.py), and a query past a bound is refused with a
sentence naming it (a 400). The parser makes one pass over the query: linear whatever the input.
"""

import re

from pydantic import BaseModel, ConfigDict

from shared.domain.errors import InvalidRequest
from shared.domain.query_constraints import (
    MAX_EXCLUSIONS,
    MAX_PHRASE_WORDS,
    MAX_PHRASES,
    MAX_TERM_CHARACTERS,
    QueryConstraints,
)
from shared.domain.search import identifier_terms, words_of

# Quote characters, all interchangeable: ASCII's, the typographic double quotes, the guillemets, the full-width
# quotation mark and the CJK double prime quotation marks.
QUOTES = frozenset('"\u201c\u201d\u201e\u201f\u00ab\u00bb\uff02\u301d\u301e\u301f')
_EXCLUDE = "-"
_TERM = re.compile(r"\S+")


class QuerySyntaxError(InvalidRequest):
    """The query's syntax asks for more than its bounds allow, or leaves nothing to search for."""


class Identifier(BaseModel):
    """An identifier-shaped term of the searched text, as the keyword lane compares it (case folded); `required`
    when a quoted phrase holds it (every hit then holds it), else the identifier booster only moves the hits that
    hold it ahead."""

    model_config = ConfigDict(frozen=True)

    text: str
    required: bool


class InterpretedQuery(BaseModel):
    """A query as it was read: `text` is what the lanes search and the semantic lane embeds."""

    model_config = ConfigDict(frozen=True)

    text: str
    constraints: QueryConstraints = QueryConstraints()

    @property
    def identifiers(self) -> tuple[Identifier, ...]:
        return identifiers_read(self.text, self.constraints)


def interpret(query: str) -> InterpretedQuery:
    """`query` read as Quire's search syntax (this module's docstring), or a QuerySyntaxError naming the bound it
    passes, or saying that nothing but exclusions is left to search for."""
    pieces: list[str] = []
    phrases: list[str] = []
    excluded: list[str] = []
    quotes = [position for position, character in enumerate(query) if character in QUOTES]
    position = 0
    for opening, closing in zip(quotes[0::2], quotes[1::2], strict=False):
        negated = _starts_term(query, opening - 1) and query[opening - 1] == _EXCLUDE
        _read_plain(query, position, opening - 1 if negated else opening, pieces, excluded)
        inner = " ".join(query[opening + 1 : closing].split())
        if not words_of(inner):
            pieces.append(inner)  # no word between the quotes: nothing to require or exclude
        elif negated:
            _add(excluded, inner, MAX_EXCLUSIONS, "excluded words or phrases (-word)")
        else:
            _add(phrases, inner, MAX_PHRASES, 'quoted phrases ("…")')
            pieces.append(inner)
        position = closing + 1
    _read_plain(query, position, len(query), pieces, excluded)
    text = " ".join(" ".join(pieces).split())
    if not text:
        if excluded:
            raise QuerySyntaxError(
                "the query has only exclusions (-word): give the words to search for as well, as in 'invoice -draft'"
            )
        raise QuerySyntaxError("the query has no words to search for")
    return InterpretedQuery(text=text, constraints=QueryConstraints(phrases=tuple(phrases), excluded=tuple(excluded)))


def _read_plain(query: str, start: int, end: int, pieces: list[str], excluded: list[str]) -> None:
    """The terms of query[start:end], outside quotes: each one plain, or excluded when it starts a term with '-'
    and a letter follows."""
    for match in _TERM.finditer(query, start, end):
        term = match.group(0)
        excluding = term[0] == _EXCLUDE and len(term) > 1 and term[1].isalpha() and _starts_term(query, match.start())
        if excluding and words_of(term[1:]):
            _add(excluded, term[1:], MAX_EXCLUSIONS, "excluded words or phrases (-word)")
        else:
            pieces.append(term)


def _starts_term(query: str, at: int) -> bool:
    """Whether position `at` begins a term: the query's start, or just after whitespace."""
    return at == 0 or (at > 0 and query[at - 1].isspace())


def _add(terms: list[str], term: str, most: int, what: str) -> None:
    if len(terms) == most:
        raise QuerySyntaxError(f"a query may have at most {most} {what}")
    if len(term) > MAX_TERM_CHARACTERS:
        raise QuerySyntaxError(
            f"a quoted phrase or excluded word may be at most {MAX_TERM_CHARACTERS} characters long"
            f" ({_shown(term)} has {len(term)})"
        )
    words = len(words_of(term))
    if words > MAX_PHRASE_WORDS:
        raise QuerySyntaxError(
            f"a quoted or excluded phrase may have at most {MAX_PHRASE_WORDS} words ({_shown(term)} has {words})"
        )
    terms.append(term)


def _shown(term: str) -> str:
    return repr(term if len(term) <= 40 else term[:40] + "…")


def identifiers_read(text: str, constraints: QueryConstraints) -> tuple[Identifier, ...]:
    """The identifiers of the searched `text` (as the identifier booster finds them), each once, required when a
    quoted phrase holds it."""
    quoted = {term for phrase in constraints.phrases for term in identifier_terms(phrase)}
    return tuple(Identifier(text=term, required=term in quoted) for term in dict.fromkeys(identifier_terms(text)))
