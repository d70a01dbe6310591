"""The search benchmark's mixed-language corpus (bench/search_corpus.py): each chunk in the language a fixed pattern
of its index gives, written in that language's script, without moving any vector or query the English corpus drew,
and the summary of the keyword lane's plan the bench reports (bench/search.py)."""

import re
import unicodedata

import numpy as np
import pytest

from bench.search import keyword_plan_summary
from bench.search_corpus import (
    ENGLISH_ONLY,
    LANGUAGE_PATTERN,
    LANGUAGES,
    VOCABULARY,
    Corpus,
    make_corpus,
    make_queries,
)
from shared.domain.languages import analyser_of, keyword_text

SCRIPTS = {
    "en": re.compile(r"[a-z]+"),
    "de": re.compile(r"[a-zA-ZäöüÄÖÜß]+"),
    "es": re.compile(r"[a-zñáéíó]+"),
    "ru": re.compile(r"[\u0400-\u04ff]+"),
    "ar": re.compile(r"[\u0600-\u06ff]+"),
    "zh": re.compile(r"[\u4e00-\u9fff]+"),
}


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return make_corpus(2_500, np.random.default_rng(7))


def test_the_languages_follow_the_pattern_with_the_stated_shares_and_every_sizeable_tenant_holds_all(
    corpus: Corpus,
) -> None:
    assert corpus.language_shares() == {"en": 0.4, "de": 0.12, "es": 0.12, "ru": 0.12, "zh": 0.12, "ar": 0.12}
    assert [corpus.language(i) for i in range(50)] == list(LANGUAGE_PATTERN) * 2
    assert len({analyser_of(code) for code in LANGUAGES}) == len(LANGUAGES)  # six analysers, one each
    for rank in range(len(corpus.sizes)):
        own = corpus.language_of[corpus.tenant_of == rank]
        if len(own) >= len(LANGUAGE_PATTERN):
            assert set(own.tolist()) == set(range(len(LANGUAGES)))


def test_each_chunk_is_written_in_its_languages_script(corpus: Corpus) -> None:
    for chunk in range(len(LANGUAGE_PATTERN)):
        language = corpus.language(chunk)
        text = corpus.text(chunk)
        ids = corpus.words[corpus.offsets[chunk] : corpus.offsets[chunk + 1]]
        words = [corpus.vocabulary[w] for w in ids]
        assert set((ids // VOCABULARY).tolist()) == {LANGUAGES.index(language)}  # its language's block of ids
        assert all(SCRIPTS[language].fullmatch(word) for word in words), (language, words[:10])
        if language == "zh":
            assert " " not in text and text.endswith("。")
            assert text.replace("。", "") == "".join(words)
        else:
            assert text.replace(".", "").split() == words
    german = set(corpus.vocabulary[VOCABULARY : 2 * VOCABULARY])
    spanish = set(corpus.vocabulary[2 * VOCABULARY : 3 * VOCABULARY])
    for letter in "äöüß":
        assert any(letter in word for word in german)
    for letter in "ñáé":
        assert any(letter in word for word in spanish)


def test_chinese_text_reaches_the_keyword_lane_as_character_pairs(corpus: Corpus) -> None:
    chunk = LANGUAGE_PATTERN.index("zh")
    terms = keyword_text(corpus.text(chunk)).split()

    assert terms and all(len(term) <= 2 for term in terms)
    assert all(unicodedata.name(character).startswith("CJK UNIFIED IDEOGRAPH") for character in "".join(terms))


def test_the_languages_move_no_vector_and_no_query_of_the_english_corpus() -> None:
    mixed = make_corpus(2_000, np.random.default_rng(11))
    english = make_corpus(2_000, np.random.default_rng(11), languages=ENGLISH_ONLY)
    mixed_queries = make_queries(mixed, 40, np.random.default_rng(12))
    english_queries = make_queries(english, 40, np.random.default_rng(12))

    assert np.array_equal(mixed.vectors, english.vectors)
    assert np.array_equal(mixed.words % VOCABULARY, english.words)  # the same Zipf ranks, in another vocabulary
    assert english.language_shares() == {"en": 1.0}
    assert [(q.tenant, q.wanted, q.vector) for q in mixed_queries] == [
        (q.tenant, q.wanted, q.vector) for q in english_queries
    ]
    assert [q.text for q in mixed_queries if q.language == "en"] == [
        e.text for q, e in zip(mixed_queries, english_queries, strict=True) if q.language == "en"
    ]
    assert {q.language for q in mixed_queries} == set(LANGUAGES)


def test_a_query_is_in_the_language_of_the_chunk_it_was_drawn_near(corpus: Corpus) -> None:
    queries = make_queries(corpus, 60, np.random.default_rng(8))

    for query in queries:
        assert query.language is not None
        if query.language == "zh":
            assert " " not in query.text and SCRIPTS["zh"].fullmatch(query.text)
        else:
            assert all(SCRIPTS[query.language].fullmatch(word) for word in query.text.split()), query.text


def test_a_language_without_a_vocabulary_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"no vocabulary for \['fr'\].*'en', 'de'"):
        make_corpus(100, np.random.default_rng(1), languages=("en", "fr"))


def test_the_keyword_plan_summary_names_a_sequential_scan_and_each_index_read() -> None:
    plan = {
        "Execution Time": 1.234,
        "Plan": {
            "Node Type": "Limit",
            "Plans": [
                {
                    "Node Type": "Index Scan",
                    "Relation Name": "keyword_postings",
                    "Index Name": "keyword_postings_pkey",
                    "Index Cond": "(term = w.term)",
                    "Actual Loops": 12,
                    "Actual Rows": 40.5,
                },
                {"Node Type": "Seq Scan", "Relation Name": "keyword_terms", "Actual Loops": 1, "Actual Rows": 9.0},
                {"Node Type": "Function Scan", "Function Name": "unnest"},
            ],
        },
    }

    summary = keyword_plan_summary(plan)

    assert summary["execution_ms"] == 1.23
    assert summary["sequential_scans"] == ["keyword_terms"]
    assert [(read["table"], read["index"], read["loops"]) for read in summary["reads"]] == [
        ("keyword_postings", "keyword_postings_pkey", 12),
        ("keyword_terms", None, 1),
    ]
