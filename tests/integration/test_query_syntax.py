"""Query syntax on the real database (docs/search.md#query-syntax): a quoted phrase keeps only the chunks holding its
words in order (the same words apart do not match), in every mode and in both paths of the vector lane; a leading
-word or -"phrase" keeps out the chunks holding it; a quoted identifier is required; the title lane adds no named
document's chunk without the phrase; and the constraint never reaches past the caller's tenant and collections
(a property over random phrases against a plain Python reading of the same words). Through POST /v1/search: the
response says how the query was read, and a query past a bound is a 400 naming it."""

import random
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.adapters.postgres import query_constraints, vector_lane
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.keyword_lane import PostgresKeywordIndex
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex, PostgresKnowledgeStore
from shared.adapters.postgres.title_lane import PostgresTitleIndex
from shared.adapters.postgres.vector_lane import PostgresVectorIndex
from shared.domain.auth import Role, with_role
from shared.domain.capabilities import CapabilityStatus
from shared.domain.query_constraints import MAX_PHRASES, QueryConstraints
from shared.domain.query_syntax import interpret
from shared.domain.search import Found, RetrievalTuning, SearchFilters, SearchMode, SearchQuery, words_of
from shared.domain.similarity import MINILM_SCALE
from shared.domain.usage import Usage
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.retrieval import Retrieval
from tests.integration.api_steps import indexed, search
from tests.integration.conftest import MigratedDatabase
from tests.integration.files_stack import Stack
from tests.integration.knowledge_rows import DIMENSION, FAKE_MODEL, index_texts, unit_vector

QUERY_VECTOR = unit_vector((0, 1.0))
NEAR = unit_vector((0, 1.0), (1, 0.1))  # decoys: nearer the query than any phrase holder
FAR = unit_vector((0, 1.0), (1, 0.6))  # still above the semantic floor

# English chunks (stemmed by `english`) and chunks of no known language (read by `simple`, unstemmed), each its own
# file so that fusion per document keeps them apart.
ENGLISH = {
    "held": ("The payment failed at checkout after the card was declined.", FAR),
    "held_stemmed": ("Customers saw payments failing all morning.", FAR),
    "reversed": ("The failed card payment was retried at checkout.", NEAR),
    "apart": ("A payment later failed for a second customer.", NEAR),
    "across_stopword": ("The payment has failed twice.", NEAR),
    "refund": ("The refund for the payment was issued after checkout.", NEAR),
    "err_4021": ("ERR-4021 means the certificate on the load balancer expired.", FAR),
    "err_4022": ("ERR-4022 means the certificate store is full.", NEAR),
    "err_40211": ("ERR-40211 is logged when the certificate is revoked.", NEAR),
}
UNKNOWN = {
    "simple_held": ("payment failed in the batch job", FAR),
    "simple_stemmed": ("payments failing in the nightly batch", NEAR),
}
PHRASE_HOLDERS = {"held", "held_stemmed", "simple_held"}


class FixedQueryEmbedder:
    """A fake embedder (named as one): every query is QUERY_VECTOR, and what it was asked to embed is kept."""

    languages: frozenset[str] | None = None
    similarity_scale = MINILM_SCALE
    model_id = FAKE_MODEL
    dimension = DIMENSION
    max_tokens = 512

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready(FAKE_MODEL)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return [list(QUERY_VECTOR) for _ in texts]

    def usage(self, tokens: int) -> Usage:
        return Usage(provider="fake", operation="fake:embed", model=FAKE_MODEL, priced=False, input_tokens=tokens)

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)


class Corpus:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.tenant = f"qs{uuid.uuid4().hex[:8]}"
        self.name_of: dict[str, str] = {}  # chunk id -> name
        for languages, texts in ((["en"], ENGLISH), ([None], UNKNOWN)):
            for name, (text, vector) in texts.items():
                _, version = index_texts(
                    database, self.tenant, "docs", [text], vectors=[vector], filename=f"{name}.txt", languages=languages
                )
                self.name_of[f"{version}:0"] = name
        # Another collection of the tenant and another tenant hold the phrase too, nearest the query of all.
        index_texts(database, self.tenant, "hr", ["The payment failed for the hr payroll."], vectors=[QUERY_VECTOR])
        index_texts(database, f"{self.tenant}x", "docs", ["The payment failed abroad."], vectors=[QUERY_VECTOR])
        self.embedder = FixedQueryEmbedder()
        self.retrieval = Retrieval(
            authorization=ClaimsAuthorizationPolicy(),
            knowledge=PostgresKnowledgeStore(database),
            vectors=PostgresVectorIndex(database),
            keywords=PostgresKeywordIndex(database),
            embedder=self.embedder,
            tuning=RetrievalTuning(fused_floor=0.0),
            titles=PostgresTitleIndex(database),
        )
        self.principal = with_role(self.tenant, "ann", frozenset({"docs"}), Role.READ)

    def names(self, typed: str, mode: SearchMode = SearchMode.HYBRID, limit: int = 50) -> list[str]:
        """The names of the hits of `typed`, read as a query's syntax, in order."""
        read = interpret(typed)
        query = SearchQuery(text=read.text, constraints=read.constraints, mode=mode, limit=limit)
        outcome = self.retrieval.search(self.principal, query)
        hits = outcome.hits if isinstance(outcome, Found) else ()
        return [self.name_of.get(hit.chunk_id, f"foreign {hit.citation.filename}") for hit in hits]


