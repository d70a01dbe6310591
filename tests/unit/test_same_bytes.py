"""The same bytes uploaded twice into one collection (`duplicateOf`), on the fakes with the real pipeline: the bytes'
SHA-256 recorded when the extract step reads them, the file view naming the earlier version, the ticket naming it
when the declared hash matches, and never a refusal (tests/integration/test_duplicates_api.py runs the same over
HTTP)."""

import base64
import hashlib
import json

import pytest

from shared.domain.errors import InvalidRequest
from shared.domain.files import FileVersionRecord, ProcessingState, VersionState
from shared.services.files import UploadTicket
from tests.fakes import Fakes, principal

NOTES = b"# Notes\n\nThe warehouse closes at noon on Fridays.\n"
OTHER = b"# Other\n\nDeliveries arrive on Tuesdays.\n"


def upload(
    fakes: Fakes, body: bytes, *, name: str = "notes.md", collection: str = "docs", sha256: str | None = None
) -> UploadTicket:
    """A Markdown file uploaded, stored and processed to the end; its ticket."""
    ticket = fakes.files().start_upload(
        principal("acme", "docs", "board"),
        collection_id=collection,
        filename=name,
        media_type="text/markdown",
        byte_size=len(body),
        sha256=sha256,
    )
    landed = fakes.content.post(ticket.upload, body)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    fakes.pipeline().run(fakes.workflow.started[-1])
    return ticket


def current(fakes: Fakes, ticket: UploadTicket) -> FileVersionRecord:
    return fakes.files().get_file(principal("acme", "docs", "board"), ticket.file_id).current


def test_processing_records_the_bytes_sha256_and_a_second_copy_names_the_first() -> None:
    fakes = Fakes()
    first = upload(fakes, NOTES)
    second = upload(fakes, NOTES, name="notes (1).md")
    other = upload(fakes, OTHER, name="other.md")
    assert current(fakes, first).content_sha256 == hashlib.sha256(NOTES).hexdigest()
    copy = current(fakes, second)
    assert copy.processing_state is ProcessingState.INDEXED  # taken and processed, not refused
    assert copy.duplicate_of is not None
    assert (copy.duplicate_of.file_id, copy.duplicate_of.version_id) == (first.file_id, first.version_id)
    assert copy.duplicate_of.filename == "notes.md"
    # The first upload is the original: it names nothing, and neither do other bytes.
    assert current(fakes, first).duplicate_of is None and current(fakes, other).duplicate_of is None
    # A third copy names the first, not the second.
    third = current(fakes, upload(fakes, NOTES, name="notes (2).md"))
    assert third.duplicate_of is not None and third.duplicate_of.file_id == first.file_id


def test_the_same_bytes_in_another_collection_are_not_a_duplicate() -> None:
    fakes = Fakes()
    upload(fakes, NOTES, collection="board")
    copy = upload(fakes, NOTES)
    assert current(fakes, copy).content_sha256 == hashlib.sha256(NOTES).hexdigest()
    assert current(fakes, copy).duplicate_of is None


def test_a_declared_sha256_names_the_earlier_version_in_the_ticket_and_is_signed_into_the_post() -> None:
    fakes = Fakes()
    first = upload(fakes, NOTES)
    digest = hashlib.sha256(NOTES).hexdigest()
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="again.md",
        media_type="text/markdown",
        byte_size=len(NOTES),
        sha256=digest.upper(),  # any case; stored in lower case
    )
    assert ticket.duplicate_of is not None
    assert (ticket.duplicate_of.file_id, ticket.duplicate_of.version_id) == (first.file_id, first.version_id)
    assert ticket.upload.fields["sha256"] == digest
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].state is VersionState.PENDING and found[1].declared_sha256 == digest
    # Bytes nobody uploaded before: a ticket naming nothing.
    fresh = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="new.md",
        media_type="text/markdown",
        byte_size=len(OTHER),
        sha256=hashlib.sha256(OTHER).hexdigest(),
    )
    assert fresh.duplicate_of is None


def test_a_declared_hash_is_only_a_declaration_the_file_view_goes_by_the_bytes_read() -> None:
    fakes = Fakes()
    upload(fakes, NOTES)
    # Declared as NOTES, posted as OTHER (S3 refuses such a POST on AWS; the fakes, like moto, take it).
    lying = upload(fakes, OTHER, name="other.md", sha256=hashlib.sha256(NOTES).hexdigest())
    version = current(fakes, lying)
    assert version.declared_sha256 == hashlib.sha256(NOTES).hexdigest()
    assert version.content_sha256 == hashlib.sha256(OTHER).hexdigest()
    assert version.duplicate_of is None


def test_a_deleted_earlier_copy_is_no_longer_named() -> None:
    fakes = Fakes()
    first = upload(fakes, NOTES)
    second = upload(fakes, NOTES, name="copy.md")
    fakes.files().delete_file(principal("acme", "docs"), first.file_id)
    assert current(fakes, second).duplicate_of is None


@pytest.mark.parametrize("junk", ["abc", "g" * 64, "0" * 63, "0" * 65])
def test_a_malformed_declared_hash_is_refused_naming_the_field(junk: str) -> None:
    fakes = Fakes()
    with pytest.raises(InvalidRequest, match="sha256: must be the SHA-256 of the file's bytes as 64 hexadecimal"):
        fakes.files().start_upload(
            principal("acme", "docs"),
            collection_id="docs",
            filename="notes.md",
            media_type="text/markdown",
            byte_size=3,
            sha256=junk,
        )
    assert fakes.metadata.tenant_ids() == []


def test_on_s3_a_declared_sha256_is_a_field_of_the_post_and_a_condition_of_its_signed_policy() -> None:
    from datetime import timedelta

    from shared.adapters.aws.s3_content_store import CHECKSUM_FIELD, S3ContentStore
    from tests.builders.aws import offline_client

    client = offline_client("s3")
    store = S3ContentStore(lambda: client, "quire-originals")
    digest = hashlib.sha256(NOTES).hexdigest()
    upload = store.signed_upload(
        "tenants/acme/files/f/versions/v",
        content_type="text/markdown",
        max_bytes=len(NOTES),
        lifetime=timedelta(minutes=5),
        sha256=digest,
    )
    checksum = base64.b64encode(hashlib.sha256(NOTES).digest()).decode()  # S3 writes checksums in base64
    assert upload.fields[CHECKSUM_FIELD] == checksum
    policy = json.loads(base64.b64decode(upload.fields["policy"]))
    assert {CHECKSUM_FIELD: checksum} in policy["conditions"]
    plain = store.signed_upload(
        "tenants/acme/files/f/versions/w", content_type="text/markdown", max_bytes=9, lifetime=timedelta(minutes=5)
    )
    assert (
        CHECKSUM_FIELD not in plain.fields and CHECKSUM_FIELD not in base64.b64decode(plain.fields["policy"]).decode()
    )


def test_the_cli_says_a_files_bytes_were_in_the_collection_already() -> None:
    from shared.cli.files import file_line

    current = {"state": "stored", "byteSize": 10, "declaredByteSize": 10, "duplicateOf": None}
    record = {"fileId": "f2", "collectionId": "docs", "filename": "b.pdf", "current": current}
    assert "same bytes" not in file_line(record)
    current["duplicateOf"] = {"fileId": "f1", "versionId": "v1", "filename": "a.pdf"}
    assert file_line(record).endswith("[same bytes as a.pdf f1]")
