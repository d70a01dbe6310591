"""Whether quoted sentences answer the question (shared/domain/grounding/answerability.py): the kind of answer a
question asks for, its key terms, content-word coverage, and the fewest sentences an evidence-only answer quotes."""

import pytest

from shared.domain.answers import Evidence
from shared.domain.grounding import (
    AnswerType,
    Sentence,
    answering_sentences,
    asked_type,
    content_words,
    coverage,
    holds_type,
    in_retrieval_order,
    is_question,
    key_terms,
    missing,
    sentences_of,
)
from shared.domain.knowledge import ChunkLocation
from shared.domain.search import ChunkSnapshot


def piece(
    evidence_id: str, text: str, *, file_id: str = "f1", language: str | None = None, score: float = 1.0
) -> Evidence:
    return Evidence(
        evidence_id=evidence_id,
        snapshot=ChunkSnapshot(
            chunk_id=f"c-{evidence_id}",
            file_id=file_id,
            version_id=f"v-{file_id}",
            filename=f"{file_id}.txt",
            media_type="text/plain",
            collection_id="docs",
            location=ChunkLocation(),
            heading_path=(),
            body=text,
            language=language,
        ),
        score=score,
        vector_score=0.8,
        lexical_score=None,
    )


DANUBE = piece(
    "E1",
    "The Danube is the second-longest river in Europe. It flows for about 2,850 kilometres to the Black Sea. "
    "The Iron Gates gorge was dammed in 1972 for hydroelectric power.",
)
EIFFEL = piece("E2", "The Eiffel Tower was built by the company of Gustave Eiffel for the 1889 fair.", file_id="f2")
PIECES = {"E1": DANUBE, "E2": EIFFEL}


def scored(*pairs: tuple[Evidence, int, float]) -> list[tuple[Sentence, float]]:
    """(piece, sentence index, cosine) → candidates best first."""
    return [(sentences_of(evidence)[index], score) for evidence, index, score in pairs]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When was the Iron Gates gorge dammed?", AnswerType.TIME),
        ("In which year did the League meet?", AnswerType.TIME),
        ("How many species are known?", AnswerType.QUANTITY),
        ("How long is the Danube?", AnswerType.QUANTITY),
        ("What percentage of orders failed?", AnswerType.QUANTITY),
        ("Who first described tardigrades?", AnswerType.NAME),
        ("By whom was the stone carved?", AnswerType.NAME),
        ("What is the Danube?", None),
        ("Why did checkout fail?", None),
        ("Where does the Danube begin?", None),
    ],
)
def test_the_kind_of_answer_is_read_from_an_english_question_s_first_words(
    question: str, kind: AnswerType | None
) -> None:
    assert asked_type(question, "en") == kind
    assert asked_type(question, None) == kind


def test_no_kind_of_answer_is_read_from_another_language() -> None:
    # "Wann" is German's "when": the English rules do not read it, so nothing is required of the sentence.
    assert asked_type("Wann wurde das Eiserne Tor gestaut?", "de") is None
    assert asked_type("When was the gorge dammed?", "de") is None


def test_a_sentence_holds_a_kind_of_answer_beyond_the_question_s_own_words() -> None:
    assert holds_type("The gorge was dammed in 1972.", AnswerType.TIME, "When was the gorge dammed?")
    assert holds_type("It closed on 3 March.", AnswerType.TIME, "When did it close?")
    assert not holds_type("The gorge was dammed for power.", AnswerType.TIME, "When was the gorge dammed?")
    # A year the question names is not its answer.
    assert not holds_type("In 1996 the match was held.", AnswerType.TIME, "When after 1996 was the match held?")
    assert holds_type("About 1,300 species are known.", AnswerType.QUANTITY, "How many species are known?")
    assert holds_type("It has three levels.", AnswerType.QUANTITY, "How many levels does it have?")
    assert not holds_type("It has levels for visitors.", AnswerType.QUANTITY, "How many levels does it have?")
    assert holds_type("Johann Goeze described them.", AnswerType.NAME, "Who described tardigrades?")
    assert holds_type("It was found by French soldiers.", AnswerType.NAME, "Who found the stone?")
    # A sentence's first word is capitalised whatever it is.
    assert not holds_type("Soldiers found it.", AnswerType.NAME, "Who found the stone?")
    assert holds_type("About 1,900 checkout attempts failed.", AnswerType.QUANTITY, "How many attempts failed?")
    # "How many towns": a number of something else does not count them; a table row's number counts its header's.
    assert not holds_type("It ruled for three centuries.", AnswerType.QUANTITY, "How many towns belonged to it?")
    assert holds_type("Germany | 30", AnswerType.QUANTITY, "How many days of leave are there in Germany?")
    assert holds_type("The number of students is 5,000.", AnswerType.QUANTITY, "How many students are there?")
    # A capitalised stopword opening the sentence is not a name, nor is the question's own name.
    assert not holds_type("They were described by Tardigrades experts.", AnswerType.NAME, "Who studied Tardigrades?")


