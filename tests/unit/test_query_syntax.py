"""Reading a search query's syntax (shared/domain/query_syntax.py): quoted phrases, leading exclusions, identifiers,
what the lanes search, the bounds (each a sentence naming its limit), and hostile input answered with a reading or a
QuerySyntaxError, never anything else; then the request, the lanes and the echo it feeds."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from functions.views.search import InterpretedQueryView, SearchRequest
from shared.domain.errors import InvalidRequest
from shared.domain.query_constraints import (
    MAX_EXCLUSIONS,
    MAX_PHRASE_WORDS,
    MAX_PHRASES,
    MAX_TERM_CHARACTERS,
    QueryConstraints,
)
from shared.domain.query_syntax import QUOTES, Identifier, QuerySyntaxError, interpret
from shared.domain.search import SearchMode, SearchQuery
from tests.unit.retrieval_fakes import FakeLanes, caller, retrieval


def read(query: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    interpreted = interpret(query)
    return interpreted.text, interpreted.constraints.phrases, interpreted.constraints.excluded


def test_a_quoted_phrase_is_one_phrase_and_its_words_stay_in_the_searched_text() -> None:
    assert read('why "payment failed" at checkout') == ("why payment failed at checkout", ("payment failed",), ())
    assert read('"payment   failed"') == ("payment failed", ("payment failed",), ())
    assert read("payment failed") == ("payment failed", (), ())


def test_a_leading_minus_excludes_a_word_or_a_phrase_and_leaves_the_searched_text() -> None:
    assert read("invoice -draft") == ("invoice", (), ("draft",))
    assert read('-"out of office" leave') == ("leave", (), ("out of office",))
    assert read('leave -"out of office" -draft') == ("leave", (), ("out of office", "draft"))


def test_a_hyphen_inside_a_word_or_before_a_digit_or_alone_is_no_exclusion() -> None:
    assert read("e-mail ERR-4021 Q3-2026") == ("e-mail ERR-4021 Q3-2026", (), ())
    assert read("temperature -5 degrees") == ("temperature -5 degrees", (), ())
    assert read("a - b") == ("a - b", (), ())
    assert read("-") == ("-", (), ())
    assert read("--verbose flag") == ("--verbose flag", (), ())
    # A minus after a closing quote does not start a term: only whitespace or the query's start does.
    assert read('"a b"-"c d"') == ("a b - c d", ("a b", "c d"), ())


def test_an_unbalanced_quote_is_read_as_a_plain_character_never_refused() -> None:
    assert read('"payment failed') == ('"payment failed', (), ())
    assert read('"payment failed" and "refund') == ('payment failed and "refund', ("payment failed",), ())
    assert read('-"never closed') == ('-"never closed', (), ())


def test_typographic_guillemet_and_full_width_quotes_are_quotes_and_they_pair_in_order() -> None:
    assert read("“payment failed” «paiement échoué» „Zahlung fehlgeschlagen“ \uff02支付失败\uff02") == (
        "payment failed paiement échoué Zahlung fehlgeschlagen 支付失败",
        ("payment failed", "paiement échoué", "Zahlung fehlgeschlagen", "支付失败"),
        (),
    )
    assert read("“mixed shapes»") == ("mixed shapes", ("mixed shapes",), ())
    # Quotes do not nest: they pair in order.
    assert read('"outer "inner" outer"') == ("outer inner outer", ("outer", "outer"), ())
    assert set('"“”„‟«»\uff02〝〞〟') == QUOTES


def test_quotes_with_no_word_between_them_are_no_phrase() -> None:
    assert read('"" budget') == ("budget", (), ())
    assert read('"?!" budget') == ("?! budget", (), ())
    assert read('-"" budget') == ("budget", (), ())  # excluding nothing


def test_identifiers_are_found_once_each_and_required_only_when_quoted() -> None:
    interpreted = interpret('why "ERR-4021" on v2.1 and err-4021 in Q3-2026 -ERR-9')
    assert interpreted.identifiers == (
        Identifier(text="err-4021", required=True),
        Identifier(text="v2.1", required=False),
        Identifier(text="q3-2026", required=False),
    )
    assert interpreted.constraints.excluded == ("ERR-9",)


def test_a_query_of_exclusions_only_or_of_no_words_is_refused_saying_what_to_give() -> None:
    with pytest.raises(QuerySyntaxError, match="only exclusions"):
        interpret("-draft -final")
    with pytest.raises(QuerySyntaxError, match="no words to search for"):
        interpret('"" ""')
    with pytest.raises(QuerySyntaxError, match="no words to search for"):
        interpret("   ")


def test_each_bound_is_refused_with_a_sentence_naming_it_and_the_bound_itself_is_allowed() -> None:
    phrases = " ".join(f'"w{number} x"' for number in range(MAX_PHRASES))
    assert len(interpret(phrases).constraints.phrases) == MAX_PHRASES
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_PHRASES} quoted phrases"):
        interpret(phrases + ' "one more"')

    exclusions = "budget " + " ".join(f"-w{number}" for number in range(MAX_EXCLUSIONS))
    assert len(interpret(exclusions).constraints.excluded) == MAX_EXCLUSIONS
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_EXCLUSIONS} excluded words or phrases"):
        interpret(exclusions + ' -"one more"')

    words = " ".join(["word"] * MAX_PHRASE_WORDS)
    assert interpret(f'"{words}"').constraints.phrases == (words,)
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_PHRASE_WORDS} words .* has {MAX_PHRASE_WORDS + 1}"):
        interpret(f'"{words} word"')
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_PHRASE_WORDS} words"):
        interpret(f'budget -"{words} word"')

    long = "x" * MAX_TERM_CHARACTERS
    assert interpret(f'"{long}"').constraints.phrases == (long,)
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_TERM_CHARACTERS} characters long .* has 201"):
        interpret(f'"{long}x"')
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_TERM_CHARACTERS} characters"):
        interpret(f"budget -{long}x")
    # A syntax error is a bad request (a 400 on the HTTP route, invalid_request from a tool).
    assert issubclass(QuerySyntaxError, InvalidRequest)


def test_ten_thousand_quotes_read_as_pairs_of_nothing_or_one_plain_quote() -> None:
    with pytest.raises(QuerySyntaxError, match="no words"):
        interpret('"' * 10_000)
    assert read('"' * 10_001) == ('"', (), ())
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_PHRASES} quoted phrases"):
        interpret('"a" ' * 10_000)
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_EXCLUSIONS} excluded"):
        interpret("keep " + "-a " * 10_000)
    with pytest.raises(QuerySyntaxError, match="no words"):
        interpret("“”«»" * 2_500)
    assert read("- " * 5_000 + "x")[0].endswith("- x")


SYNTAX = st.lists(st.sampled_from([*'"“”«»-  abé4·\t\n', "ERR-4021", "数据"]), max_size=150).map("".join)


@given(SYNTAX)
def test_any_text_is_read_within_the_bounds_or_refused_with_a_syntax_error(query: str) -> None:
    try:
        interpreted = interpret(query)
    except QuerySyntaxError:
        return
    constraints = interpreted.constraints
    assert len(constraints.phrases) <= MAX_PHRASES and len(constraints.excluded) <= MAX_EXCLUSIONS
    assert all(0 < len(term) <= MAX_TERM_CHARACTERS for term in constraints.phrases + constraints.excluded)
    assert interpreted.text.strip() and len(interpreted.text) <= len(query)
    # The searched text holds every phrase, and no quote pair (only an odd quote out).
    assert all(phrase in interpreted.text for phrase in constraints.phrases)
    assert sum(character in QUOTES for character in interpreted.text) <= 1


def test_the_request_carries_the_reading_into_the_domains_query_and_refuses_past_a_bound() -> None:
    query = SearchRequest(query='"payment failed" -refund ERR-4021', mode=SearchMode.KEYWORD).to_query()
    assert query.text == "payment failed ERR-4021"
    assert query.constraints == QueryConstraints(phrases=("payment failed",), excluded=("refund",))
    assert InterpretedQueryView.of(query).model_dump(by_alias=True) == {
        "text": "payment failed ERR-4021",
        "phrases": ["payment failed"],
        "excluded": ["refund"],
        "identifiers": [{"text": "err-4021", "required": False}],
    }
    with pytest.raises(InvalidRequest, match="only exclusions"):
        SearchRequest(query="-refund").to_query()


def test_both_lanes_are_asked_to_hold_the_constraints_and_a_query_without_syntax_asks_nothing() -> None:
    lanes = FakeLanes(vector=[("v:0", 0.9)], keyword=[("v:0", 3.0)], bodies={"v:0": "the payment failed"})
    search = retrieval(lanes)
    read = interpret('"payment failed" -refund')
    search.search(caller("docs"), SearchQuery(text=read.text, constraints=read.constraints))
    assert lanes.constraints == [("vector", read.constraints), ("keyword", read.constraints)]
    lanes.constraints.clear()
    search.search(caller("docs"), SearchQuery(text="payment failed"))
    assert lanes.constraints == [("vector", QueryConstraints()), ("keyword", QueryConstraints())]
    assert not QueryConstraints() and QueryConstraints(excluded=("x",))
