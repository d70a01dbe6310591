"""Languages in the domain: the text every analyser reads, codes, which analyser a language gets, and how a
document's chunks are given their languages."""

import pytest

from shared.adapters.language_detection import Py3LangidDetector
from shared.domain.grounding.extractive import lexical_similarity
from shared.domain.grounding.question import out_of_scope
from shared.domain.languages import (
    ANALYSERS,
    CJK,
    SIMPLE,
    LanguageGuess,
    UnknownLanguage,
    analyser_of,
    by_share,
    chunk_languages,
    cjk_terms,
    declared_language,
    keyword_text,
    language_code,
    text_search_configuration,
)
from shared.domain.search import query_terms
from shared.domain.stopwords import ENGLISH_STOPWORDS, stopwords_of
from shared.domain.text import sentence_spans
from shared.domain.titles import mentions, title_key
from tests.builders.languages import MIXED

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Lower case for every script, not only ASCII (the embedded server's C locale lower-cases ASCII alone).
        ("Договоры ДОГОВОР", "договоры договор"),
        ("Verträge ÜBER Straße", "verträge über straße"),
        ("Ο ΆΝΘΡΩΠΟΣ", "ο άνθρωπος"),
        # Non-ASCII punctuation separates words (in C every non-ASCII character would count as a letter).
        ("l’homme «Vertrag» “payment” — test", "l homme  vertrag   payment    test"),
        # ASCII is left to PostgreSQL's parser: identifiers stay whole.
        ("ERR-4021 v2.1 foo@bar.com", "err-4021 v2.1 foo@bar.com"),
        # Compatibility forms fold: full-width letters and digits, ligatures.
        ("ＥＲＲ－４０２１ ﬁle", "err-4021 file"),
        # Optional Arabic vowel marks and the tatweel go; the letters stay.
        ("الْعَرَبِيَّة والكتـــاب", "العربية والكتاب"),
        # A combining mark is part of its letter (Devanagari's vowel signs).
        ("किताबें", "किताबें"),
    ],
)
def test_keyword_text_folds_case_punctuation_and_marks_alike_for_every_server(text: str, expected: str) -> None:
    assert keyword_text(text) == expected


def test_chinese_japanese_and_korean_runs_become_overlapping_pairs() -> None:
    assert keyword_text("数据保护条例").split() == ["数据", "据保", "保护", "护条", "条例"]
    assert keyword_text("日本語のテキスト").split() == ["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"]
    assert keyword_text("한국어 텍스트").split() == ["한국", "국어", "텍스", "스트"]
    # A lone character is its own term; Latin text inside stays as it is; full-width punctuation separates runs.
    assert keyword_text("猫 ISO-9001认证。你好").split() == ["猫", "iso-9001", "认证", "你好"]
    assert cjk_terms("数据保护 and 猫") == ["数据", "据保", "保护", "猫"]


@pytest.mark.parametrize(
    ("language", "analyser"),
    [
        ("en", "english"),
        ("de", "german"),
        ("es", "spanish"),
        ("ru", "russian"),
        ("ar", "arabic"),
        ("nb", "norwegian"),
        ("zh", CJK),
        ("ja", CJK),
        ("ko", CJK),
        ("pl", SIMPLE),  # no Snowball configuration in PostgreSQL
        ("he", SIMPLE),
        (None, SIMPLE),
    ],
)
def test_each_language_has_its_analyser(language: str | None, analyser: str) -> None:
    assert analyser_of(language) == analyser
    assert analyser in ANALYSERS


def test_an_analyser_runs_a_postgresql_configuration_and_cjk_runs_simple() -> None:
    assert text_search_configuration("german") == "german"
    assert text_search_configuration(CJK) == "simple"
    with pytest.raises(ValueError, match="unknown analyser"):
        text_search_configuration("klingon")


@pytest.mark.parametrize(
    ("tag", "code"), [("de", "de"), ("DE", "de"), ("de-CH", "de"), ("pt_BR", "pt"), (" zh ", "zh")]
)
def test_a_language_tag_names_its_iso_639_1_code(tag: str, code: str) -> None:
    assert language_code(tag) == code


@pytest.mark.parametrize("tag", ["", "x", "xx", "deu", "German", "de-", "d e", "de\x00", "a" * 5000])
def test_anything_else_is_refused_with_the_fix(tag: str) -> None:
    with pytest.raises(UnknownLanguage, match="ISO 639-1 code such as en, de") as refused:
        language_code(tag)
    assert len(str(refused.value)) < 300  # a long value is not echoed whole


