"""UploadCompletion on the fakes: an Object Created event is a claim about a key, checked before a version is
stored, and acted on at most once (tests/integration/test_event_delivery.py runs the same on the real stack)."""

import io
import uuid
import zipfile
from datetime import timedelta

import pytest

from shared.domain.files import ProcessingState, VersionState
from shared.services import upload_completion
from shared.services.files import UploadTicket
from shared.services.upload_completion import Completion
from tests.builders.office import word_document
from tests.fakes import Clock, FakeFileMetadataStore, Fakes, principal

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def ticket(
    fakes: Fakes, *, filename: str = "r.pdf", media_type: str = "application/pdf", size: int = len(PDF)
) -> UploadTicket:
    return fakes.files().start_upload(
        principal("acme", "docs"), collection_id="docs", filename=filename, media_type=media_type, byte_size=size
    )


def test_a_landed_object_is_stored_and_its_processing_started_once() -> None:
    fakes = Fakes()
    upload = ticket(fakes)
    landed = fakes.content.post(upload.upload, PDF)
    completion = fakes.completion()
    assert completion.object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None
    version = found[1]
    assert (version.state, version.byte_size, version.storage_version_id) == (
        VersionState.STORED,
        len(PDF),
        landed.version_id,
    )
    assert (version.processing_state, version.processing_attempt) == (ProcessingState.QUEUED, 1)
    assert [(r.version_id, r.attempt) for r in fakes.workflow.started] == [(str(upload.version_id), 1)]
    # A redelivery changes nothing and starts nothing.
    assert completion.object_created(landed.key, landed.version_id, landed.byte_size) is Completion.DUPLICATE
    assert len(fakes.workflow.started) == 1


def test_bytes_that_are_not_what_was_declared_are_rejected_with_the_reason() -> None:
    fakes = Fakes()
    upload = ticket(fakes)
    landed = fakes.content.post(upload.upload, b"MZ\x90\x00 an executable, not a PDF at all")
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.REJECTED
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None
    version = found[1]
    assert version.state is VersionState.REJECTED
    assert version.rejection_reason is not None and "the content is not" in version.rejection_reason
    assert "application/pdf" in version.rejection_reason
    assert fakes.workflow.started == []


def test_an_empty_object_is_rejected_saying_to_upload_again() -> None:
    # Given a store that does not enforce the POST policy's size range (moto's does not)
    fakes = Fakes()
    upload = ticket(fakes)
    landed = fakes.content.post(upload.upload, b"")
    assert fakes.completion().object_created(landed.key, landed.version_id, 0) is Completion.REJECTED
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None
    assert found[1].state is VersionState.REJECTED
    assert found[1].rejection_reason == f"0 bytes arrived but {len(PDF)} were declared: upload the file again"
    assert fakes.workflow.started == []


def test_more_bytes_than_declared_are_rejected_naming_both_sizes() -> None:
    fakes = Fakes()
    upload = ticket(fakes, size=10)
    landed = fakes.content.post(upload.upload, PDF)  # the store did not enforce the policy (moto does not)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.REJECTED
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None
    assert found[1].rejection_reason == f"{len(PDF)} bytes arrived but 10 were declared"


def test_a_key_quire_never_handed_out_is_ignored() -> None:
    fakes = Fakes()
    upload = ticket(fakes)
    real = fakes.content.post(upload.upload, PDF)
    completion = fakes.completion()
    forged = f"tenants/acme/files/{uuid.uuid4()}/versions/{uuid.uuid4()}"
    fakes.content.put(forged, PDF, content_type="application/pdf")
    assert completion.object_created(forged, "v", len(PDF)) is Completion.UNKNOWN_KEY
    assert completion.object_created("not/a/storage/key", "v", 1) is Completion.UNKNOWN_KEY
    # A real key moved under another tenant is not that tenant's upload.
    intruder = real.key.replace("tenants/acme/", "tenants/intruder/")
    assert completion.object_created(intruder, real.version_id, real.byte_size) is Completion.UNKNOWN_KEY
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None and found[1].state is VersionState.PENDING
    assert fakes.workflow.started == []


