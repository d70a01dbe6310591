"""Chunks' situating sentences (issue 37 item 1, on AWS): the domain's bounds, and the embed step with a fake
situator and a fake cache: written once and metered, found in the cache on a re-index, skipped over the tenant's
generation limit or when the model or the cache fails (the version is indexed all the same, the gap says why),
and indexed as context, never quoted. The Bedrock adapter is tests/unit/test_bedrock_situations.py; the real
cache and the local pipeline are tests/integration/test_chunk_situations.py."""

import uuid
from datetime import UTC, datetime

from shared.adapters.local.unavailable import UnavailableSituator
from shared.domain.attempt_work import EmbeddedBatch
from shared.domain.chunk_situations import (
    MAX_HEAD_CHARACTERS,
    MAX_SITUATION_CHARACTERS,
    Situation,
    cleaned_situation,
    document_head,
    fitted_situation,
    request_for,
    situated,
    situation_key,
)
from shared.domain.document import BlockKind
from shared.domain.files import FileVersionRecord, ProcessingState
from shared.domain.knowledge import ChunkDraft, ChunkLocation
from shared.domain.limits import TenantLimits
from shared.domain.usage import Usage
from shared.domain.workflow import ProcessVersion
from shared.services.chunk_situations import ChunkSituations
from shared.services.files import UploadTicket
from shared.services.limits import SpendLimits
from tests.fakes import FakeEmbedder, Fakes, FakeSituationCache, FakeSituator, principal

# The fake situator's model and prompt, as sentences are cached under them and versions record them.
SITUATED_BY = "fake.situator-v1#fake-1"

REPORT = (
    b"# Northwind Traders: Q3 2025 report\n\n"
    b"## Results\n\nRevenue rose 9% this quarter, led by the company's northern stores.\n\n"
    b"## Outlook\n\nThe company expects margins to hold through the winter.\n"
)


def draft(text: str, ordinal: int = 0, heading_path: tuple[str, ...] = ("Results",), **context: object) -> ChunkDraft:
    return ChunkDraft(
        ordinal=ordinal,
        text=text,
        heading_path=heading_path,
        block_kind=BlockKind.PARAGRAPH,
        location=ChunkLocation(),
        block_start=ordinal,
        block_end=ordinal,
        parent=None,
        token_count=10,
        **context,
    )


def uploaded(fakes: Fakes, content: bytes = REPORT) -> tuple[UploadTicket, ProcessVersion]:
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="report.md",
        media_type="text/markdown",
        byte_size=len(content),
    )
    landed = fakes.content.post(ticket.upload, content)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    return ticket, fakes.workflow.started[-1]


def version_of(fakes: Fakes, ticket: UploadTicket) -> FileVersionRecord:
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    return found[1]


def context_rows(fakes: Fakes) -> dict[tuple[str, int], Usage]:
    return {(step, attempt): row.usage for (_, _, step, attempt), row in fakes.ledger.rows.items() if "context" in step}


# --- the domain ------------------------------------------------------------------------------------------------


def test_the_sentence_is_context_indexed_before_the_body_and_never_part_of_the_excerpt() -> None:
    plain = draft("Revenue rose 9% this quarter.", title="Northwind Q3 2025 report")
    with_sentence = situated(plain, Situation(text="Northwind's revenue by region in Q3 2025.", tokens=9))
    assert with_sentence.text == plain.text  # what an excerpt and a citation quote
    assert with_sentence.context == (*plain.context, "Northwind's revenue by region in Q3 2025.")
    assert with_sentence.content.endswith("\n\nRevenue rose 9% this quarter.")
    assert "Northwind's revenue by region" in with_sentence.content.split("\n\n")[0]
    assert with_sentence.token_count == plain.token_count + 9
    # The cache key is the chunk without its sentence: a re-index, which cuts it without one, finds it.
    assert situation_key(with_sentence) == situation_key(plain)
    assert situation_key(plain) != situation_key(draft("Revenue rose 9% this quarter.", title="Another report"))
    assert situated(plain, None) is plain


def words(text: str) -> int:
    return len(text.split())


