"""FileService.move_file on the fakes: who may move a file, what the refusals say, and that the file's chunks
follow it (the same through the API, on PostgreSQL, is tests/integration/test_file_moves.py)."""

import uuid
from uuid import UUID

import pytest

from shared.domain.auth import Principal, Role
from shared.domain.errors import Conflict, Forbidden, InvalidRequest, NotFound
from shared.domain.files import NewVersion
from shared.domain.uploads import storage_key
from shared.services.files import UploadTicket
from tests.fakes import FakeFileMetadataStore, Fakes, principal

NOTES = b"# Notes\n\nThe launch code is BRAVO-42.\n\n## Later\n\nThe rollback plan lives in the wiki.\n"
ADMIN_OF_BOTH = principal("acme", "docs", "board")


def indexed(fakes: Fakes) -> UploadTicket:
    ticket = fakes.files().start_upload(
        ADMIN_OF_BOTH, collection_id="docs", filename="notes.md", media_type="text/markdown", byte_size=len(NOTES)
    )
    landed = fakes.content.post(ticket.upload, NOTES)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    fakes.pipeline().run(fakes.workflow.started[-1])
    return ticket


def chunk_collections(fakes: Fakes, version_id: UUID) -> set[str]:
    return {chunk.collection_id for chunk in fakes.knowledge.of_version("acme", version_id)}


def test_a_moved_files_chunks_follow_it_and_only_its_new_collection_reads_it() -> None:
    fakes = Fakes()
    ticket = indexed(fakes)
    assert chunk_collections(fakes, ticket.version_id) == {"docs"}
    moved = fakes.files().move_file(ADMIN_OF_BOTH, ticket.file_id, "board")
    assert moved.collection_id == "board"
    assert chunk_collections(fakes, ticket.version_id) == {"board"}
    with pytest.raises(NotFound):
        fakes.files().get_file(principal("acme", "docs", role=Role.READ), ticket.file_id)
    assert fakes.files().get_file(principal("acme", "board", role=Role.READ), ticket.file_id).collection_id == "board"


def test_a_file_moved_while_it_is_processed_is_indexed_in_its_new_collection() -> None:
    fakes = Fakes()
    ticket = fakes.files().start_upload(
        ADMIN_OF_BOTH, collection_id="docs", filename="notes.md", media_type="text/markdown", byte_size=len(NOTES)
    )
    landed = fakes.content.post(ticket.upload, NOTES)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    fakes.files().move_file(ADMIN_OF_BOTH, ticket.file_id, "board")
    fakes.pipeline().run(fakes.workflow.started[-1])
    assert chunk_collections(fakes, ticket.version_id) == {"board"}


@pytest.mark.parametrize(
    ("caller", "error", "names"),
    [
        # A writer of both: the source's admin role is missing first.
        (principal("acme", "docs", "board", role=Role.WRITE), Forbidden, "admin role in collection 'docs'"),
        (
            Principal(tenant_id="acme", subject="s", collections=frozenset({"board"}), administered={"docs"}),
            Forbidden,
            "admin role in collection 'board'",
        ),
        (principal("acme", "docs"), NotFound, "collectionId"),  # the destination is not readable
        (principal("acme", "board"), NotFound, None),  # the file is not readable: as if absent
        (principal("globex", "docs", "board"), NotFound, None),
    ],
)
def test_a_move_needs_admin_of_both_collections_and_a_refusal_changes_nothing(
    caller: Principal, error: type[Exception], names: str | None
) -> None:
    fakes = Fakes()
    ticket = indexed(fakes)
    with pytest.raises(error) as refused:
        fakes.files().move_file(caller, ticket.file_id, "board")
    if isinstance(refused.value, NotFound):
        assert refused.value.field == names
    else:
        assert names is not None and names in str(refused.value)
    assert fakes.files().get_file(ADMIN_OF_BOTH, ticket.file_id).collection_id == "docs"
    assert chunk_collections(fakes, ticket.version_id) == {"docs"}


def test_moving_to_its_own_collection_changes_nothing() -> None:
    fakes = Fakes()
    ticket = indexed(fakes)
    before = fakes.files().get_file(ADMIN_OF_BOTH, ticket.file_id)
    assert fakes.files().move_file(ADMIN_OF_BOTH, ticket.file_id, "docs") == before


def test_an_exports_file_stays_with_its_export() -> None:
    fakes = Fakes()
    file_id, version_id = uuid.uuid4(), uuid.uuid4()
    fakes.metadata.create_version(
        NewVersion(
            tenant_id="acme",
            file_id=file_id,
            version_id=version_id,
            collection_id="docs",
            filename="report.pdf",
            media_type="application/pdf",
            declared_byte_size=10,
            storage_key=storage_key("acme", file_id, version_id),
            created_by="ann",
            export_id=uuid.uuid4(),
        ),
        new_file=True,
    )
    with pytest.raises(InvalidRequest, match="upload it to 'board' instead"):
        fakes.files().move_file(ADMIN_OF_BOTH, file_id, "board")
    assert fakes.files().get_file(ADMIN_OF_BOTH, file_id).collection_id == "docs"


class FakeMovedMeanwhile(FakeFileMetadataStore):
    """Another request moves the file to `archive` between this one's read and its move."""

    def move_file(self, tenant_id: str, file_id: UUID, *, from_collection: str, to_collection: str) -> bool:
        super().move_file(tenant_id, file_id, from_collection=from_collection, to_collection="archive")
        return super().move_file(tenant_id, file_id, from_collection=from_collection, to_collection=to_collection)


def test_a_move_made_against_a_collection_the_file_has_left_is_a_conflict() -> None:
    fakes = Fakes(metadata=FakeMovedMeanwhile())
    ticket = indexed(fakes)
    with pytest.raises(Conflict, match="read it again"):
        fakes.files().move_file(ADMIN_OF_BOTH, ticket.file_id, "board")
    assert fakes.metadata.collection_of("acme", ticket.file_id) == "archive"