def test_the_upload_declares_first_then_a_metadata_value_that_names_a_language() -> None:
    assert declared_language("es", {"language": "de"}) == "es"
    assert declared_language(None, {"language": "de-AT"}) == "de"
    assert declared_language(None, {"language": "German"}) == "de"
    # The product's own values that name no language declare nothing; nor does a code Quire has no analyser for
    # (a product's "ts" is TypeScript, not Tsonga).
    assert declared_language(None, {"language": "legalese"}) is None
    assert declared_language(None, {"language": "ts"}) is None
    assert declared_language(None, {"language": "zh-Hant"}) == "zh"
    assert declared_language(None, {"language": ["de"]}) is None
    assert declared_language(None, {}) is None and declared_language(None, None) is None


class FakeDetector:
    """A named fake: answers from a table, for the assignment rules alone."""

    def __init__(self, answers: dict[str, LanguageGuess | None]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def detect(self, text: str) -> LanguageGuess | None:
        self.asked.append(text)
        return self.answers.get(text, LanguageGuess("en", 0.99))


def test_a_declared_language_is_every_chunks_and_nothing_is_detected() -> None:
    detector = FakeDetector({})
    assert chunk_languages(["eins", "two"], detector.detect, declared="de") == ["de", "de"]
    assert detector.asked == []


def test_a_vague_or_short_chunk_takes_its_documents_language() -> None:
    long_german = "Der Vertrag wird auf unbestimmte Zeit geschlossen und kann gekündigt werden."
    detector = FakeDetector(
        {
            long_german: LanguageGuess("de", 0.99),
            "Seite 4": LanguageGuess("de", 0.99),  # sure, but too few letters to say
            "Tabelle 7 Zeile 3 Spalte 9 Summe": LanguageGuess("nl", 0.4),  # long enough, not sure
        }
    )
    # The document is read from its chunks spread over it, 500 characters of each.
    detector.answers["\n".join([long_german, "Seite 4", "Tabelle 7 Zeile 3 Spalte 9 Summe"])] = LanguageGuess("de", 0.9)
    assert chunk_languages([long_german, "Seite 4", "Tabelle 7 Zeile 3 Spalte 9 Summe"], detector.detect) == [
        "de",
        "de",
        "de",
    ]


def test_no_language_is_invented_when_nothing_is_clear() -> None:
    detector = FakeDetector({"4021 / 7": None, "": None})
    assert chunk_languages(["4021 / 7"], detector.detect) == [None]
    assert chunk_languages([], detector.detect) == []


def test_a_version_lists_its_languages_by_share() -> None:
    assert by_share({"en": 3, "de": 5, "fr": 3}) == ["de", "en", "fr"]
    assert len(by_share({f"{chr(97 + i // 26)}{chr(97 + i % 26)}": 1 for i in range(100)})) == 32


def test_the_real_detector_keeps_each_part_of_a_mixed_document_in_its_language() -> None:
    languages = chunk_languages(list(MIXED.values()), Py3LangidDetector().detect)
    assert languages == list(MIXED)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Wie lange habe ich Zeit, die Rechnung zu bezahlen?", "de"),
        ("¿Cuánto tiempo tengo para pagar la factura?", "es"),
        ("Какой срок оплаты счета?", "ru"),
        ("数据保护条例是什么", "zh"),  # Wu and Cantonese, which the model also offers, count for Chinese
        ("ما هي مدة الدفع", "ar"),  # and Egyptian or Moroccan Arabic for Arabic
    ],
)
def test_the_real_detector_names_a_questions_language(text: str, language: str) -> None:
    guess = Py3LangidDetector().detect(text)
    assert guess is not None and guess.language == language and guess.confidence > 0.6


@pytest.mark.parametrize("text", ["", "   ", "4021 / 7.5 %", "—→★"])
def test_the_real_detector_names_no_language_for_text_without_letters(text: str) -> None:
    assert Py3LangidDetector().detect(text) is None


def test_the_real_detector_bounds_what_it_reads() -> None:
    # 2.4 MB of German after 4,000 characters of English: only the opening is read, so it is English.
    opening = ("The contract is valid. " * 200)[:4000]
    guess = Py3LangidDetector().detect(opening + "Der Vertrag ist gültig. " * 100_000)
    assert guess is not None and guess.language == "en"


def test_a_document_s_language_is_read_from_chunks_spread_over_it() -> None:
    english_abstract = "This paper studies the effects of rent control on housing supply in large cities."
    german = "Die Untersuchung zeigt, dass die Mietpreisbremse das Angebot an Wohnungen kaum verändert hat."
    texts = [english_abstract] + [german] * 15 + ["Seite 4"]
    assert chunk_languages(texts, Py3LangidDetector().detect)[-1] == "de"


