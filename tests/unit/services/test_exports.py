"""ExportService on the fakes (tests/builders/writing_services.py), with the real renderers in their child: a render
is queued, never done on the request path; one export per source and format; the rendering becomes a file that is
never extracted; a failure with a sentence leaves no file; a crash leaves a pending export the next attempt
completes; a deleted output or a passing failure renders again as the next generation; one not-found for the
unentitled (tests/integration/test_exports_api.py runs the same over HTTP on the real stack)."""

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.auth import Principal
from shared.domain.document import Block, BlockKind
from shared.domain.errors import DocumentNotReady, InvalidRequest, NotFound
from shared.domain.exports import (
    ExportFormat,
    ExportKind,
    ExportRecord,
    ExportState,
    NewExport,
    RenderFailed,
    RenderJob,
)
from shared.domain.files import ProcessingState, VersionState
from shared.services.artifacts import ContentInput
from tests.builders.writing_services import WritingServices
from tests.fakes import principal

ANN = principal("acme", "docs")
RUNBOOK = b"# Payments runbook\n\n## Incident ERR-4021\n\nCheckout failed because the TLS certificate expired.\n"


def artifact(services: WritingServices, *texts: str, caller: Principal = ANN) -> uuid.UUID:
    body = ContentInput(
        blocks=(
            Block(kind=BlockKind.HEADING, text="Quarterly report", level=1),
            *(Block(kind=BlockKind.PARAGRAPH, text=text) for text in texts or ("Revenue rose.",)),
        )
    )
    view = services.artifacts.create(caller, collection_id="docs", name="Q3", body=body, producer="test")
    return view.artifact.artifact_id


def exported(
    services: WritingServices, artifact_id: uuid.UUID, fmt: ExportFormat = ExportFormat.MARKDOWN, version: int = 1
) -> tuple[ExportRecord, bool]:
    return services.exports.export_artifact(ANN, artifact_id, version=version, export_format=fmt)


def current(services: WritingServices, record: ExportRecord) -> ExportRecord:
    found = services.export_store.get(record.tenant_id, record.export_id)
    assert found is not None
    return found


def output_bytes(services: WritingServices, record: ExportRecord) -> bytes:
    assert record.file_id is not None
    file = services.fakes.metadata.get_file(record.tenant_id, record.file_id)
    assert file is not None
    return services.fakes.content.get(file.current.storage_key, max_bytes=10**7)


def listed(services: WritingServices) -> list[uuid.UUID]:
    page = services.fakes.files().list_files(ANN, collection_id="docs", limit=10, cursor=None)
    return [file.file_id for file in page.files]


def test_an_artifact_version_is_queued_then_rendered_into_a_file_that_is_never_extracted() -> None:
    services = WritingServices()
    artifact_id = artifact(services)
    record, made = exported(services, artifact_id)
    assert made and record.state is ExportState.PENDING
    assert [job.export_id for job in services.queue.submitted] == [record.export_id]  # queued, not rendered
    services.render_all()
    view = services.exports.get(ANN, record.export_id)
    assert view.record.state is ExportState.RENDERED and view.download is not None and view.gone is None
    assert view.record.file_id is not None
    file = services.fakes.metadata.get_file("acme", view.record.file_id)
    assert file is not None and file.filename == "Q3 v1.md"
    output = file.current
    assert (output.processing_state, output.export_id) == (ProcessingState.SKIPPED, record.export_id)
    content = output_bytes(services, view.record)
    assert content.startswith(b"# Quarterly report") and len(content) == view.record.byte_size
    assert services.fakes.workflow.started == []  # the upload path did not start the pipeline


def test_the_same_source_and_format_is_one_export_rendered_once() -> None:
    services = WritingServices()
    artifact_id = artifact(services)
    first, made = exported(services, artifact_id)
    again, made_again = exported(services, artifact_id)
    assert made and not made_again and again.export_id == first.export_id
    assert len(services.queue.submitted) == 1
    services.render_all()
    rendered, made = exported(services, artifact_id)
    assert not made and rendered.state is ExportState.RENDERED and services.queue.submitted == []
    # Another format, or another version, is another export.
    assert exported(services, artifact_id, ExportFormat.HTML)[0].export_id != first.export_id
    services.artifacts.add_version(
        ANN, artifact_id, expected_latest=1, body=ContentInput(markdown="# v2\n"), producer="test"
    )
    assert exported(services, artifact_id, version=2)[0].export_id != first.export_id
    with pytest.raises(InvalidRequest, match="no version 7"):
        exported(services, artifact_id, version=7)


