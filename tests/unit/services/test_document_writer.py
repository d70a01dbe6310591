"""DocumentWriter on the fakes (tests/builders/writing_services.py), with the real parser and renderers in their
child: proposals checked against the version they name and applied into a new version (a dry run writes nothing,
a stale base is a conflict, a bad operation names itself); replacements that change nothing until an admin
approves them, decided once, expiring, refused when stale; one not-found for the unentitled
(tests/integration/test_document_writing_api.py runs the same over HTTP on the real stack)."""

import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import TypeAdapter

from shared.domain.artifacts import VersionConflict
from shared.domain.auth import Principal, Role, with_role
from shared.domain.document import Block, BlockKind
from shared.domain.errors import Conflict, Forbidden, InvalidRequest, NotFound, UnsupportedMediaType
from shared.domain.files import VersionState
from shared.domain.proposals import Operation, ReplacementState
from shared.services.artifacts import ContentInput
from shared.services.document_writing import ReplacementAlreadyDecided, staged_replacement_key
from shared.services.files import UploadTicket
from tests.builders.writing_services import WritingServices
from tests.fakes import principal

ANN = principal("acme", "docs")
OPERATIONS = TypeAdapter(list[Operation])
POLICY = b"# Policy\n\nExpenses above 500 EUR need approval.\n"


def operations(*raw: dict[str, Any]) -> Sequence[Operation]:
    return OPERATIONS.validate_python(list(raw))


def artifact(services: WritingServices) -> uuid.UUID:
    body = ContentInput(
        blocks=(
            Block(kind=BlockKind.HEADING, text="Report", level=1),
            Block(kind=BlockKind.PARAGRAPH, text="Revenue grew."),
            Block(kind=BlockKind.HEADING, text="Risks", level=2),
            Block.model_validate({"kind": "table", "table": {"rows": [["Region", "Revenue"], ["North", "12"]]}}),
        )
    )
    return services.artifacts.create(ANN, collection_id="docs", name="Q3", body=body, producer="t").artifact.artifact_id


def propose(
    services: WritingServices, artifact_id: uuid.UUID, base: int, *raw: dict[str, Any], dry: bool = False
) -> Any:
    return services.document_writer.propose(
        ANN, artifact_id, base_version=base, operations=operations(*raw), dry_run=dry, producer="test"
    )


def test_operations_apply_in_order_into_a_new_version_and_a_dry_run_writes_nothing() -> None:
    services = WritingServices()
    artifact_id = artifact(services)
    edits = (
        {"op": "insert", "after": "b2", "blocks": [{"kind": "paragraph", "text": "A new paragraph."}]},
        {"op": "move", "blockId": "b4", "after": "b1"},
        {"op": "set_cell", "blockId": "b4", "row": 1, "column": 1, "text": "9.5"},
        {"op": "rename_heading", "blockId": "b3", "text": "Risks and mitigations"},
    )
    dry = propose(services, artifact_id, 1, *edits, dry=True)
    assert dry.dry_run and dry.applied is None and dry.proposal_id is None
    assert [change.op for change in dry.changes] == ["insert", "move", "set_cell", "rename_heading"]
    assert services.artifact_store.get("acme", artifact_id).latest_version == 1  # type: ignore[union-attr]
    applied = propose(services, artifact_id, 1, *edits)
    assert applied.changes == dry.changes  # the writer is deterministic
    assert applied.applied is not None and applied.applied.version.version == 2
    after = applied.applied.content.blocks
    assert [(block.id, block.text) for block in after] == [
        ("b1", "Report"),
        ("b4", ""),
        ("b2", "Revenue grew."),
        ("b5", "A new paragraph."),
        ("b3", "Risks and mitigations"),
    ]
    assert after[1].table is not None and after[1].table.rows[1] == ("North", "9.5")
    provenance = applied.applied.version.provenance
    assert provenance.proposal_id == applied.proposal_id and provenance.inputs["baseVersion"] == 1
    (stored,) = services.artifact_store.proposals.values()
    assert (stored[0], stored[1].proposal_id, stored[2], len(stored[1].operations)) == (
        artifact_id,
        applied.proposal_id,
        2,
        4,
    )
    # The original version is as it was.
    original = services.artifacts.get(ANN, artifact_id, version=1).content.blocks
    assert [block.id for block in original] == ["b1", "b2", "b3", "b4"]