def test_an_unreachable_workflow_leaves_the_upload_stored_and_a_redelivery_asks_again() -> None:
    fakes = Fakes()
    upload = ticket(fakes)
    landed = fakes.content.post(upload.upload, PDF)
    completion = fakes.completion()
    fakes.workflow.unreachable = True
    assert completion.object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None
    # Released, so asking again is possible: not queued for an attempt nobody will run.
    assert (found[1].state, found[1].processing_state) == (VersionState.STORED, ProcessingState.NOT_STARTED)
    fakes.workflow.unreachable = False
    assert completion.object_created(landed.key, landed.version_id, landed.byte_size) is Completion.DUPLICATE
    assert [r.attempt for r in fakes.workflow.started] == [2]


def test_bytes_arriving_for_a_deleted_version_are_discarded() -> None:
    fakes = Fakes()
    upload = ticket(fakes)
    fakes.files().delete_file(principal("acme", "docs"), upload.file_id)
    landed = fakes.content.post(upload.upload, PDF)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.DISCARDED
    assert fakes.content.head(landed.key) is None
    assert fakes.workflow.started == []


def test_a_second_object_under_a_decided_key_is_removed_and_the_recorded_one_kept() -> None:
    fakes = Fakes()
    upload = ticket(fakes)
    first = fakes.content.post(upload.upload, PDF)
    completion = fakes.completion()
    assert completion.object_created(first.key, first.version_id, first.byte_size) is Completion.STORED
    second = fakes.content.post(upload.upload, PDF + b"%again")  # the form posted twice
    outcome = completion.object_created(second.key, second.version_id, second.byte_size)
    assert outcome is Completion.UNEXPECTED_OBJECT_VERSION
    assert [o.version_id for o in fakes.content.object_versions(first.key)] == [first.version_id]


def test_a_silent_attempt_past_the_threshold_is_asked_for_again_as_a_new_attempt() -> None:
    fakes = Fakes(metadata=FakeFileMetadataStore(Clock(behind=timedelta(hours=1))))  # its rows are an hour old
    upload = ticket(fakes)
    landed = fakes.content.post(upload.upload, PDF)
    completion = fakes.completion(stale_after=timedelta(minutes=30))
    completion.object_created(landed.key, landed.version_id, landed.byte_size)
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None
    record, version = found
    assert fakes.completion(stale_after=timedelta(hours=2)).request_processing("acme", record.file_id, version) == (
        "already_started"
    )
    assert completion.request_processing("acme", record.file_id, version) == "started"
    assert [r.attempt for r in fakes.workflow.started] == [1, 2]


DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def test_an_office_upload_is_checked_by_its_zip_directory_and_stored() -> None:
    fakes = Fakes()
    document = word_document()
    upload = ticket(fakes, filename="notes.docx", media_type=DOCX, size=len(document))
    landed = fakes.content.post(upload.upload, document)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED


def test_a_zip_declared_as_a_word_document_is_rejected_naming_what_it_is() -> None:
    fakes = Fakes()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("readme.txt", "not a document")
    upload = ticket(fakes, filename="notes.docx", media_type=DOCX, size=len(archive.getvalue()))
    landed = fakes.content.post(upload.upload, archive.getvalue())
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.REJECTED
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None
    assert found[1].rejection_reason == (
        f"the content is not a Word document (.docx) as declared ({DOCX}): it looks like a zip archive"
    )


def test_the_zip_directory_is_parsed_inside_the_bounded_sandbox_not_in_the_event_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a parse allowed no memory at all: in the sandbox's child it cannot run, and the upload is refused
    # with a sentence; parsed in this process (as before), the same document would be stored.
    monkeypatch.setattr(upload_completion, "SNIFF_MEMORY_BYTES", 1, raising=False)
    fakes = Fakes()
    document = word_document()
    upload = ticket(fakes, filename="notes.docx", media_type=DOCX, size=len(document))
    landed = fakes.content.post(upload.upload, document)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.REJECTED
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None
    assert found[1].rejection_reason == (
        f"the content could not be checked as {DOCX}: its archive could not be read safely; save the file again"
        " and upload it"
    )
