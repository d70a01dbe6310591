"""What a search's syntax asks of every hit (docs/search.md#query-syntax): quoted phrases it must contain and words
or phrases it must not. The value search carries into every lane; shared/domain/query_syntax.py reads it from the
query's text."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

MAX_PHRASES = 10
MAX_EXCLUSIONS = 10
MAX_PHRASE_WORDS = 20  # words of one phrase (or excluded phrase), as the keyword lane splits them
MAX_TERM_CHARACTERS = 200  # characters of one phrase or excluded word, as typed

Term = Annotated[str, Field(min_length=1, max_length=MAX_TERM_CHARACTERS)]


class QueryConstraints(BaseModel):
    """Every hit's chunk holds each of `phrases` (its words in order, adjacent) and none of `excluded` (words or
    phrases), both compared as the keyword lane reads the chunk: folded, by the analyser of the chunk's language
    (its stems; its stopwords are not compared). Empty: no constraint."""

    model_config = ConfigDict(frozen=True)

    phrases: tuple[Term, ...] = Field(default=(), max_length=MAX_PHRASES)
    excluded: tuple[Term, ...] = Field(default=(), max_length=MAX_EXCLUSIONS)

    def __bool__(self) -> bool:
        return bool(self.phrases or self.excluded)


NO_CONSTRAINTS = QueryConstraints()