def test_a_stale_base_is_a_conflict_and_a_bad_operation_names_itself_and_writes_nothing() -> None:
    services = WritingServices()
    artifact_id = artifact(services)
    propose(services, artifact_id, 1, {"op": "delete", "blockId": "b2"})
    with pytest.raises(VersionConflict) as stale:
        propose(services, artifact_id, 1, {"op": "delete", "blockId": "b1"})
    assert stale.value.latest_version == 2
    for edit, words in (
        ({"op": "delete", "blockId": "b2"}, "operations[0] (delete): the version has no block 'b2'"),
        ({"op": "rename_heading", "blockId": "b9", "text": "x"}, "no block 'b9'"),
        ({"op": "set_cell", "blockId": "b1", "row": 0, "column": 0, "text": "x"}, "is a heading, not a table"),
        ({"op": "set_cell", "blockId": "b4", "row": 5, "column": 0, "text": "x"}, "so no row 5"),
    ):
        with pytest.raises(InvalidRequest, match=re.escape(words)):
            propose(services, artifact_id, 2, edit)
    with pytest.raises(InvalidRequest, match="1 to 500 operations"):
        propose(services, artifact_id, 2)
    assert services.artifact_store.get("acme", artifact_id).latest_version == 2  # type: ignore[union-attr]


def indexed_policy(services: WritingServices, body: bytes = POLICY) -> UploadTicket:
    return services.indexed_file(ANN, body, filename="policy.md")


def replace(services: WritingServices, file_id: uuid.UUID, markdown: str, caller: Principal = ANN) -> Any:
    return services.document_writer.propose_replacement(
        caller, file_id, version_id=None, body=ContentInput(markdown=markdown)
    )


def test_a_replacement_changes_nothing_until_approved_then_arrives_through_the_upload_path() -> None:
    services = WritingServices()
    original = indexed_policy(services)
    pending = replace(services, original.file_id, "# Policy\n\nExpenses above 900 EUR need approval.\n")
    assert (pending.state, pending.new_version_id, pending.media_type) == (
        ReplacementState.PENDING,
        None,
        "text/markdown",
    )
    staged = services.fakes.content.get(pending.staged_key, max_bytes=10**6)
    assert b"900 EUR" in staged and pending.staged_key == staged_replacement_key("acme", pending.replacement_id)
    file = services.fakes.metadata.get_file("acme", original.file_id)
    assert file is not None and len(file.versions) == 1  # nothing changed
    assert services.document_writer.accounts_for(pending.staged_key) is True
    approved = services.document_writer.approve(ANN, pending.replacement_id)
    assert (approved.state, approved.decided_by, approved.new_version_id) == (
        ReplacementState.APPROVED,
        "acme-user",
        pending.planned_version_id,
    )
    # A pending version whose bytes landed under its key: the upload check stores it as any upload.
    planned = services.version("acme", pending.planned_version_id)
    assert planned.state is VersionState.PENDING
    assert services.fakes.content.get(planned.storage_key, max_bytes=10**6) == staged
    services.fakes.completion().object_created(planned.storage_key, None, len(staged))
    file = services.fakes.metadata.get_file("acme", original.file_id)
    assert file is not None and file.current.version_id == pending.planned_version_id and len(file.versions) == 2
    # Approving again finishes nothing twice; rejecting now is too late.
    assert services.document_writer.approve(ANN, pending.replacement_id).new_version_id == approved.new_version_id
    with pytest.raises(ReplacementAlreadyDecided, match="already approved"):
        services.document_writer.reject(ANN, pending.replacement_id)