@pytest.fixture(scope="module")
def module_database(migrated_database: MigratedDatabase) -> Iterator[Database]:
    database = Database(migrated_database.app_url, max_size=2)
    yield database
    database.close()


@pytest.fixture(scope="module")
def corpus(module_database: Database) -> Corpus:
    return Corpus(module_database)


@pytest.mark.parametrize("mode", list(SearchMode))
def test_a_quoted_phrase_keeps_only_chunks_holding_its_words_in_order(corpus: Corpus, mode: SearchMode) -> None:
    names = corpus.names('"payment failed"', mode)

    # Stemmed where the chunk's language has a stemmer ("payments failing" in English), as typed where it has none.
    assert set(names) == PHRASE_HOLDERS, names
    # The same words unquoted find the chunks holding them apart, reversed, or across a stopword.
    unquoted = set(corpus.names("payment failed", mode))
    assert "reversed" in unquoted and "apart" in unquoted and "across_stopword" in unquoted


def test_the_semantic_lane_embeds_the_query_without_its_syntax(corpus: Corpus) -> None:
    corpus.embedder.embedded.clear()
    corpus.names('“payment failed” checkout -refund -"card declined"', SearchMode.SEMANTIC)
    assert corpus.embedder.embedded == ["payment failed checkout"]


def test_a_leading_minus_word_or_phrase_keeps_out_every_chunk_that_holds_it(corpus: Corpus) -> None:
    keyword = set(corpus.names("payment -refund", SearchMode.KEYWORD))
    # Every chunk holding "payment" as its analyser reads it, but the refund: simple reads "payments" as is.
    assert keyword == {"held", "held_stemmed", "reversed", "apart", "across_stopword", "simple_held"}
    for mode in SearchMode:
        assert "refund" not in corpus.names("payment -refund", mode)
        assert "refund" in corpus.names("payment refund", mode)
    assert set(corpus.names('payment -"payment failed"', SearchMode.KEYWORD)) == {
        "reversed",
        "apart",
        "across_stopword",
        "refund",
    }
    # A hyphen inside a word is no exclusion.
    assert interpret("e-mail ERR-4021").constraints == QueryConstraints()


def test_a_quoted_identifier_is_required_and_an_unquoted_one_only_ranks(corpus: Corpus) -> None:
    unquoted = corpus.names("ERR-4021 certificate", SearchMode.KEYWORD)
    assert unquoted[0] == "err_4021" and {"err_4022", "err_40211"} <= set(unquoted)
    for mode in SearchMode:
        assert corpus.names('"ERR-4021" certificate', mode) == ["err_4021"], mode
        assert corpus.names('"err-4021"', mode) == ["err_4021"], mode


