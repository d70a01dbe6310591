"""Reindexer on the fakes: versions embedded by another model are queued for the workflow, which re-indexes each
from its stored document batch by batch (metered per batch) without extracting it again; a queued version leaves
the work list, so a large one never holds up the rest (tests/integration/test_search_api.py runs the same
through the API and the local worker)."""

import pytest

from shared.adapters.local.unavailable import UnavailableEmbedder
from shared.domain.auth import Role
from shared.domain.errors import CapabilityUnavailable, Forbidden
from shared.domain.files import ProcessingState
from shared.services import attempt_work
from shared.services.files import UploadTicket
from tests.fakes import FakeEmbedder, Fakes, principal

NOTES = b"# Notes\n\nThe launch code is BRAVO-42.\n\n## Later\n\nThe rollback plan lives in the wiki.\n"


def indexed(fakes: Fakes, filename: str = "notes.md", content: bytes = NOTES) -> UploadTicket:
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename=filename,
        media_type="text/markdown",
        byte_size=len(content),
    )
    landed = fakes.content.post(ticket.upload, content)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    fakes.pipeline().run(fakes.workflow.started[-1])
    return ticket


def run_queued(fakes: Fakes, embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workflow's part: run every re-index the calls started, with the new model. Extraction must not run:
    a re-index starts from the stored document."""
    pipeline = fakes.pipeline(indexer=fakes.indexer(embedder))
    monkeypatch.setattr(pipeline, "extract", lambda request: pytest.fail("a re-index extracted the file again"))
    for request in [r for r in fakes.workflow.started if r.reindex]:
        outcome = pipeline.run(request)
        assert getattr(outcome, "processing", None) == "indexed", outcome


def test_stale_versions_are_queued_for_the_workflow_which_re_embeds_them_batch_by_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    tickets = [indexed(fakes, "a.md"), indexed(fakes, "b.md")]
    new_model = FakeEmbedder(name="new-model")
    report = fakes.reindexer(new_model).start_batch("acme", frozenset({"docs"}), limit=1)
    # Queued, not embedded: the call returns with the work started and the rest still listed.
    assert (report.embedding_model, report.queued, report.remaining) == (new_model.model_id, 1, 1)
    assert new_model.calls == []
    report = fakes.reindexer(new_model).start_batch("acme", frozenset({"docs"}))
    assert (report.queued, report.dropped, report.skipped, report.remaining) == (1, 0, 0, 0)
    run_queued(fakes, new_model, monkeypatch)
    for ticket in tickets:
        found = fakes.metadata.find_version("acme", ticket.version_id)
        assert found is not None
        version = found[1]
        assert (version.processing_state, version.embedding_model, version.embedded_chunk_count) == (
            ProcessingState.INDEXED,
            new_model.model_id,
            version.chunk_count,
        )
        assert {c.embedding_model for c in fakes.knowledge.of_version("acme", ticket.version_id)} == {
            new_model.model_id
        }
    assert fakes.reindexer(new_model).start_batch("acme", frozenset({"docs"})).queued == 0  # nothing left to do


def test_a_large_version_is_embedded_in_metered_batches_and_never_holds_up_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(attempt_work, "CHUNKS_PER_BATCH", 50)
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"), max_bytes=4 * 1024 * 1024)
    sections = b"".join(
        b"## Section %d\n\nBerth %d holds vessel %d under pilot %d.\n\n" % (i, i, i, i) for i in range(3000)
    )
    large = indexed(fakes, "harbour.md", b"# Harbour log\n\n" + sections)
    small = indexed(fakes, "notes.md")
    found = fakes.metadata.find_version("acme", large.version_id)
    assert found is not None and found[1].chunk_count >= 3000
    new_model = FakeEmbedder(name="new-model")
    # The large version is the oldest, so first on the list; one call queues it, the next takes the small one.
    assert fakes.reindexer(new_model).start_batch("acme", frozenset({"docs"}), limit=1).remaining == 1
    second = fakes.reindexer(new_model).start_batch("acme", frozenset({"docs"}), limit=1)
    assert (second.queued, second.remaining) == (1, 0)
    run_queued(fakes, new_model, monkeypatch)
    found = fakes.metadata.find_version("acme", large.version_id)
    assert found is not None
    chunks = found[1].chunk_count
    assert found[1].embedded_chunk_count == chunks and found[1].embedding_model == new_model.model_id
    # Every batch of the embed Map is on the ledger, once each, under the re-index's own attempt.
    batches = [key for key in fakes.ledger.rows if key[1] == large.version_id and key[3] == found[1].processing_attempt]
    assert len([key for key in batches if key[2].startswith("embed")]) == -(-chunks // 50)
    found = fakes.metadata.find_version("acme", small.version_id)
    assert found is not None and found[1].embedding_model == new_model.model_id


def test_another_tenants_and_other_collections_versions_are_not_touched() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    ticket = indexed(fakes)
    new_model = FakeEmbedder(name="new-model")
    assert fakes.reindexer(new_model).start_batch("globex", frozenset({"docs"})).remaining == 0
    assert fakes.reindexer(new_model).start_batch("acme", frozenset({"hr"})).remaining == 0
    assert not [r for r in fakes.workflow.started if r.reindex]
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].embedding_model == FakeEmbedder(name="old-model").model_id


def test_without_a_model_nothing_is_queued() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    indexed(fakes)
    with pytest.raises(CapabilityUnavailable):
        fakes.reindexer(UnavailableEmbedder("the model is down", dimension=8)).start_batch("acme", frozenset({"docs"}))
    assert not [r for r in fakes.workflow.started if r.reindex]


def test_a_workflow_that_cannot_be_asked_leaves_the_version_indexed_and_listed() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    ticket = indexed(fakes)
    fakes.workflow.unreachable = True
    with pytest.raises(CapabilityUnavailable, match="workflow could not be asked"):
        fakes.reindexer(FakeEmbedder(name="new-model")).start_batch("acme", frozenset({"docs"}))
    fakes.workflow.unreachable = False
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].processing_state is ProcessingState.INDEXED
    assert fakes.reindexer(FakeEmbedder(name="new-model")).start_batch("acme", frozenset({"docs"})).queued == 1


def test_a_version_whose_document_is_gone_is_dropped_from_the_index() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    ticket = indexed(fakes)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].document_key is not None
    fakes.content.delete_all_versions(found[1].document_key)
    report = fakes.reindexer(FakeEmbedder(name="new-model")).start_batch("acme", frozenset({"docs"}))
    assert (report.queued, report.dropped, report.remaining) == (0, 1, 0)
    assert fakes.knowledge.of_version("acme", ticket.version_id) == []


def test_a_caller_re_indexes_only_the_collections_it_administers_and_needs_the_admin_role() -> None:
    fakes = Fakes(embedder=FakeEmbedder(name="old-model"))
    indexed(fakes, "a.md")
    new_model = FakeEmbedder(name="new-model")
    # A writer (or reader) of the collection spends no embeddings on it: refused, naming the role.
    with pytest.raises(Forbidden, match="admin role"):
        fakes.reindexer(new_model).start_for(principal("acme", "docs", role=Role.WRITE))
    assert [request for request in fakes.workflow.started if request.reindex] == []
    # An admin of another collection queues nothing of this one; an admin of it queues its stale version.
    assert fakes.reindexer(new_model).start_for(principal("acme", "hr")).queued == 0
    assert fakes.reindexer(new_model).start_for(principal("acme", "docs")).queued == 1