def test_rejected_expired_and_stale_replacements_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    services = WritingServices()
    writer = services.document_writer
    original = indexed_policy(services)
    rejected = replace(services, original.file_id, "# Rejected\n")
    assert writer.reject(ANN, rejected.replacement_id).state is ReplacementState.REJECTED
    with pytest.raises(ReplacementAlreadyDecided, match="already rejected"):
        writer.approve(ANN, rejected.replacement_id)
    expiring = replace(services, original.file_id, "# Too late\n")
    monkeypatch.setattr(writer, "_clock", lambda: datetime.now(UTC) + timedelta(days=8))
    assert writer.replacement(ANN, expiring.replacement_id).state is ReplacementState.EXPIRED
    with pytest.raises(ReplacementAlreadyDecided, match="expired"):
        writer.approve(ANN, expiring.replacement_id)
    monkeypatch.undo()
    stale, newer = replace(services, original.file_id, "# Stale\n"), replace(services, original.file_id, "# Newer\n")
    writer.approve(ANN, newer.replacement_id)
    planned = services.version("acme", newer.planned_version_id)
    services.fakes.completion().object_created(planned.storage_key, None, newer.byte_size)
    with pytest.raises(Conflict, match="newer version"):
        writer.approve(ANN, stale.replacement_id)
    file = services.fakes.metadata.get_file("acme", original.file_id)
    assert file is not None and [v.version_id for v in file.versions] == [newer.planned_version_id, original.version_id]


def test_a_replacement_is_in_the_files_own_format_and_carries_no_citations() -> None:
    services = WritingServices()
    image = services.stored_file(ANN, b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, filename="chart.png", media_type="image/png")
    with pytest.raises(UnsupportedMediaType, match=f"/v1/files/{image.file_id}/versions"):
        replace(services, image.file_id, "x")
    original = indexed_policy(services)
    for extra in ({"citations": ("c-1",)}, {"sources": ({"file_id": uuid.uuid4()},)}):
        body = ContentInput.model_validate({"markdown": "# New\n", **extra})
        with pytest.raises(InvalidRequest, match="carries no citations or sources"):
            services.document_writer.propose_replacement(ANN, original.file_id, version_id=None, body=body)
    assert services.replacement_store.records == {}


def test_a_writer_proposes_a_replacement_and_only_an_admin_decides_it() -> None:
    services = WritingServices()
    original = indexed_policy(services)
    writer = with_role("acme", "wes", ("docs",), Role.WRITE)
    pending = replace(services, original.file_id, "# Proposed\n", caller=writer)
    for decide in (services.document_writer.approve, services.document_writer.reject):
        with pytest.raises(Forbidden):
            decide(writer, pending.replacement_id)
    assert services.document_writer.replacement(writer, pending.replacement_id).state is ReplacementState.PENDING


@pytest.mark.parametrize(
    "intruder",
    [principal("other-co", "docs"), principal("acme", "elsewhere")],
    ids=["other tenant", "other collection"],
)
def test_every_entry_point_answers_an_unentitled_caller_exactly_as_for_a_random_id(intruder: Principal) -> None:
    services = WritingServices()
    artifact_id = artifact(services)
    original = indexed_policy(services)
    pending = replace(services, original.file_id, "# New\n")
    writer = services.document_writer
    delete_b1 = operations({"op": "delete", "blockId": "b1"})
    probes: list[tuple[Any, uuid.UUID]] = [
        (
            lambda target: writer.propose(
                intruder, target, base_version=1, operations=delete_b1, dry_run=False, producer="t"
            ),
            artifact_id,
        ),
        (lambda target: replace(services, target, "# Theirs\n", caller=intruder), original.file_id),
        (lambda target: writer.replacement(intruder, target), pending.replacement_id),
        (lambda target: writer.approve(intruder, target), pending.replacement_id),
        (lambda target: writer.reject(intruder, target), pending.replacement_id),
    ]
    for probe, real in probes:
        with pytest.raises(NotFound) as theirs:
            probe(real)
        with pytest.raises(NotFound) as random:
            probe(uuid.uuid4())
        assert (str(theirs.value), theirs.value.field) == (str(random.value), random.value.field)
    assert writer.replacement(ANN, pending.replacement_id).state is ReplacementState.PENDING
