"""ArtifactService on the fakes (tests/builders/writing_services.py), with the real Markdown parser in its child:
versions by compare-and-set, restore, citations and sources from the caller's own collection, one not-found for
the unentitled and the missing, content written before its row, and the limits named in their refusals
(tests/integration/test_artifacts_api.py runs the same over HTTP on the real stack)."""

import re
import uuid
from typing import Any

import pytest

from shared.domain.artifacts import ArtifactLimits, SourceRef, VersionConflict, content_hash, merged_sources
from shared.domain.auth import Principal, Role, with_role
from shared.domain.document import Block, BlockKind
from shared.domain.errors import Forbidden, InvalidRequest, NotFound, PayloadTooLarge
from shared.services.artifacts import ArtifactView, ContentInput, SourceInput, parse_blocks
from tests.builders.writing_services import WritingServices
from tests.fakes import principal

ANN = principal("acme", "docs")
RUNBOOK = b"# Payments runbook\n\n## Incident ERR-4021\n\nCheckout failed because the TLS certificate expired.\n"


def blocks(*texts: str) -> ContentInput:
    return ContentInput(blocks=tuple(Block(kind=BlockKind.PARAGRAPH, text=text) for text in texts))


def cited(text: str, *chunk_ids: str) -> ContentInput:
    return ContentInput(blocks=(Block(kind=BlockKind.PARAGRAPH, text=text),), citations=chunk_ids)


def made(services: WritingServices, caller: Principal = ANN, body: ContentInput | None = None) -> ArtifactView:
    return services.artifacts.create(
        caller, collection_id="docs", name="Q3", body=body or blocks("First draft."), producer="test"
    )


def test_markdown_becomes_blocks_with_ids_and_the_provenance_says_how_it_was_made() -> None:
    services = WritingServices()
    view = made(services, body=ContentInput(markdown="# Quarterly report\n\nRevenue rose.\n\n- North\n- South\n"))
    assert (view.artifact.latest_version, view.version.version, view.artifact.created_by) == (1, 1, "acme-user")
    assert [(b.kind, b.id) for b in view.content.blocks] == [
        (BlockKind.HEADING, "b1"),
        (BlockKind.PARAGRAPH, "b2"),
        (BlockKind.LIST_ITEM, "b3"),
        (BlockKind.LIST_ITEM, "b4"),
    ]
    provenance = view.version.provenance
    assert provenance.producer == "test"
    assert (provenance.inputs["contentFormat"], provenance.inputs["name"]) == ("markdown", "Q3")
    assert services.artifacts.get(ANN, view.artifact.artifact_id).content == view.content


def test_content_is_exactly_one_of_markdown_and_blocks_and_a_bad_block_says_where() -> None:
    services = WritingServices()
    for body in (ContentInput(markdown="x", blocks=()), ContentInput()):
        with pytest.raises(InvalidRequest, match="exactly one"):
            made(services, body=body)
    with pytest.raises(InvalidRequest, match=r"^blocks\[1\]\.kind"):
        parse_blocks([{"kind": "paragraph", "text": "ok"}, {"kind": "poem"}])
    with pytest.raises(InvalidRequest, match="200"):
        services.artifacts.create(ANN, collection_id="docs", name="n" * 201, body=blocks("x"), producer="test")
    assert services.artifact_store.artifacts == {}


def test_a_new_version_is_a_compare_and_set_and_a_stale_writer_is_told_the_current_version() -> None:
    services = WritingServices()
    artifact_id = made(services).artifact.artifact_id
    second = services.artifacts.add_version(
        ANN, artifact_id, expected_latest=1, body=blocks("Second draft."), producer="test"
    )
    assert (second.artifact.latest_version, second.version.provenance.inputs["expectedLatestVersion"]) == (2, 1)
    with pytest.raises(VersionConflict, match="at version 2, not 1") as stale:
        services.artifacts.add_version(ANN, artifact_id, expected_latest=1, body=blocks("Stale."), producer="test")
    assert stale.value.latest_version == 2
    _, history = services.artifacts.history(ANN, artifact_id)
    assert [v.version for v in history] == [1, 2]