def test_sentences_end_at_every_script_s_terminals() -> None:
    chinese = "数据保护条例适用于所有公司。违反者将被罚款！你知道吗？「是的。」好"
    assert [chinese[a:b] for a, b in sentence_spans(chinese)] == [
        "数据保护条例适用于所有公司。",
        "违反者将被罚款！",
        "你知道吗？",
        "「是的。」",
        "好",
    ]
    mixed = "هل تعرف الجواب؟ نعم أعرفه. शुरू हुआ। फिर खत्म हुआ।"
    expected = ["هل تعرف الجواب؟", "نعم أعرفه.", "शुरू हुआ।", "फिर खत्म हुआ।"]
    assert [mixed[a:b] for a, b in sentence_spans(mixed)] == expected
    # An outline's stricter rule (a capital next) lets a caseless script's sentence start too.
    assert [mixed[a:b] for a, b in sentence_spans(mixed, only_before_capitals=True)] == expected
    # Latin's rules stand: no break inside 3.14 or after e.g.
    latin = "E.g. this is fine. Pi is 3.14 here."
    assert [latin[a:b] for a, b in sentence_spans(latin)] == ["E.g. this is fine.", "Pi is 3.14 here."]


def test_a_title_in_a_script_without_spaces_is_named_inside_a_question() -> None:
    key = title_key("数据保护条例")
    assert key == "数据 据保 保护 护条 条例"
    assert [mention.key for mention in mentions("数据保护条例适用于哪些公司？", [key])] == [key]
    assert mentions("数据安全法适用于哪些公司？", [key]) == []
    assert [
        m.key for m in mentions("Was regelt die Datenschutz-Grundverordnung?", ["datenschutz grundverordnung"])
    ] == ["datenschutz grundverordnung"]


def test_query_words_and_a_sentence_s_overlap_work_in_every_script() -> None:
    assert {"数据", "据保", "保护"} <= query_terms("数据保护是什么")
    assert query_terms("ДОГОВОР аренды") == {"договор", "аренды"}
    assert lexical_similarity("数据保护条例", "本条例规定了数据保护的原则。") > 0.5
    assert lexical_similarity("数据保护条例", "今天天气很好。") == 0
    # A vowel sign or virama is a combining mark, part of its word (as the keyword lane's parser keeps it).
    assert query_terms("दस्तावेज़ कहाँ है?") == {"दस्तावेज़", "कहाँ", "है"}
    assert query_terms("ஆவணம் எங்கே?") == {"ஆவணம்", "எங்கே"}
    assert lexical_similarity("दस्तावेज़ कहाँ है", "कहानी दस्ताने") == 0  # no word shared, only letters


@pytest.mark.parametrize(
    "question",
    [
        "Wie lange ist die Kündigungsfrist?",
        "¿Cuál es el plazo de preaviso?",
        "Какой срок уведомления?",
        "通知期限是多久？",
        "ما هي مدة الإشعار؟",
        "解約の通知期間は？",
    ],
)
def test_a_question_is_never_out_of_scope_for_its_language(question: str) -> None:
    assert not out_of_scope(question)


def test_each_language_s_stopwords_are_snowball_s_folded_as_words_are() -> None:
    german = stopwords_of("de")
    assert {"die", "für", "und", "the"} <= german  # its own list, and English's as every question's
    assert "kündigungsfrist" not in german
    assert {"и", "что"} <= stopwords_of("ru") and {"el", "para"} <= stopwords_of("es")
    assert stopwords_of("zh") == stopwords_of(None) == ENGLISH_STOPWORDS  # no list: English's only
    # Words with the question's language's stopwords off: "war" is a stopword in German only.
    assert query_terms("Wie lang war die Kündigungsfrist?", "de") == {"lang", "kündigungsfrist"}
    assert "war" in query_terms("Which war ended in 1918?")
    german_question = "Wie lang ist die Kündigungsfrist für die Wohnung?"
    answer = "Die Kündigungsfrist für die Wohnung beträgt drei Monate."
    other = "Die Kündigung ist schriftlich und für den Vermieter."
    assert lexical_similarity(german_question, other, "de") == 0  # only stopwords in common
    assert lexical_similarity(german_question, answer, "de") == 2 / 3
    assert lexical_similarity(german_question, other) > 0.3  # English's stopwords alone would have kept it
    # Every listed stopword is one word as words are counted, so it can match one (Nepali's are whole words).
    assert query_terms("अक्सर यो कागज", "ne") == {"कागज"}