def test_a_render_that_cannot_succeed_fails_with_a_sentence_and_leaves_no_file() -> None:
    services = WritingServices()
    tall = Block.model_validate(
        {"kind": "table", "table": {"rows": [["a", "b"], ["w" * 6_000, "y"]], "header_rows": 1}}
    )
    view = services.artifacts.create(
        ANN, collection_id="docs", name="tall", body=ContentInput(blocks=(tall,)), producer="test"
    )
    record, _ = exported(services, view.artifact.artifact_id, ExportFormat.PDF)
    services.render_all()
    failed = current(services, record)
    assert (failed.state, failed.file_id, failed.failure_retryable) == (ExportState.FAILED, None, False)
    assert failed.failure_reason is not None and "taller than a page" in failed.failure_reason
    assert services.fakes.metadata.get_file("acme", record.output_file_id) is None
    # Asked again: the same failure, not a second render.
    again, made = exported(services, view.artifact.artifact_id, ExportFormat.PDF)
    assert (again.export_id, again.state, made) == (record.export_id, ExportState.FAILED, False)
    assert services.queue.submitted == []


def test_a_crash_before_the_rendered_mark_leaves_a_pending_export_the_next_attempt_completes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    services = WritingServices()
    record, _ = exported(services, artifact(services))

    def crash(*_: Any, **__: Any) -> bool:
        raise ConnectionError("the database went away after the file was stored")

    monkeypatch.setattr(services.export_store, "mark_rendered", crash)
    with pytest.raises(ConnectionError):  # the infrastructure failing raises: only that is retried
        services.render_all()
    monkeypatch.undo()
    assert current(services, record).state is ExportState.PENDING
    assert services.exports.get(ANN, record.export_id).download is None
    # The sweep hands it to the worker again; the attempt reuses the file the first one stored.
    later = datetime.now(UTC) + timedelta(hours=1)
    assert services.exports.resubmit_stalled("acme", now=later) == 1
    services.render_all()
    done = current(services, record)
    assert done.state is ExportState.RENDERED and done.render_attempts == 2
    assert done.file_id == record.output_file_id
    assert listed(services) == [done.file_id]


def test_a_job_no_longer_pending_is_done_and_a_lost_submit_is_left_to_the_sweep() -> None:
    services = WritingServices()
    services.queue.unreachable = True
    record, made = exported(services, artifact(services))
    assert made and services.queue.submitted == []  # durable: the sweep submits it again
    services.queue.unreachable = False
    assert services.exports.resubmit_stalled("acme", untouched_since=datetime.now(UTC) + timedelta(seconds=1)) == 1
    services.render_all()
    assert services.exports.render(RenderJob(tenant_id="acme", export_id=record.export_id)) is None
    assert services.exports.render(RenderJob(tenant_id="acme", export_id=uuid.uuid4())) is None


def test_a_deleted_output_says_so_and_is_rendered_again_as_the_next_generation() -> None:
    services = WritingServices()
    artifact_id = artifact(services)
    record, _ = exported(services, artifact_id)
    services.render_all()
    first = current(services, record)
    assert first.file_id is not None
    original = output_bytes(services, first)
    services.fakes.files().delete_file(ANN, first.file_id)
    gone = services.exports.get(ANN, record.export_id)
    assert gone.download is None and gone.gone is not None and "deleted" in gone.gone
    again, made = exported(services, artifact_id)
    assert made and (again.export_id, again.state, again.generation) == (record.export_id, ExportState.PENDING, 1)
    # A late worker of generation 0 changes nothing.
    assert not services.export_store.mark_failed("acme", record.export_id, generation=0, reason="late")
    services.render_all()
    renewed = current(services, record)
    assert renewed.state is ExportState.RENDERED and renewed.file_id not in (None, first.file_id)
    assert output_bytes(services, renewed) == original  # the same content gives the same bytes