def test_restore_is_a_new_version_sharing_the_restored_content() -> None:
    services = WritingServices()
    first = made(services)
    artifact_id = first.artifact.artifact_id
    services.artifacts.add_version(ANN, artifact_id, expected_latest=1, body=blocks("Second draft."), producer="t")
    restored = services.artifacts.restore(ANN, artifact_id, version=1, expected_latest=2, producer="test")
    assert restored.artifact.latest_version == 3 and restored.version.provenance.restored_from == 1
    assert restored.version.content_key == first.version.content_key  # one object: content is immutable
    assert restored.content.blocks[0].text == "First draft."
    assert services.artifacts.get(ANN, artifact_id, version=2).content.blocks[0].text == "Second draft."
    with pytest.raises(InvalidRequest, match="no version 9"):
        services.artifacts.restore(ANN, artifact_id, version=9, expected_latest=3, producer="test")
    with pytest.raises(InvalidRequest, match="no version 7"):
        services.artifacts.get(ANN, artifact_id, version=7)


def test_citations_snapshot_stored_chunks_and_their_versions_join_the_provenance() -> None:
    services = WritingServices()
    ticket = services.indexed_file(ANN, RUNBOOK, filename="runbook.md")
    chunk_id = next(c for c in services.chunk_ids("acme", ticket.version_id))
    view = made(
        services,
        body=cited("The certificate expired [1].", chunk_id).model_copy(
            update={"sources": (SourceInput(file_id=ticket.file_id),)}
        ),
    )
    (citation,) = view.content.citations
    assert (citation.number, citation.chunk_id, citation.citation.filename) == (1, chunk_id, "runbook.md")
    assert citation.citation.version_id == str(ticket.version_id)
    (source,) = view.version.provenance.sources
    assert (source.file_id, source.version_id, source.chunk_ids) == (ticket.file_id, ticket.version_id, (chunk_id,))
    # A marker with no citation behind it is refused, naming it.
    with pytest.raises(InvalidRequest, match=r"\[2\]"):
        made(services, body=cited("See [2].", chunk_id))


def test_merged_sources_give_every_version_of_a_file_the_newest_metadata_snapshot_read_of_it() -> None:
    contract, first, second = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    merged = merged_sources(
        [
            SourceRef(
                file_id=contract,
                version_id=first,
                chunk_ids=("c1",),
                metadata={"customer": "acme"},
                metadata_revision=0,
            ),
            SourceRef(file_id=contract, version_id=second, metadata={"customer": "globex"}, metadata_revision=1),
            SourceRef(file_id=contract, version_id=first, chunk_ids=("c0",), metadata={}, metadata_revision=None),
        ]
    )
    assert [(s.version_id, s.chunk_ids, s.metadata, s.metadata_revision) for s in merged] == sorted(
        [(first, ("c0", "c1"), {"customer": "globex"}, 1), (second, (), {"customer": "globex"}, 1)],
        key=lambda entry: str(entry[0]),
    )


def test_a_chunk_or_file_the_caller_cannot_read_is_not_found_exactly_like_a_random_one() -> None:
    services = WritingServices()
    ticket = services.indexed_file(ANN, RUNBOOK, filename="runbook.md")
    chunk_id = services.chunk_ids("acme", ticket.version_id)[0]
    outsider = principal("acme", "elsewhere")

    def refusal(body: ContentInput) -> tuple[str, str | None]:
        with pytest.raises(NotFound) as raised:
            services.artifacts.create(outsider, collection_id="elsewhere", name="x", body=body, producer="t")
        return str(raised.value), raised.value.field

    theirs = refusal(cited("x [1]", chunk_id))
    assert theirs == refusal(cited("x [1]", f"{uuid.uuid4()}:0"))
    assert theirs[1] == "citations[0]"
    theirs = refusal(blocks("x").model_copy(update={"sources": (SourceInput(file_id=ticket.file_id),)}))
    assert theirs == refusal(blocks("x").model_copy(update={"sources": (SourceInput(file_id=uuid.uuid4()),)}))
    assert theirs[1] == "sources[0]"


def test_an_artifact_cites_and_derives_from_its_own_collection_only() -> None:
    services = WritingServices()
    both = principal("acme", "docs", "hr")
    ticket = services.indexed_file(both, RUNBOOK, collection="hr")
    chunk_id = services.chunk_ids("acme", ticket.version_id)[0]
    for body, where in (
        (cited("x [1]", chunk_id), "citations[0]"),
        (blocks("x").model_copy(update={"sources": (SourceInput(file_id=ticket.file_id),)}), "sources[0]"),
    ):
        with pytest.raises(InvalidRequest, match=re.escape(f"{where} is in collection 'hr'")):
            made(services, both, body)


