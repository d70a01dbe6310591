"""The keyword lane in every language, on real PostgreSQL as the application role: each chunk's analyser (stems,
bigrams, identifiers kept whole), statistics counted per analyser, the query read by every analyser the collections
hold, a mixed-language document through the real detector, and a query in a script no chunk uses."""

import math
import uuid
from collections.abc import Sequence

import pytest

from shared.adapters.language_detection import Py3LangidDetector
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.domain.knowledge import ChunkDraft
from shared.domain.languages import analyser_of, keyword_text, text_search_configuration
from shared.domain.search import SearchFilters
from shared.local.chunk_rows import paragraph_drafts
from tests.builders.languages import MIXED
from tests.integration.knowledge_rows import index_drafts

NO_FILTERS = SearchFilters()

# Per language: a chunk, a query that names it only by another form of its words (or, for CJK, by a part of a run),
# and the terms its analyser must produce from the query.
CASES = {
    "en": ("Payments failed at checkout after the certificate expired.", "payment failing", {"payment", "fail"}),
    "de": (
        "Die Verträge wurden von beiden Vertragsparteien unterzeichnet.",
        "Vertrag unterzeichnen",
        {"vertrag", "unterzeichn"},
    ),
    "es": ("Las facturas pendientes se pagarán en diciembre.", "factura pagar", {"factur", "pag"}),
    "fr": ("Les locataires doivent signaler les dommages.", "locataire signale", {"locatair", "signal"}),
    "ru": ("Договоры аренды были подписаны сторонами.", "договор подписать", {"договор", "подписа"}),
    "ar": ("وقع الطرفان على العقود الجديدة.", "العقد الجديد", {"عقد", "جديد"}),
    "zh": ("数据保护条例适用于所有公司。", "保护条例", {"保护", "护条", "条例"}),
    "ja": ("個人情報保護法が改正されました。", "情報保護", {"情報", "報保", "保護"}),
    "ko": ("개인정보 보호법이 개정되었습니다.", "보호법", {"보호", "호법"}),
    "pl": ("Umowa najmu została podpisana.", "umowa najmu", {"umowa", "najmu"}),  # no stemmer: as spelled
}


def tenant() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def drafts_in(texts: Sequence[str], languages: Sequence[str | None]) -> list[ChunkDraft]:
    return [
        draft.model_copy(update={"language": language})
        for draft, language in zip(paragraph_drafts(texts), languages, strict=True)
    ]


@pytest.mark.parametrize("language", sorted(CASES))
def test_each_language_s_analyser_stems_or_segments_its_words(owner_connection, language: str) -> None:  # type: ignore[no-untyped-def]
    _, query, terms = CASES[language]
    configuration = text_search_configuration(analyser_of(language))
    lexemes = {
        row[0]
        for row in owner_connection.execute(
            "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, %s))", (configuration, keyword_text(query))
        )
    }
    assert lexemes == terms


@pytest.mark.parametrize("language", sorted(CASES))
def test_identifiers_stay_whole_in_every_analyser(owner_connection, language: str) -> None:  # type: ignore[no-untyped-def]
    configuration = text_search_configuration(analyser_of(language))
    text = keyword_text("ERR-4021 v2.1 ops@example.com")
    lexemes = {
        row[0]
        for row in owner_connection.execute(
            "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, %s))", (configuration, text)
        )
    }
    # ERR-4021 is err and -4021 (as ADR 0009 measured), both kept as they are: no stemmer touches a digit.
    assert {"err", "-4021", "v2.1", "ops@example.com"} <= lexemes


def test_a_query_finds_each_language_s_chunk_by_another_form_of_its_words(app_database: Database) -> None:
    acme = tenant()
    texts = [text for text, _, _ in CASES.values()]
    _, version = index_drafts(
        app_database, acme, "docs", drafts_in(texts, list(CASES)), filename="mixed.txt", media_type="text/plain"
    )
    index = PostgresKnowledgeIndex(app_database)
    for ordinal, (language, (_, query, _)) in enumerate(CASES.items()):
        hits = index.search(acme, frozenset({"docs"}), query, limit=5, filters=NO_FILTERS, k1=0.9, b=0.6)
        assert hits and hits[0].chunk_id == f"{version}:{ordinal}", (language, query, hits)