def test_both_paths_of_the_vector_lane_fill_the_limit_with_phrase_holders_past_nearer_chunks(
    corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = PostgresVectorIndex(corpus.database)
    constraints = interpret('"payment failed"').constraints
    exact_statements: list[str] = []

    def recorded(*args: Any) -> str:
        exact_statements.append(query_constraints.phrase_exact_query(*args))
        return exact_statements[-1]

    monkeypatch.setattr(vector_lane, "phrase_exact_query", recorded)

    def nearest(limit: int) -> set[str]:
        hits = vectors.nearest(
            corpus.tenant,
            frozenset({"docs"}),
            QUERY_VECTOR,
            embedding_model=FAKE_MODEL,
            limit=limit,
            filters=SearchFilters(),
            constraints=constraints,
        )
        return {corpus.name_of[hit.chunk_id] for hit in hits}

    # Without the phrase, the three nearest are decoys; with it, the three holders (the farthest of all).
    unconstrained = vectors.nearest(
        corpus.tenant, frozenset({"docs"}), QUERY_VECTOR, embedding_model=FAKE_MODEL, limit=3, filters=SearchFilters()
    )
    assert not {corpus.name_of[hit.chunk_id] for hit in unconstrained} & PHRASE_HOLDERS
    assert nearest(3) == PHRASE_HOLDERS and len(exact_statements) == 1  # few hold it: from the postings
    monkeypatch.setattr(vector_lane, "EXACT_SCAN_ROWS", -1)
    assert nearest(3) == PHRASE_HOLDERS and len(exact_statements) == 1  # the graph scan, the phrase inside it
    assert nearest(2) < PHRASE_HOLDERS


def test_the_title_lane_adds_no_chunk_of_a_named_document_without_the_phrase(corpus: Corpus) -> None:
    titles = PostgresTitleIndex(corpus.database)
    refund = next(chunk_id for chunk_id, name in corpus.name_of.items() if name == "refund")

    def added(constraints: QueryConstraints) -> list[str]:
        chunks = titles.direct_chunks(
            corpus.tenant,
            frozenset({"docs"}),
            [refund.split(":")[0]],
            candidates=[],
            embedding=QUERY_VECTOR,
            embedding_model=FAKE_MODEL,
            per_document=3,
            constraints=constraints,
        )
        return [chunk.chunk_id for chunk in chunks]

    # "refund" names refund.txt, none of whose chunks the lanes found: its chunk would join, but lacks the phrase.
    assert added(QueryConstraints()) == [refund]
    assert added(interpret('"payment failed"').constraints) == []
    assert "refund" not in corpus.names('refund "payment failed"')
    held = corpus.names('held "payment failed"')
    assert held[0] == "held" and set(held) == PHRASE_HOLDERS


def test_nothing_found_under_a_phrase_says_so(corpus: Corpus) -> None:
    read = interpret('"payment declined at noon"')
    outcome = corpus.retrieval.search(
        corpus.principal, SearchQuery(text=read.text, constraints=read.constraints, mode=SearchMode.KEYWORD)
    )
    assert not isinstance(outcome, Found)
    assert outcome.message == (
        "Nothing in your collections matches that search with its quoted phrases and without its excluded words."
    )


# --- isolation, as a property ----------------------------------------------------------------------------------

WORDS = ["invoice", "budget", "outage", "renewal", "ERR-4021", "q3-2026", "contract", "alpha", "delta", "audit"]
TENANTS = ["qsi-a", "qsi-b"]
COLLECTIONS = ["docs", "hr", "eng"]


def _vector(seed: int) -> tuple[float, ...]:
    generator = random.Random(seed)
    raw = [generator.gauss(0, 1) for _ in range(DIMENSION)]
    norm = sum(value * value for value in raw) ** 0.5
    return tuple(value / norm for value in raw)


@pytest.fixture(scope="module")
def shared_vocabulary(module_database: Database) -> tuple[Database, dict[tuple[str, str], list[str]]]:
    """Tenants and collections with one vocabulary (no language: `simple`, so a phrase is its words as folded)."""
    generator = random.Random(11)
    rows: dict[tuple[str, str], list[str]] = {}
    seed = 0
    for tenant in TENANTS:
        for collection in COLLECTIONS:
            texts = [" ".join(generator.choices(WORDS, k=generator.randint(2, 7))) for _ in range(6)]
            seed += len(texts)
            index_texts(
                module_database, tenant, collection, texts, vectors=[_vector(seed + i) for i in range(len(texts))]
            )
            rows[tenant, collection] = texts
    return module_database, rows


def _holds(text: str, phrase: str) -> bool:
    words, wanted = words_of(text), words_of(phrase)
    return any(words[start : start + len(wanted)] == wanted for start in range(len(words) - len(wanted) + 1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tenant=st.sampled_from(TENANTS),
    subjects=st.frozensets(st.sampled_from([*COLLECTIONS, "nonexistent"]), max_size=3),
    phrase=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
    excluded=st.lists(st.sampled_from(WORDS), max_size=1),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_a_constraint_finds_exactly_the_callers_rows_that_hold_it_and_none_other(  # noqa: PLR0917 - Hypothesis hands every drawn value as an argument
    shared_vocabulary: tuple[Database, dict[tuple[str, str], list[str]]],
    tenant: str,
    subjects: frozenset[str],
    phrase: str,
    excluded: list[str],
    seed: int,
) -> None:
    database, rows = shared_vocabulary
    index = PostgresKnowledgeIndex(database)
    constraints = QueryConstraints(phrases=(phrase,), excluded=tuple(excluded))
    allowed = [
        text
        for (owner, collection), texts in rows.items()
        if owner == tenant and collection in subjects
        for text in texts
    ]
    qualifying = sum(1 for text in allowed if _holds(text, phrase) and not any(_holds(text, word) for word in excluded))
    limit = 40

    keyword = index.search(
        tenant, subjects, phrase, limit=limit, filters=SearchFilters(), k1=1.2, b=0.75, constraints=constraints
    )

    def nearest() -> list[str]:
        hits = index.nearest(
            tenant,
            subjects,
            _vector(-seed),
            embedding_model=FAKE_MODEL,
            limit=limit,
            filters=SearchFilters(),
            constraints=constraints,
        )
        return [hit.chunk_id for hit in hits]

    semantic = nearest()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vector_lane, "EXACT_SCAN_ROWS", -1)  # the graph scan, the constraint inside it
        assert sorted(nearest()) == sorted(semantic)

    hit_ids = {hit.chunk_id for hit in keyword} | set(semantic)
    own = index.snapshots(tenant, subjects, sorted(hit_ids))
    assert {snapshot.chunk_id for snapshot in own} == hit_ids, "a hit outside the caller's rows"
    assert all(_holds(snapshot.body, phrase) for snapshot in own)
    assert not any(_holds(snapshot.body, word) for snapshot in own for word in excluded)
    # The counts are exactly what the caller's own rows allow (every holder of the phrase holds its words).
    assert len(keyword) == min(limit, qualifying)
    assert len(semantic) == min(limit, qualifying)


# --- over HTTP ---------------------------------------------------------------------------------------------------


def test_the_search_response_says_how_the_query_was_read_and_bounds_are_400s(stack: Stack) -> None:
    token = stack.token(tenant=f"qh{uuid.uuid4().hex[:8]}", collections=("docs",))
    indexed(stack, token, "outage.md", b"# Outage\n\nThe payment failed at checkout for ERR-4021.\n")
    indexed(stack, token, "apart.md", b"# Retries\n\nA payment that was retried later failed again.\n")
    indexed(stack, token, "refund.md", b"# Refunds\n\nThe payment failed, so a refund was issued.\n")

    answer = search(stack, token, '"payment failed" -refund "ERR-4021" v2.1')

    assert answer["interpretedQuery"] == {
        "text": "payment failed ERR-4021 v2.1",
        "phrases": ["payment failed", "ERR-4021"],
        "excluded": ["refund"],
        "identifiers": [{"text": "err-4021", "required": True}, {"text": "v2.1", "required": False}],
    }
    assert [hit["citation"]["filename"] for hit in answer["hits"]] == ["outage.md"]
    empty = search(stack, token, '"payment failed" -checkout -refund')
    assert empty["outcome"] == "no_match" and empty["interpretedQuery"]["excluded"] == ["checkout", "refund"]

    too_many = " ".join(f'"word{number}"' for number in range(MAX_PHRASES + 1))
    for query, sentence in (
        (too_many, f"at most {MAX_PHRASES} quoted phrases"),
        ("-draft -final", "only exclusions"),
        ('"' * 1_998, "no words to search for"),
        (f'"{"long " * 45}"', "at most 200 characters"),
    ):
        status, refused = stack.json("POST", "/v1/search", token, {"query": query})
        assert status == 400 and sentence in refused["message"], (query, refused)
    # An odd quote out is a plain character: searched, not refused.
    assert search(stack, token, '"' * 1_999)["interpretedQuery"]["text"] == '"'


def test_phrases_and_exclusions_read_a_chunk_s_body_not_the_title_it_is_indexed_under(
    module_database: Database,
) -> None:
    from shared.local.chunk_rows import paragraph_drafts
    from tests.integration.knowledge_rows import index_drafts

    tenant = f"t{uuid.uuid4().hex[:10]}"
    titled = [
        draft.model_copy(update={"title": "Draft refund policy", "language": "en"})
        for draft in paragraph_drafts(["The payment failed at checkout."])
    ]
    index_drafts(module_database, tenant, "docs", titled, filename="policy.txt", media_type="text/plain")
    lane = PostgresKeywordIndex(module_database)

    def found(typed: str) -> int:
        read = interpret(typed)
        hits = lane.search(
            tenant,
            frozenset({"docs"}),
            read.text,
            limit=5,
            filters=SearchFilters(),
            k1=0.9,
            b=0.6,
            constraints=read.constraints,
        )
        return len(hits)

    # The title finds the chunk (its context is indexed) ...
    assert found("refund policy") == 1
    # ... but a hit's phrase is in what it quotes, and an excluded word is kept out of its text, not its title.
    assert found('payment "refund policy"') == 0
    assert found("payment -draft") == 1
    assert found('"payment failed"') == 1
