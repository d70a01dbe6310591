"""IngestionPipeline on the fakes, with the real Extractor (text parsers, one sandboxed child per document)
and the real chunker: the whole graph walked to `indexed`, a superseded attempt that can no longer write, and
a step's exception recorded as the state machine's Catch records it (tests/integration/test_pipeline.py and
test_recognition_pipeline.py run the same on the real stack)."""

from collections.abc import Sequence
from datetime import timedelta

import pytest

from shared.domain.attempt_work import work_prefix
from shared.domain.files import FailureReason, ProcessingState, VersionState
from shared.domain.steps import Halt
from shared.domain.workflow import ProcessVersion
from shared.services.files import UploadTicket
from shared.services.pipeline import StepRetry
from tests.fakes import Clock, FakeEmbedder, FakeFileMetadataStore, Fakes, principal

RUNBOOK = (
    b"# Checkout runbook\n\n## Symptoms\n\nBuyers could not complete their purchases: ERR-4021 at payment.\n\n"
    b"## Fix\n\nRestart the payment gateway, then replay the queued orders.\n"
)


def uploaded(fakes: Fakes, body: bytes = RUNBOOK) -> tuple[UploadTicket, ProcessVersion]:
    """A stored markdown version, and the request its Object Created event asked the workflow for."""
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="runbook.md",
        media_type="text/markdown",
        byte_size=len(body),
    )
    landed = fakes.content.post(ticket.upload, body)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    return ticket, fakes.workflow.started[-1]


def test_a_markdown_upload_walks_the_whole_graph_to_indexed() -> None:
    fakes = Fakes()
    ticket, request = uploaded(fakes)
    outcome = fakes.pipeline().run(request)
    assert outcome.proceed is False and outcome.why is None
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    version = found[1]
    assert version.processing_state is ProcessingState.INDEXED
    assert version.block_count and version.document_key
    chunks = fakes.knowledge.of_version("acme", ticket.version_id)
    assert len(chunks) == version.chunk_count == version.embedded_chunk_count > 0
    assert version.embedding_model == fakes.embedder.model_id
    assert {chunk.embedding_model for chunk in chunks} == {fakes.embedder.model_id}
    assert any("ERR-4021" in chunk.draft.text for chunk in chunks)
    # What the attempt paid for is metered once per batch; its work objects are gone.
    assert [key[2] for key in fakes.ledger.rows] == ["embed#00000"]
    work = work_prefix("acme", ticket.file_id, ticket.version_id, request.attempt)
    assert list(fakes.content.object_versions(work)) == []
    assert fakes.content.head(version.document_key) is not None


def test_a_superseded_attempt_cannot_write_and_the_new_one_indexes() -> None:
    fakes = Fakes(metadata=FakeFileMetadataStore(Clock(behind=timedelta(hours=2))))
    ticket, first = uploaded(fakes)
    pipeline = fakes.pipeline()
    assert pipeline.inspect(first).proceed
    # The first attempt went silent: the sweep's threshold passed, and a second attempt is queued.
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    assert fakes.completion().request_processing("acme", ticket.file_id, found[1]) == "started"
    second = fakes.workflow.started[-1]
    assert second.attempt == first.attempt + 1
    late = pipeline.extract(first)
    assert (late.proceed, late.why) == (False, Halt.NOT_HELD)
    assert pipeline.chunk(first).why is Halt.NOT_HELD
    assert fakes.knowledge.of_version("acme", ticket.version_id) == []
    pipeline.run(second)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    assert (found[1].processing_state, found[1].processing_attempt) == (ProcessingState.INDEXED, second.attempt)
    assert fakes.knowledge.of_version("acme", ticket.version_id) != []