def test_a_sentence_that_would_pass_the_embedding_models_input_is_cut_at_a_word_to_fit() -> None:
    chunk = draft("Revenue rose nine percent").model_copy(update={"token_count": 5})  # Results, then the body
    sentence = "Northwind's revenue by region in the third quarter of 2025."
    # Room for all of it: kept whole, with the tokens it adds
    whole = fitted_situation(chunk, sentence, count=words, max_tokens=100)
    assert whole == Situation(text=sentence, tokens=words(f"> {sentence}"))
    # Room for four more tokens: the separator and three words
    cut = fitted_situation(chunk, sentence, count=words, max_tokens=9)
    assert cut is not None and cut.text == "Northwind's revenue by"
    assert words(situated(chunk, cut).content) == 9 == chunk.token_count + cut.tokens
    # No room: the chunk keeps its deterministic context only
    assert fitted_situation(chunk, sentence, count=words, max_tokens=6) is None


def test_a_models_answer_is_one_bounded_line_without_preamble_or_quotes() -> None:
    assert cleaned_situation('Here is the context:\n "This chunk reports Q3 revenue."') == (
        "This chunk reports Q3 revenue."
    )
    assert cleaned_situation("Context: The outlook section of the report.") == "The outlook section of the report."
    assert cleaned_situation("  \n ... ") is None
    long = "This chunk is from the report's results section. " + "It goes on and on about stores " * 30
    cut = cleaned_situation(long)
    assert cut is not None and len(cut) <= MAX_SITUATION_CHARACTERS
    assert cut == "This chunk is from the report's results section."  # cut at the sentence, never mid-word


def test_the_document_head_and_the_neighbours_are_bounded_whatever_the_document() -> None:
    drafts = [
        draft(f"Paragraph {n} " + "word " * 400, ordinal=n, heading_path=(f"Section {n}",), title="Big report")
        for n in range(50)
    ]
    head = document_head(drafts)
    assert head.startswith("Title: Big report\n\nOutline:\nSection 0\nSection 1")
    assert len(head) <= MAX_HEAD_CHARACTERS
    request = request_for(drafts, 10, head)
    assert request.document == head
    assert request.before.endswith("word") and request.after.startswith("Paragraph 11")
    assert len(request.before) <= 1_200 and len(request.after) <= 1_200
    first = request_for(drafts, 0, head)
    assert first.before == "" and first.after.startswith("Paragraph 1")


def test_a_batch_of_vectors_carries_its_sentences_to_the_index_step() -> None:
    drafts = (draft("One.", 0), draft("Two.", 1))
    stored = EmbeddedBatch.missing(0, 2, "no model", situations=(Situation(text="About one.", tokens=3), None))
    read = EmbeddedBatch.model_validate_json(stored.model_dump_json())
    situated_drafts = read.situated(drafts)
    assert [d.situation for d in situated_drafts] == ["About one.", None]
    assert EmbeddedBatch.missing(0, 2, "no model").situated(drafts) == drafts


# --- the embed step ---------------------------------------------------------------------------------------------


def test_each_chunk_is_indexed_with_its_sentence_written_once_metered_and_cached() -> None:
    fakes = Fakes()
    situator, cache = FakeSituator(input_tokens=900, output_tokens=30), FakeSituationCache()
    ticket, request = uploaded(fakes)
    fakes.pipeline(situations=ChunkSituations(situator, cache)).run(request)

    version = version_of(fakes, ticket)
    assert version.processing_state is ProcessingState.INDEXED and version.context_gap is None
    chunks = fakes.knowledge.of_version("acme", ticket.version_id)
    assert chunks and len(situator.calls) == len(chunks)
    for chunk in chunks:
        assert chunk.draft.situation is not None and chunk.draft.situation.startswith("The part of")
        assert chunk.draft.situation in chunk.draft.content
        assert chunk.draft.situation not in chunk.draft.text  # the excerpt is the body only
    # The model read the document's head: its title, its outline, its beginning.
    assert situator.calls[0].document.startswith("Title: Northwind Traders: Q3 2025 report")
    assert "Results" in situator.calls[0].document and "Revenue rose 9%" in situator.calls[0].document
    # Metered once for the batch, as generation: the tokens of every call.
    rows = context_rows(fakes)
    assert list(rows) == [("context#00000", request.attempt)]
    usage = rows[("context#00000", request.attempt)]
    assert usage.operation == "bedrock:Converse" and usage.model == "fake.situator-v1" and usage.priced
    assert (usage.input_tokens, usage.output_tokens) == (900 * len(chunks), 30 * len(chunks))
    assert fakes.ledger.spent_since("acme", usage_day()).generation_tokens == 930 * len(chunks)
    assert len(cache.rows) == len({situation_key(c.draft) for c in chunks})


