"""FileService on the fakes: upload tickets, refusals before anything is recorded, entitlement, listing,
reads and deletion (the HTTP view of the same is tests/integration/test_files_api.py)."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.errors import InvalidRequest, NotFound, NotReady, PayloadTooLarge, UnsupportedMediaType
from shared.domain.files import ProcessingState, SignedRead, VersionState
from shared.domain.uploads import storage_key
from shared.ports import MAX_SIGNED_READ_LIFETIME
from shared.services.files import UploadTicket
from tests.fakes import Fakes, principal

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def test_starting_an_upload_records_a_pending_version_and_signs_exactly_its_key() -> None:
    fakes = Fakes()
    caller = principal("acme", "docs")
    ticket = fakes.files().start_upload(
        caller, collection_id="docs", filename="reports/q3.pdf", media_type="application/pdf", byte_size=len(PDF)
    )
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    record, version = found
    assert (record.file_id, record.collection_id, record.filename) == (ticket.file_id, "docs", "reports_q3.pdf")
    assert (version.state, version.processing_state) == (VersionState.PENDING, ProcessingState.NOT_STARTED)
    assert version.declared_byte_size == len(PDF)
    key = storage_key("acme", ticket.file_id, ticket.version_id)
    assert (version.storage_key, ticket.upload.fields["key"]) == (key, key)
    assert ticket.upload.fields["Content-Type"] == "application/pdf"
    assert fakes.content.keys() == []  # nothing is stored until the client posts the bytes


@pytest.mark.parametrize(
    ("filename", "media_type", "byte_size", "error"),
    [
        ("big.pdf", "application/pdf", 1024 * 1024 + 1, PayloadTooLarge),
        ("empty.pdf", "application/pdf", 0, InvalidRequest),
        ("tool.exe", "application/x-msdownload", 10, UnsupportedMediaType),
        ("notes.txt", "application/pdf", 10, UnsupportedMediaType),  # a PDF must be named .pdf
    ],
)
def test_a_refused_upload_records_and_signs_nothing(
    filename: str, media_type: str, byte_size: int, error: type[Exception]
) -> None:
    fakes = Fakes()
    with pytest.raises(error):
        fakes.files().start_upload(
            principal("acme", "docs"),
            collection_id="docs",
            filename=filename,
            media_type=media_type,
            byte_size=byte_size,
        )
    assert fakes.metadata.tenant_ids() == []


def test_a_declared_language_is_recorded_as_its_iso_code_and_an_unknown_one_is_refused_naming_the_fix() -> None:
    fakes = Fakes()
    caller = principal("acme", "docs")

    def upload(language: str) -> UploadTicket:
        return fakes.files().start_upload(
            caller,
            collection_id="docs",
            filename="vertrag.pdf",
            media_type="application/pdf",
            byte_size=9,
            language=language,
        )

    ticket = upload("de-CH")
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].declared_language == "de"
    for junk in ("klingon", ""):
        with pytest.raises(InvalidRequest, match=r"language: .* ISO 639-1"):
            upload(junk)
    listed, _ = fakes.metadata.list_files("acme", frozenset({"docs"}), collection_id=None, limit=10, after=None)
    assert [record.file_id for record in listed] == [ticket.file_id]  # the refused ones recorded nothing


def test_the_size_refusal_names_the_limit() -> None:
    with pytest.raises(PayloadTooLarge, match=str(1024 * 1024)):
        Fakes().files().start_upload(
            principal("acme", "docs"),
            collection_id="docs",
            filename="big.pdf",
            media_type="application/pdf",
            byte_size=10**9,
        )


def test_an_unentitled_collection_is_not_found_and_nothing_is_recorded() -> None:
    fakes = Fakes()
    with pytest.raises(NotFound):
        fakes.files().start_upload(
            principal("acme", "docs"), collection_id="hr", filename="a.pdf", media_type="application/pdf", byte_size=9
        )
    assert fakes.metadata.tenant_ids() == []


def test_a_file_is_not_found_by_another_tenant_or_an_unentitled_caller() -> None:
    fakes = Fakes()
    service = fakes.files()
    ticket = service.start_upload(
        principal("acme", "hr"), collection_id="hr", filename="pay.pdf", media_type="application/pdf", byte_size=9
    )
    assert service.get_file(principal("acme", "hr"), ticket.file_id).file_id == ticket.file_id
    with pytest.raises(NotFound, match=r"^not found$"):
        service.get_file(principal("acme", "docs"), ticket.file_id)
    with pytest.raises(NotFound, match=r"^not found$"):
        service.get_file(principal("globex", "hr"), ticket.file_id)
    with pytest.raises(NotFound, match=r"^not found$"):
        service.get_file(principal("acme", "hr"), uuid.uuid4())


def test_listing_pages_through_entitled_files_newest_first() -> None:
    fakes = Fakes()
    service = fakes.files()
    caller = principal("acme", "docs", "hr")
    tickets = [
        service.start_upload(caller, collection_id=c, filename="f.pdf", media_type="application/pdf", byte_size=9)
        for c in ("docs", "docs", "hr")
    ]
    first = service.list_files(principal("acme", "docs"), collection_id=None, limit=1, cursor=None)
    assert [f.file_id for f in first.files] == [tickets[1].file_id] and first.next_cursor
    rest = service.list_files(principal("acme", "docs"), collection_id=None, limit=10, cursor=first.next_cursor)
    assert [f.file_id for f in rest.files] == [tickets[0].file_id] and rest.next_cursor is None
    with pytest.raises(InvalidRequest):
        service.list_files(caller, collection_id=None, limit=0, cursor=None)
    with pytest.raises(InvalidRequest):
        service.list_files(caller, collection_id=None, limit=10, cursor="not-a-cursor")


def test_a_stored_version_is_read_through_a_clamped_signed_url_and_a_pending_one_is_not_ready() -> None:
    fakes = Fakes()
    service = fakes.files()
    caller = principal("acme", "docs")
    ticket = service.start_upload(
        caller, collection_id="docs", filename="r.pdf", media_type="application/pdf", byte_size=len(PDF)
    )
    with pytest.raises(NotReady, match="pending"):
        service.read(caller, ticket.file_id, version_id=None, lifetime=timedelta(minutes=5))
    landed = fakes.content.post(ticket.upload, PDF)
    assert fakes.metadata.mark_stored(
        "acme", ticket.version_id, byte_size=landed.byte_size, storage_version_id=landed.version_id
    )
    signed = service.read(caller, ticket.file_id, version_id=None, lifetime=timedelta(days=1))
    assert isinstance(signed, SignedRead)
    assert landed.version_id is not None and landed.version_id in signed.url
    assert signed.expires_at <= datetime.now(UTC) + MAX_SIGNED_READ_LIFETIME


def test_deleting_a_file_hides_it_at_once_and_leaves_the_bytes_to_the_sweep() -> None:
    fakes = Fakes()
    service = fakes.files()
    caller = principal("acme", "docs")
    ticket = service.start_upload(
        caller, collection_id="docs", filename="r.pdf", media_type="application/pdf", byte_size=len(PDF)
    )
    fakes.content.post(ticket.upload, PDF)
    with pytest.raises(NotFound):
        service.delete_file(principal("acme", "hr"), ticket.file_id)  # not entitled: as if absent
    service.delete_file(caller, ticket.file_id)
    with pytest.raises(NotFound):
        service.get_file(caller, ticket.file_id)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].state is VersionState.DELETING
    assert fakes.content.head(found[1].storage_key) is not None


def test_deleting_a_collection_takes_its_pending_uploads_and_needs_entitlement() -> None:
    fakes = Fakes()
    service = fakes.files()
    caller = principal("acme", "docs", "hr")
    for collection in ("docs", "docs", "hr"):
        service.start_upload(
            caller, collection_id=collection, filename="f.pdf", media_type="application/pdf", byte_size=9
        )
    with pytest.raises(NotFound):
        service.delete_collection_files(principal("acme", "hr"), "docs")
    assert service.delete_collection_files(caller, "docs").versions_deleting == 2
    listed = service.list_files(caller, collection_id=None, limit=10, cursor=None)
    assert [f.collection_id for f in listed.files] == ["hr"]