class BrokenEmbedder(FakeEmbedder):
    """Ready, then fails in a way no retry inside an adapter absorbed (not a document problem)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ConnectionResetError("the model endpoint reset the connection")


def test_a_step_that_raises_records_the_interruption_naming_the_step() -> None:
    fakes = Fakes()
    ticket, request = uploaded(fakes)
    pipeline = fakes.pipeline(indexer=fakes.indexer(BrokenEmbedder()))
    with pytest.raises(ConnectionResetError):
        pipeline.run(request)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    version = found[1]
    assert version.processing_state is ProcessingState.INTERRUPTED
    assert version.failure_reason is None
    assert version.failure_detail == (
        "the embed step failed: ConnectionResetError: the model endpoint reset the connection"
    )
    assert list(fakes.content.object_versions(work_prefix("acme", ticket.file_id, ticket.version_id, 1))) == []
    assert fakes.knowledge.of_version("acme", ticket.version_id) == []


def test_a_deleted_version_is_not_processed() -> None:
    fakes = Fakes()
    ticket, request = uploaded(fakes)
    fakes.files().delete_file(principal("acme", "docs"), ticket.file_id)
    outcome = fakes.pipeline().run(request)
    assert (outcome.proceed, outcome.why) == (False, Halt.NOT_STORED)
    assert fakes.knowledge.chunks == {}
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].processing_state is ProcessingState.QUEUED  # never claimed


def test_a_file_deleted_while_its_attempt_reads_the_bytes_ends_that_attempt_cleanly() -> None:
    fakes = Fakes()
    ticket, request = uploaded(fakes)
    pipeline = fakes.pipeline()
    assert pipeline.inspect(request).proceed
    deleting = fakes.files()
    original_get = fakes.content.get

    def deleted_just_before(key: str, *, version_id: str | None = None, max_bytes: int) -> bytes:
        # The DELETE request lands between the step's check of the row and its read: it removes the bytes.
        deleting.delete_file(principal("acme", "docs"), ticket.file_id)
        return original_get(key, version_id=version_id, max_bytes=max_bytes)

    fakes.content.get = deleted_just_before  # type: ignore[method-assign]
    outcome = pipeline.extract(request)
    # A halt, not an error the workflow would retry (and record as an interruption).
    assert (outcome.proceed, outcome.why) == (False, Halt.NOT_STORED)


class FlakyEmbedder(FakeEmbedder):
    """Fails as a restarting database or endpoint does, `outages` times, then answers."""

    def __init__(self, outages: int) -> None:
        super().__init__()
        self.outages = outages

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.outages:
            self.outages -= 1
            raise ConnectionResetError("the model endpoint reset the connection")
        return super().embed(texts)


def test_a_step_whose_infrastructure_is_briefly_gone_is_tried_again_after_a_pause_and_finishes() -> None:
    fakes = Fakes()
    ticket, request = uploaded(fakes)
    pauses: list[float] = []
    retry = StepRetry(transient=lambda error: isinstance(error, ConnectionResetError), delays=(2.0, 4.0, 8.0))
    pipeline = fakes.pipeline(indexer=fakes.indexer(FlakyEmbedder(outages=2)), retry=retry, sleep=pauses.append)
    pipeline.run(request)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].processing_state is ProcessingState.INDEXED
    # Two pauses, each a jittered share of its delay, as the state machine's Retry waits.
    assert len(pauses) == 2 and 0 <= pauses[0] <= 2.0 and 0 <= pauses[1] <= 4.0


def test_the_retries_end_and_a_bug_is_never_retried() -> None:
    fakes = Fakes()
    _, request = uploaded(fakes)
    pauses: list[float] = []
    retry = StepRetry(transient=lambda error: isinstance(error, ConnectionResetError), delays=(1.0, 1.0))
    with pytest.raises(ConnectionResetError):
        fakes.pipeline(indexer=fakes.indexer(FlakyEmbedder(outages=5)), retry=retry, sleep=pauses.append).run(request)
    assert len(pauses) == 2  # then recorded as interrupted, for reconciliation
    fakes = Fakes()
    _, request = uploaded(fakes)
    bug = StepRetry(transient=lambda error: False)
    with pytest.raises(ConnectionResetError):
        fakes.pipeline(indexer=fakes.indexer(BrokenEmbedder()), retry=bug, sleep=pauses.append).run(request)
    assert len(pauses) == 2


def test_a_stored_version_whose_original_is_gone_fails_bytes_missing_and_is_not_retried() -> None:
    fakes = Fakes()
    ticket, request = uploaded(fakes)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    fakes.content.delete_all_versions(found[1].storage_key)  # a lifecycle rule, a hand-deleted object
    fakes.pipeline().run(request)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    version = found[1]
    assert (version.state, version.processing_state) == (VersionState.STORED, ProcessingState.FAILED)
    assert version.failure_reason is FailureReason.BYTES_MISSING
    assert "upload the file again" in FailureReason.BYTES_MISSING.user_sentence
