"""The answer benchmark's bookkeeping (bench/answers.py) and the corpus's sentences: a share per stage that did
not add up, a subset that missed a bucket, or chunks without sentence ends would make its figures misleading."""

import numpy as np

from bench.answers import OUTSIDE, asked, stage_share
from bench.run import table
from bench.search_corpus import WORDS_PER_SENTENCE, make_corpus, make_queries
from shared.domain.chunking import sentence_spans


def test_stage_share_adds_up_to_the_total_and_counts_a_stage_that_did_not_run_as_zero() -> None:
    timings = [{"retrieve": 10.0, "extract": 80.0}, {"retrieve": 20.0}]
    share = stage_share(timings, totals=[100.0, 20.0])

    assert share["retrieve"] == {"mean_ms": 15.0, "median_ms_where_run": 15.0, "percent": 25.0}
    assert share["extract"] == {"mean_ms": 40.0, "median_ms_where_run": 80.0, "percent": 66.7}
    assert share[OUTSIDE]["percent"] == 8.3  # the 10 ms of the first ask no stage measured
    assert list(share) == ["retrieve", "extract", OUTSIDE]  # the pipeline's order


def test_the_subset_asked_spans_every_bucket_of_the_ordered_queries() -> None:
    corpus = make_corpus(3_000, np.random.default_rng(1))
    queries = make_queries(corpus, 30, np.random.default_rng(2))

    chosen = asked(queries, 6)

    assert len(chosen) == 6
    assert {query.bucket for query in chosen} == {query.bucket for query in queries}
    assert asked(queries, 100) == queries


def test_corpus_chunks_are_in_sentences_of_the_stated_lengths_in_every_language() -> None:
    corpus = make_corpus(500, np.random.default_rng(3))
    shortest, longest = WORDS_PER_SENTENCE
    seen = set()

    for chunk in range(0, 500, 19):  # 19 and the pattern's 25 are coprime: every language comes round
        text = corpus.text(chunk)
        words = [corpus.vocabulary[w] for w in corpus.words[corpus.offsets[chunk] : corpus.offsets[chunk + 1]]]
        seen.add(corpus.language(chunk))
        # The answer bench's sentences (an abbreviation's full stop, "no.", may join two of them).
        assert len(sentence_spans(text)) >= 2
        if corpus.language(chunk) == "zh":  # no spaces: each sentence is some of the words, run together, then 。
            assert text.endswith("。") and " " not in text
            assert text.replace("。", "") == "".join(words)
            continue
        lengths = [len(sentence.split()) for sentence in text.split(".")[:-1]]
        assert all(shortest <= length <= longest for length in lengths[:-1])
        assert text.replace(".", "").split() == words
    assert seen == {"en", "de", "es", "ru", "zh", "ar"}


def test_the_table_shows_the_baseline_ratio_and_the_note() -> None:
    figure = {
        "name": "answer p50",
        "value": 120.0,
        "unit": "ms",
        "baseline": 10.0,
        "ratio": 12.0,
        "data": {"runs": [120.0], "table_note": "stages: extract 90%"},
    }

    lines = table([figure]).splitlines()

    assert "(12.0x the baseline 10.000 ms)" in lines[1]
    assert lines[2].strip() == "stages: extract 90%"