def test_key_terms_are_numbers_identifiers_and_in_english_names() -> None:
    assert key_terms("Which volcano in Iceland erupted basalt in 2021?", "en") == {"iceland", "2021"}
    assert key_terms("What was the root cause of ERR-4021?", "en") >= {"4021"}
    assert key_terms("Which officer of Napoleon's army found it?", "en") == {"napoleon"}
    # The first word is capitalised as every sentence's is; German capitalises every noun.
    assert key_terms("Tardigrades eat what?", "en") == frozenset()
    assert key_terms("Wie viele Tage Urlaub gibt es 2026?", "de") == {"2026"}
    assert key_terms("2026年的预算是多少\uff1f", "zh") == {"2026"}


def test_content_words_drop_stopwords_and_english_question_framing() -> None:
    assert content_words("How many days of annual leave do employees get?", "en") == {
        "days",
        "annual",
        "leave",
        "employees",
        "get",
    }


def test_coverage_matches_words_and_their_inflections() -> None:
    assert missing(["tardigrades", "eat"], "A tardigrade lives in moss.") == ["eat"]
    assert missing(["discovered"], "The discovery of radium.") == []
    assert coverage(frozenset({"density", "basalt"}), "Basalt is a volcanic rock.") == 0.5
    assert coverage(frozenset(), "anything") == 1.0


def test_one_sentence_is_quoted_when_it_clearly_answers() -> None:
    candidates = scored((DANUBE, 2, 0.70), (DANUBE, 0, 0.55), (EIFFEL, 0, 0.30))
    chosen = answering_sentences("When was the Iron Gates gorge dammed?", "en", candidates, PIECES, margin=0.05)
    assert [sentence.text for sentence, _ in chosen] == [
        "The Iron Gates gorge was dammed in 1972 for hydroelectric power."
    ]


def test_a_further_sentence_is_quoted_only_within_the_margin() -> None:
    candidates = scored((DANUBE, 0, 0.60), (DANUBE, 1, 0.58), (EIFFEL, 0, 0.40))
    chosen = answering_sentences("Tell me about the Danube river", "en", candidates, PIECES, margin=0.05)
    assert [score for _, score in chosen] == [0.60, 0.58]
    alone = answering_sentences("Tell me about the Danube river", "en", candidates, PIECES, margin=0.0)
    assert len(alone) == 1


def test_the_answering_sentence_holds_the_kind_of_answer_asked_for() -> None:
    # The best sentence names the river but not its length; the one that states a number answers.
    candidates = scored((DANUBE, 0, 0.72), (DANUBE, 1, 0.55))
    chosen = answering_sentences("How long is the Danube?", "en", candidates, PIECES, margin=0.05)
    assert chosen[0][0].text.startswith("It flows for about 2,850 kilometres")
    assert len(chosen) == 1


def test_a_question_whose_kind_of_answer_no_near_sentence_holds_is_not_answered() -> None:
    candidates = scored((DANUBE, 0, 0.57), (DANUBE, 1, 0.20))
    assert answering_sentences("How many bridges cross the Danube?", "en", candidates, PIECES, margin=0.05) == []


def test_a_question_naming_what_no_evidence_mentions_is_not_answered() -> None:
    candidates = scored((DANUBE, 2, 0.66))
    question = "Who built the first dam at the Iron Gates in 1850?"
    assert answering_sentences(question, "en", candidates, PIECES, margin=0.05) == []


def test_a_piece_holding_too_few_of_the_question_s_words_does_not_answer() -> None:
    candidates = scored((DANUBE, 0, 0.57))
    assert answering_sentences("What is the average depth of the Danube?", "en", candidates, PIECES, margin=1) == []