def test_a_re_index_finds_every_sentence_in_the_cache_and_pays_nothing() -> None:
    fakes = Fakes()
    situator, cache = FakeSituator(), FakeSituationCache()
    situations = ChunkSituations(situator, cache)
    ticket, request = uploaded(fakes)
    fakes.pipeline(situations=situations).run(request)
    first = [c.draft.situation for c in fakes.knowledge.of_version("acme", ticket.version_id)]
    calls, rows = len(situator.calls), dict(context_rows(fakes))

    assert fakes.reindexer().start_version("acme", ticket.file_id, ticket.version_id)
    again = fakes.workflow.started[-1]
    assert again.reindex
    fakes.pipeline(situations=situations).run(again)

    assert len(situator.calls) == calls  # every sentence from the cache
    assert context_rows(fakes) == rows  # nothing more metered
    assert [c.draft.situation for c in fakes.knowledge.of_version("acme", ticket.version_id)] == first
    version = version_of(fakes, ticket)
    assert version.context_gap is None and version.context_model == SITUATED_BY
    # Situated by this model without a gap: not on the re-index work list; for another model it is.
    model = fakes.embedder.model_id
    assert fakes.knowledge.versions_to_reindex("acme", None, model, 10, context_model=SITUATED_BY) == []
    assert fakes.knowledge.versions_to_reindex("acme", None, model, 10, context_model="another.model") == [
        (ticket.file_id, ticket.version_id)
    ]


def test_over_the_generation_limit_no_sentence_is_written_and_the_version_is_indexed_saying_why() -> None:
    fakes = Fakes()
    situator = FakeSituator()
    spend = SpendLimits(fakes.ledger, fakes.metadata, TenantLimits(generation_tokens_per_day=100))
    ticket, request = uploaded(fakes)
    fakes.pipeline(situations=ChunkSituations(situator, FakeSituationCache(), spend=spend)).run(request)

    version = version_of(fakes, ticket)
    assert version.processing_state is ProcessingState.INDEXED
    assert version.embedded_chunk_count == version.chunk_count > 0  # the embedding goes on
    assert version.context_gap is not None
    assert f"{version.chunk_count} of {version.chunk_count} chunks have no situating context" in version.context_gap
    assert "daily generation limit of 100 tokens" in version.context_gap and "re-index after" in version.context_gap
    assert situator.calls == [] and context_rows(fakes) == {}
    chunks = fakes.knowledge.of_version("acme", ticket.version_id)
    # The deterministic context stays.
    assert all(c.draft.situation is None and c.draft.context[0] == "Northwind Traders: Q3 2025 report" for c in chunks)


def test_a_failing_model_leaves_its_chunks_without_a_sentence_and_the_others_with_theirs() -> None:
    fakes = Fakes()
    situator = FakeSituator(refuse_containing="margins")
    ticket, request = uploaded(fakes)
    fakes.pipeline(situations=ChunkSituations(situator, FakeSituationCache())).run(request)

    version = version_of(fakes, ticket)
    assert version.processing_state is ProcessingState.INDEXED
    chunks = fakes.knowledge.of_version("acme", ticket.version_id)
    without = [c for c in chunks if c.draft.situation is None]
    assert len(without) == 1 and "margins" in without[0].draft.text
    assert version.context_gap == (
        f"1 of {len(chunks)} chunks have no situating context: the model refused a chunk holding margins"
    )
    # Only what was written is metered.
    usage = next(iter(context_rows(fakes).values()))
    assert usage.output_tokens == 30 * (len(chunks) - 1)
    # The gap makes it stale: counted in coverage as the re-index work list queues it.
    model = fakes.embedder.model_id
    assert fakes.knowledge.versions_to_reindex("acme", None, model, 10, context_model=SITUATED_BY) == [
        (ticket.file_id, ticket.version_id)
    ]
    [coverage] = fakes.knowledge.coverage("acme", frozenset({"docs"}), model, context_model=SITUATED_BY)
    assert (coverage.stale, coverage.lexical_only) == (1, 0)
    [coverage] = fakes.knowledge.coverage("acme", frozenset({"docs"}), model)  # no model writes sentences: current
    assert coverage.stale == 0 and fakes.knowledge.versions_to_reindex("acme", None, model, 10) == []


