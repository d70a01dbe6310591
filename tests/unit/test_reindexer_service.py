"""Reindexer on the fakes: versions embedded by another model are re-embedded from their stored documents, and
a model that fails at call time stops the batch with CapabilityUnavailable instead of rewriting chunks without
vectors (tests/integration/test_search_api.py runs the same through the API)."""

import pytest

from shared.domain.errors import CapabilityUnavailable
from shared.services.files import UploadTicket
from tests.fakes import FakeEmbedder, Fakes, principal

NOTES = b"# Notes\n\nThe launch code is BRAVO-42.\n\n## Later\n\nThe rollback plan lives in the wiki.\n"


def indexed(fakes: Fakes, filename: str = "notes.md") -> UploadTicket:
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename=filename,
        media_type="text/markdown",
        byte_size=len(NOTES),
    )
    landed = fakes.content.post(ticket.upload, NOTES)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    fakes.pipeline().run(fakes.workflow.started[-1])
    return ticket


def test_versions_embedded_by_another_model_are_re_embedded_and_metered() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    tickets = [indexed(fakes, "a.md"), indexed(fakes, "b.md")]
    new_model = FakeEmbedder(name="new-model")
    report = fakes.reindexer(new_model).run_batch("acme", None, limit=1)
    assert (report.embedding_model, report.reindexed, report.remaining) == (new_model.model_id, 1, 1)
    report = fakes.reindexer(new_model).run_batch("acme", None)
    assert (report.reindexed, report.dropped, report.skipped, report.remaining) == (1, 0, 0, 0)
    for ticket in tickets:
        found = fakes.metadata.find_version("acme", ticket.version_id)
        assert found is not None
        assert (found[1].embedding_model, found[1].embedded_chunk_count) == (new_model.model_id, found[1].chunk_count)
        assert {c.embedding_model for c in fakes.knowledge.of_version("acme", ticket.version_id)} == {
            new_model.model_id
        }
    reembedded = [key for key in fakes.ledger.rows if key[2].startswith("reembed:")]
    assert len(reembedded) == 2
    assert fakes.reindexer(new_model).run_batch("acme", None).reindexed == 0  # nothing left to do


def test_another_tenants_and_other_collections_versions_are_not_touched() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    ticket = indexed(fakes)
    new_model = FakeEmbedder(name="new-model")
    assert fakes.reindexer(new_model).run_batch("globex", None).remaining == 0
    assert fakes.reindexer(new_model).run_batch("acme", frozenset({"hr"})).remaining == 0
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].embedding_model == FakeEmbedder(name="old-model").model_id


def test_a_model_failing_at_call_time_stops_the_batch_at_the_first_version() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    tickets = [indexed(fakes, "a.md"), indexed(fakes, "b.md")]
    failing = FakeEmbedder(name="new-model", failure="throttled after 6 attempts")
    with pytest.raises(CapabilityUnavailable, match="throttled after 6 attempts"):
        fakes.reindexer(failing).run_batch("acme", None)
    versions = []
    for ticket in tickets:
        found = fakes.metadata.find_version("acme", ticket.version_id)
        assert found is not None
        versions.append(found[1])
    # The first keeps its chunks for the keyword lane and says why they have no vectors; the second is untouched.
    first, second = versions
    assert (first.embedded_chunk_count, first.embedding_gap) == (0, "throttled after 6 attempts")
    assert len(fakes.knowledge.of_version("acme", first.version_id)) == first.chunk_count > 0
    assert (second.embedding_model, second.embedding_gap) == ("old-model@8", None)
    assert [key for key in fakes.ledger.rows if key[2].startswith("reembed:")] == []


def test_a_version_whose_document_is_gone_is_dropped_from_the_index() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    ticket = indexed(fakes)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].document_key is not None
    fakes.content.delete_all_versions(found[1].document_key)
    report = fakes.reindexer(FakeEmbedder(name="new-model")).run_batch("acme", None)
    assert (report.reindexed, report.dropped, report.remaining) == (0, 1, 0)
    assert fakes.knowledge.of_version("acme", ticket.version_id) == []