def test_another_language_is_not_refused_by_the_english_rules() -> None:
    german = piece("E1", "Die Donau fließt etwa 2.850 Kilometer weit. Sie mündet in das Schwarze Meer.", language="de")
    candidates = scored((german, 1, 0.9))
    # No English word of the question is in the piece, and the sentence states no number: still an answer.
    chosen = answering_sentences("Wie lang ist die Donau insgesamt?", "de", candidates, {"E1": german}, margin=0.05)
    assert [sentence.text for sentence, _ in chosen] == ["Sie mündet in das Schwarze Meer."]


def test_nothing_to_choose_from_is_no_answer() -> None:
    assert answering_sentences("How long is the Danube?", "en", [], PIECES, margin=0.05) == []


def test_a_question_asks_and_a_statement_states() -> None:
    assert is_question("How long is the Danube?", "en")
    assert is_question("how long is the danube", "en")  # a search box's question, lower case and unpunctuated
    assert is_question("Wie lang ist die Donau?", "de")
    assert not is_question("Wie lang die Donau ist", "de")
    assert not is_question("ALDH1 expression is associated with poorer prognosis in breast cancer.", "en")


def test_a_statement_is_judged_by_the_margin_alone() -> None:
    # A claim to check names what the evidence may call otherwise, and asks for no kind of answer.
    candidates = scored((DANUBE, 0, 0.57), (DANUBE, 1, 0.30))
    claim = "The Danube in Iceland flows 3,000 km."
    assert [score for _, score in answering_sentences(claim, "en", candidates, PIECES, margin=0.05)] == [0.57]


def test_the_retrieval_score_of_a_sentence_s_piece_breaks_near_ties() -> None:
    strong = piece("E1", "The gorge was dammed in 1972 for power.", score=1.0)
    weak = piece("E2", "The gorge was dammed in 1971 by a company.", file_id="f2", score=0.5)
    pieces = {"E1": strong, "E2": weak}
    candidates = [(sentences_of(weak)[0], 0.62), (sentences_of(strong)[0], 0.60)]
    ordered = in_retrieval_order(candidates, pieces, weight=0.2)
    assert [sentence.evidence_id for sentence, _ in ordered] == ["E1", "E2"]
    assert [score for _, score in ordered] == [0.60, 0.62]  # each keeps its own similarity
    assert in_retrieval_order(candidates, pieces, weight=0.0) == candidates


def test_a_question_of_two_parts_quotes_a_piece_for_each() -> None:
    leave = piece("E1", "Employees in Germany get thirty days of annual leave.")
    alarm = piece("E2", "An alarm fires thirty days before the certificate expires.", file_id="f2")
    pieces = {"E1": leave, "E2": alarm}
    candidates = scored((leave, 0, 0.62), (alarm, 0, 0.45))
    question = "How many days of annual leave do employees in Germany get, and when does the certificate alarm fire?"
    chosen = answering_sentences(question, "en", candidates, pieces, margin=0.01)
    assert [sentence.evidence_id for sentence, _ in chosen] == ["E1", "E2"]
    # One part alone: the other piece adds none of its words, so one sentence answers.
    alone = answering_sentences(
        "How many days of annual leave do employees in Germany get?", "en", candidates, pieces, margin=0.01
    )
    assert [sentence.evidence_id for sentence, _ in alone] == ["E1"]


def test_the_answer_may_be_a_piece_s_third_sentence_but_at_most_two_of_one_piece_are_quoted() -> None:
    article = piece(
        "E1",
        "Tardigrades are tiny animals. Tardigrades survive in a tun. "
        "The zoologist Johann Goeze first described them in 1773.",
    )
    candidates = scored((article, 0, 0.65), (article, 1, 0.62), (article, 2, 0.36))
    chosen = answering_sentences("Who first described tardigrades?", "en", candidates, {"E1": article}, margin=0.01)
    assert [sentence.text for sentence, _ in chosen] == ["The zoologist Johann Goeze first described them in 1773."]
    tied = scored((article, 0, 0.60), (article, 1, 0.60), (article, 2, 0.60))
    assert len(answering_sentences("Tell me about tardigrades", "en", tied, {"E1": article}, margin=0.01)) == 2


def test_a_code_with_digits_is_no_name_a_who_question_asks_for() -> None:
    question = "Who certified the pressure vessel and until when?"
    assert not holds_type(
        "The pressure vessel with serial number PV-40982 passed its hydrostatic test.", AnswerType.NAME, question
    )
    assert holds_type(
        "Inspector Marguerite Okonkwo certified the vessel for service until October 2028.", AnswerType.NAME, question
    )