def test_a_model_refusing_everything_fails_no_version_and_meters_nothing() -> None:
    fakes = Fakes()
    ticket, request = uploaded(fakes)
    situator = FakeSituator("anthropic.claude-haiku is throttling this deployment's requests")
    fakes.pipeline(situations=ChunkSituations(situator, FakeSituationCache())).run(request)
    version = version_of(fakes, ticket)
    assert version.processing_state is ProcessingState.INDEXED
    assert version.context_gap is not None and "is throttling" in version.context_gap
    assert context_rows(fakes) == {}


def test_an_unreadable_cache_writes_nothing_rather_than_pay_again() -> None:
    fakes = Fakes()
    cache = FakeSituationCache()
    cache.unreadable = True
    situator = FakeSituator()
    ticket, request = uploaded(fakes)
    fakes.pipeline(situations=ChunkSituations(situator, cache)).run(request)
    version = version_of(fakes, ticket)
    assert version.processing_state is ProcessingState.INDEXED
    assert version.context_gap is not None and "cache of chunk contexts could not be read" in version.context_gap
    assert situator.calls == []


def test_the_time_budget_spent_leaves_the_rest_without_and_says_so() -> None:
    ticks = iter(range(0, 1000, 100))  # each look at the clock is 100 s later: one call, then the budget is spent
    situations = ChunkSituations(
        FakeSituator(), FakeSituationCache(), workers=1, budget_seconds=150, clock=lambda: float(next(ticks))
    )
    outcome = situations.situate(
        "acme",
        uuid.uuid4(),
        [draft(f"Chunk {n} text.", n) for n in range(3)],
        document_head="Title: T",
        on_generated=lambda usage: None,
    )
    assert outcome.situations[0] is not None and outcome.situations[1:] == (None, None)
    assert outcome.gap == "2 of 3 chunks have no situating context: the step's 150 s for chunk contexts ran out"


def test_without_a_model_nothing_is_asked_stored_or_said() -> None:
    fakes = Fakes()
    cache = FakeSituationCache()
    situations = ChunkSituations(UnavailableSituator("no model writes chunks' situating sentences locally"), cache)
    assert not situations.enabled
    ticket, request = uploaded(fakes)
    fakes.pipeline(situations=situations).run(request)
    version = version_of(fakes, ticket)
    assert version.processing_state is ProcessingState.INDEXED and version.context_gap is None
    assert all(c.draft.situation is None for c in fakes.knowledge.of_version("acme", ticket.version_id))
    assert cache.rows == {}


def usage_day() -> datetime:
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


class ShortInputEmbedder(FakeEmbedder):
    """A fake embedding model that reads 24 tokens (words, as the fake counts them), so chunks fill it."""

    @property
    def max_tokens(self) -> int:
        return 24


def test_a_chunk_cut_to_the_embedding_models_limit_keeps_within_it_with_its_sentence() -> None:
    # Given a document whose chunks are cut to the embedding model's 24 tokens
    fakes = Fakes()
    paragraph = " ".join(f"word{number}" for number in range(200))
    ticket, request = uploaded(fakes, f"# Northwind Traders report\n\n## Results\n\n{paragraph}.\n".encode())
    embedder = ShortInputEmbedder()
    pipeline = fakes.pipeline(
        indexer=fakes.indexer(embedder), situations=ChunkSituations(FakeSituator(), FakeSituationCache())
    )
    # When a model writes each chunk a sentence of 13 words
    pipeline.run(request)
    # Then what is embedded stays within the model's input: the sentence cut at a word, or left out of a full chunk
    assert version_of(fakes, ticket).processing_state is ProcessingState.INDEXED
    chunks = fakes.knowledge.of_version("acme", ticket.version_id)
    assert len(chunks) > 5
    assert all(embedder.count_tokens(chunk.draft.content) <= 24 for chunk in chunks)
    assert all(chunk.draft.token_count == embedder.count_tokens(chunk.draft.content) for chunk in chunks)
    # The full chunks go without; the last, shorter one has the start of its sentence (written to its fourth word)
    *full, last = chunks
    assert all(chunk.draft.situation is None for chunk in full)
    assert last.draft.situation == "The part of Northwind Traders report about word190"