@pytest.mark.parametrize(
    "intruder",
    [principal("other-co", "docs"), principal("acme", "elsewhere")],
    ids=["other tenant", "other collection"],
)
def test_every_entry_point_answers_an_unentitled_caller_exactly_as_for_a_random_id(intruder: Principal) -> None:
    services = WritingServices()
    artifact_id = made(services).artifact.artifact_id
    artifacts = services.artifacts
    probes: list[Any] = [
        lambda target: artifacts.get(intruder, target),
        lambda target: artifacts.get(intruder, target, version=1),
        lambda target: artifacts.history(intruder, target),
        lambda target: artifacts.add_version(intruder, target, expected_latest=1, body=blocks("Mine."), producer="t"),
        lambda target: artifacts.restore(intruder, target, version=1, expected_latest=1, producer="t"),
    ]
    for probe in probes:
        with pytest.raises(NotFound) as theirs:
            probe(artifact_id)
        with pytest.raises(NotFound) as random:
            probe(uuid.uuid4())
        assert (str(theirs.value), theirs.value.field) == (str(random.value), random.value.field)
    listed, _ = artifacts.list_artifacts(intruder, collection_id=None, limit=10, after=None)
    assert artifact_id not in {a.artifact_id for a in listed}
    assert [v.version for v in artifacts.history(ANN, artifact_id)[1]] == [1]


def test_a_reader_reads_but_writing_needs_the_writer_role() -> None:
    services = WritingServices()
    artifact_id = made(services).artifact.artifact_id
    reader = with_role("acme", "rita", ("docs",), Role.READ)
    assert services.artifacts.get(reader, artifact_id).artifact.artifact_id == artifact_id
    with pytest.raises(Forbidden):
        services.artifacts.add_version(reader, artifact_id, expected_latest=1, body=blocks("x"), producer="t")
    with pytest.raises(Forbidden):
        services.artifacts.create(reader, collection_id="docs", name="x", body=blocks("x"), producer="t")


def test_content_is_written_before_its_row_and_every_row_names_content_that_matches_its_hash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    services = WritingServices()

    def crash(*_: object, **__: object) -> None:
        raise ConnectionError("the database went away after the content was written")

    monkeypatch.setattr(services.artifact_store, "create", crash)
    with pytest.raises(ConnectionError):
        made(services)
    (written,) = services.fakes.content.keys()
    assert services.artifacts.accounts_for(written) is False  # waste, reported; never a row without content
    monkeypatch.undo()
    view = made(services)
    for version in services.artifact_store.versions("acme", view.artifact.artifact_id, after=None, limit=10):
        assert content_hash(services.fakes.content.get(version.content_key, max_bytes=10**7)) == version.content_hash
        assert services.artifacts.accounts_for(version.content_key) is True
    assert services.artifacts.accounts_for("tenants/acme/files/x") is None


def test_content_over_a_limit_is_refused_naming_the_limit() -> None:
    limits = ArtifactLimits(max_blocks=5, max_table_columns=3, max_citations=2, max_markdown_bytes=100)
    services = WritingServices(artifact_limits=limits)
    with pytest.raises((InvalidRequest, PayloadTooLarge), match="5"):
        made(services, body=blocks(*["x"] * 6))
    wide = Block.model_validate({"kind": "table", "table": {"rows": [["c"] * 4]}})
    with pytest.raises(PayloadTooLarge, match="3"):
        made(services, body=ContentInput(blocks=(wide,)))
    with pytest.raises(PayloadTooLarge, match="3 citations; the limit is 2"):
        made(services, body=cited("x", "a:0", "b:0", "c:0"))
    with pytest.raises(PayloadTooLarge, match="the limit is 100"):
        made(services, body=ContentInput(markdown="x" * 101))
    with pytest.raises(InvalidRequest, match="limit must be between 1 and 100"):
        services.artifacts.history(ANN, uuid.uuid4(), limit=101)
    assert services.artifact_store.artifacts == {}


def test_the_list_shows_the_readable_collections_newest_first_in_pages() -> None:
    services = WritingServices()
    both = principal("acme", "docs", "hr")
    ids = [
        services.artifacts.create(both, collection_id=c, name=c, body=blocks("x"), producer="t").artifact.artifact_id
        for c in ("docs", "hr", "docs")
    ]
    page, more = services.artifacts.list_artifacts(both, collection_id=None, limit=2, after=None)
    assert ([a.artifact_id for a in page], more) == (ids[::-1][:2], True)
    page, more = services.artifacts.list_artifacts(both, collection_id=None, limit=2, after=page[-1].artifact_id)
    assert ([a.artifact_id for a in page], more) == ([ids[0]], False)
    only_docs, _ = services.artifacts.list_artifacts(ANN, collection_id=None, limit=10, after=None)
    assert {a.collection_id for a in only_docs} == {"docs"}