def test_an_identifier_finds_chunks_in_every_language(app_database: Database) -> None:
    acme = tenant()
    texts = [
        "Der Fehler ERR-4021 tritt beim Bezahlen auf.",
        "The error ERR-4021 appears at checkout.",
        "支付时出现错误 ERR-4021。",
        "Ошибка ERR-4021 возникает при оплате.",
        "Nothing to see here.",
    ]
    _, version = index_drafts(
        app_database,
        acme,
        "docs",
        drafts_in(texts, ["de", "en", "zh", "ru", "en"]),
        filename="errors.txt",
        media_type="text/plain",
    )
    hits = PostgresKnowledgeIndex(app_database).search(
        acme, frozenset({"docs"}), "ERR-4021", limit=10, filters=NO_FILTERS, k1=0.9, b=0.6
    )
    assert {hit.chunk_id for hit in hits} == {f"{version}:{ordinal}" for ordinal in range(4)}


def test_statistics_are_counted_among_the_chunks_of_one_analyser(app_database: Database, owner_connection) -> None:  # type: ignore[no-untyped-def]
    acme = tenant()
    german = ["Vertrag Miete Wohnung", "Vertrag Kündigung", "Miete Nebenkosten Heizung Wasser"]
    english = ["contract rent", "rent deposit", "deposit refund", "refund policy", "policy contract"]
    index_drafts(
        app_database,
        acme,
        "docs",
        drafts_in(german + english, ["de"] * 3 + ["en"] * 5),
        filename="both.txt",
        media_type="text/plain",
    )
    rows = owner_connection.execute(
        "SELECT analyser, chunk_count, total_length FROM keyword_collections WHERE tenant_id = %s ORDER BY 1", (acme,)
    ).fetchall()
    assert rows == [("english", 5, 10), ("german", 3, 9)]

    # "vertrag" is in 2 of the 3 German chunks: its IDF is German's, not diluted by the five English chunks.
    hits = PostgresKnowledgeIndex(app_database).search(
        acme, frozenset({"docs"}), "Vertrag", limit=10, filters=NO_FILTERS, k1=0.9, b=0.6
    )
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    average = 9 / 3
    expected = {length: idf * (1 * 1.9) / (1 + 0.9 * (1 - 0.6 + 0.6 * length / average)) for length in (3, 2)}
    assert [round(hit.score, 9) for hit in hits] == [round(expected[2], 9), round(expected[3], 9)]


def test_a_query_in_a_script_no_chunk_uses_matches_nothing(app_database: Database) -> None:
    acme = tenant()
    index_drafts(
        app_database,
        acme,
        "docs",
        drafts_in([text for text, _, _ in CASES.values()], list(CASES)),
        filename="mixed.txt",
        media_type="text/plain",
    )
    index = PostgresKnowledgeIndex(app_database)
    for query in ("ქართული ენა", "ภาษาไทย", "עברית", "ꯃꯤꯇꯩ"):
        assert index.search(acme, frozenset({"docs"}), query, limit=5, filters=NO_FILTERS, k1=0.9, b=0.6) == []


def test_a_mixed_document_keeps_each_part_s_language_and_each_is_found_in_its_own(app_database: Database) -> None:
    acme = tenant()
    languages = Py3LangidDetector()
    drafts = paragraph_drafts(list(MIXED.values()))
    found = [languages.detect(draft.text) for draft in drafts]
    drafts_with = drafts_in(list(MIXED.values()), [guess.language if guess else None for guess in found])
    _, version = index_drafts(app_database, acme, "docs", drafts_with, filename="lease.txt", media_type="text/plain")
    index = PostgresKnowledgeIndex(app_database)
    stored = index.snapshots(acme, frozenset({"docs"}), [f"{version}:{n}" for n in range(len(MIXED))])
    assert sorted((snapshot.chunk_id, snapshot.language) for snapshot in stored) == sorted(
        (f"{version}:{n}", language) for n, language in enumerate(MIXED)
    )
    for query, ordinal in (("Schäden melden", 0), ("повреждения", 3), ("报告损坏", 4), ("الشقة", 5)):
        hits = index.search(acme, frozenset({"docs"}), query, limit=3, filters=NO_FILTERS, k1=0.9, b=0.6)
        assert hits and hits[0].chunk_id == f"{version}:{ordinal}", (query, hits)