def test_a_failure_that_may_pass_is_rendered_again_when_asked_and_leaves_no_file_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    services = WritingServices()
    artifact_id = artifact(services)
    record, _ = exported(services, artifact_id, ExportFormat.HTML)

    def lost(*_: Any, **__: Any) -> Any:
        raise ConnectionError("the bytes did not land")

    monkeypatch.setattr(services.fakes.content, "put", lost)
    with pytest.raises(ConnectionError):
        services.render_all()
    monkeypatch.undo()
    found = services.fakes.metadata.find_version("acme", record.output_version_id)
    assert found is not None and found[1].state is VersionState.PENDING  # the first attempt's file row

    def timed_out(_: ExportRecord) -> Any:
        raise RenderFailed("rendering took longer than 120 seconds (the export limit)", retryable=True)

    monkeypatch.setitem(services.exports._producers, ExportKind.ARTIFACT, timed_out)
    services.exports.render(RenderJob(tenant_id="acme", export_id=record.export_id))
    monkeypatch.undo()
    failed = current(services, record)
    assert failed.state is ExportState.FAILED and failed.failure_retryable
    # Nothing partial: the file row the first attempt made left with the failure.
    found = services.fakes.metadata.find_version("acme", record.output_version_id)
    assert found is None or found[1].state is not VersionState.STORED
    assert listed(services) == []
    again, made = exported(services, artifact_id, ExportFormat.HTML)
    assert made and again.state is ExportState.PENDING
    services.render_all()
    assert current(services, record).state is ExportState.RENDERED


def test_a_stored_file_converts_through_its_block_list_once_it_is_extracted() -> None:
    services = WritingServices()
    source = services.indexed_file(ANN, RUNBOOK, filename="runbook.md")
    record, made = services.exports.convert_file(ANN, source.file_id, version_id=None, export_format=ExportFormat.TEXT)
    assert made and record.kind is ExportKind.CONVERSION and record.source_version_id == source.version_id
    services.render_all()
    done = current(services, record)
    assert done.state is ExportState.RENDERED and done.file_id is not None
    output = services.fakes.metadata.get_file("acme", done.file_id)
    assert output is not None and output.filename == "runbook.txt"
    assert b"Incident ERR-4021" in output_bytes(services, done)
    with pytest.raises(InvalidRequest, match="itself an export"):
        services.exports.convert_file(ANN, done.file_id, version_id=None, export_format=ExportFormat.PDF)
    waiting = services.stored_file(ANN, b"# Not yet\n", filename="later.md", media_type="text/markdown")
    # Refused by the one rule every reader of a document goes by: not yet extracted, so worth trying again.
    with pytest.raises(DocumentNotReady, match="try again shortly") as not_yet:
        services.exports.convert_file(ANN, waiting.file_id, version_id=None, export_format=ExportFormat.PDF)
    assert (not_yet.value.code, not_yet.value.retryable) == ("not_ready", True)
    with pytest.raises(NotFound) as missing:
        services.exports.convert_file(ANN, source.file_id, version_id=uuid.uuid4(), export_format=ExportFormat.PDF)
    assert missing.value.field == "versionId"


@pytest.mark.parametrize(
    "intruder",
    [principal("other-co", "docs"), principal("acme", "elsewhere")],
    ids=["other tenant", "other collection"],
)
def test_every_entry_point_answers_an_unentitled_caller_exactly_as_for_a_random_id(intruder: Principal) -> None:
    services = WritingServices()
    artifact_id = artifact(services)
    record, _ = exported(services, artifact_id)
    services.render_all()
    source = services.stored_file(ANN, b"private words\n", filename="private.txt", media_type="text/plain")
    exports = services.exports
    probes: list[tuple[Any, uuid.UUID]] = [
        (
            lambda target: exports.export_artifact(intruder, target, version=1, export_format=ExportFormat.PDF),
            artifact_id,
        ),
        (lambda target: exports.get(intruder, target), record.export_id),
        (
            lambda target: exports.convert_file(intruder, target, version_id=None, export_format=ExportFormat.PDF),
            source.file_id,
        ),
    ]
    for probe, real in probes:
        with pytest.raises(NotFound) as theirs:
            probe(real)
        with pytest.raises(NotFound) as random:
            probe(uuid.uuid4())
        assert (str(theirs.value), theirs.value.field) == (str(random.value), random.value.field)


def test_a_pdf_operation_records_each_input_file_version_once_as_its_sources() -> None:
    services = WritingServices()
    ticket = services.indexed_file(ANN, RUNBOOK, filename="runbook.md")
    picked = {"fileId": str(ticket.file_id), "versionId": str(ticket.version_id)}
    record, made = services.exports.claim(
        NewExport(
            tenant_id="acme",
            export_id=uuid.uuid4(),
            collection_id="docs",
            kind=ExportKind.PDF,
            format=ExportFormat.PDF,
            operation={"op": "compose", "inputs": [{**picked, "pages": "1"}, {**picked, "pages": "2"}], "name": "x"},
            operation_hash="a" * 64,
            created_by="acme-user",
        )
    )
    assert made
    assert [(s.file_id, s.version_id, s.metadata_revision) for s in record.sources] == [
        (ticket.file_id, ticket.version_id, 0)
    ]
    assert current(services, record).sources == record.sources
