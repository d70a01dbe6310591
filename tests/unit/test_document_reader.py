"""DocumentReader on the fakes: what GET /v1/files/{id}/document and the document tools read, and when they refuse."""

from uuid import UUID, uuid4

import pytest

from shared.domain.auth import Role
from shared.domain.errors import DocumentNotReady, Forbidden, InvalidRequest, NotFound, VersionDeleted
from shared.domain.files import FailureReason, ProcessingState, unreadable
from shared.domain.limits import TenantLimits
from shared.domain.reading import MAX_WINDOW_CHARACTERS
from shared.services.documents import NotAnImage, NothingToCompare
from tests.fakes import Fakes, FakeSummarizer, principal

REPORT = (
    b"# Report\n\nRevenue grew in every region. Costs fell.\n\n## Regions\n\n| Region | Orders |\n| --- | --- |\n"
    b"| North | 14 |\n| South | 9 |\n\nThe north led.\n"
)


def uploaded(fakes: Fakes, body: bytes = REPORT, *, file_id: UUID | None = None, process: bool = True) -> UUID:
    """A markdown file (or a new version of `file_id`) stored and, with `process`, extracted and indexed."""
    files = fakes.files()
    reader = principal("acme", "docs")
    if file_id is None:
        ticket = files.start_upload(
            reader, collection_id="docs", filename="report.md", media_type="text/markdown", byte_size=len(body)
        )
    else:
        ticket = files.start_new_version(
            reader, file_id, filename="report.md", media_type="text/markdown", byte_size=len(body)
        )
    landed = fakes.content.post(ticket.upload, body)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    if process:
        fakes.pipeline().run(fakes.workflow.started[-1])
    return ticket.file_id


def test_a_window_reads_the_newest_document_whole_blocks_and_where_to_continue() -> None:
    fakes = Fakes()
    file_id = uploaded(fakes)
    reader = fakes.reader()
    entitled = reader.entitled(principal("acme", "docs", role=Role.READ), file_id)
    document, shown = reader.window(entitled, 0)
    assert entitled.collection_id == "docs" and shown.start == 0 and shown.next_start is None
    assert [block.text for block in shown.blocks][:1] == ["Report"]
    assert shown.total_blocks == len(document.blocks) > 3


def test_an_unentitled_caller_gets_the_not_found_of_a_missing_file() -> None:
    fakes = Fakes()
    file_id = uploaded(fakes)
    reader = fakes.reader()
    with pytest.raises(NotFound) as other_collection:
        reader.entitled(principal("acme", "finance"), file_id)
    with pytest.raises(NotFound) as other_tenant:
        reader.entitled(principal("globex", "docs"), file_id)
    with pytest.raises(NotFound) as missing:
        reader.entitled(principal("acme", "docs"), uuid4())
    assert type(other_collection.value) is type(other_tenant.value) is type(missing.value) is NotFound


def test_a_version_not_yet_extracted_is_refused_as_retryable_with_its_state() -> None:
    fakes = Fakes()
    file_id = uploaded(fakes, process=False)
    reader = fakes.reader()
    entitled = reader.entitled(principal("acme", "docs"), file_id)
    with pytest.raises(DocumentNotReady) as refused:
        reader.window(entitled, 0)
    assert refused.value.code == "not_ready" and refused.value.retryable
    assert refused.value.processing_state == entitled.version.processing_state.value
    assert unreadable(entitled.version) is not None


@pytest.mark.parametrize(
    ("state", "reason", "code", "retryable"),
    [
        (ProcessingState.FAILED, FailureReason.ENCRYPTED, "extraction_failed", False),
        (ProcessingState.FAILED, FailureReason.TIMED_OUT, "extraction_failed", True),
        (ProcessingState.SKIPPED, None, "not_extracted", False),
        (ProcessingState.INTERRUPTED, None, "not_ready", True),
        (ProcessingState.EXTRACTING, None, "not_ready", True),
    ],
)
def test_why_a_version_has_no_document_and_whether_trying_again_could_help(
    state: ProcessingState, reason: FailureReason | None, code: str, retryable: bool
) -> None:
    fakes = Fakes()
    stored = fakes.reader().entitled(principal("acme", "docs"), uploaded(fakes)).version
    assert unreadable(stored) is None
    refusal = unreadable(stored.model_copy(update={"processing_state": state, "failure_reason": reason}))
    assert refusal is not None and (refusal.code, refusal.retryable) == (code, retryable)
    assert refusal.processing_state == state.value and refusal.reason == (reason.value if reason else None)
    if reason is not None:
        assert str(refusal) == reason.user_sentence


def test_a_cursor_past_the_end_is_a_bad_request_not_an_empty_window() -> None:
    fakes = Fakes()
    reader = fakes.reader()
    entitled = reader.entitled(principal("acme", "docs"), uploaded(fakes))
    with pytest.raises(InvalidRequest, match="cursor is not one this API returned"):
        reader.window(entitled, 10_000)
    with pytest.raises(InvalidRequest, match="past the document's"):
        reader.block_window(entitled, 10_000, 0)
    with pytest.raises(InvalidRequest, match="is not one"):
        reader.block_window(entitled, 0, 5)


def test_a_block_larger_than_a_window_is_read_in_parts_that_cover_it() -> None:
    fakes = Fakes()
    paragraph = " ".join(f"word{index}" for index in range(MAX_WINDOW_CHARACTERS // 3))
    reader = fakes.reader()
    entitled = reader.entitled(principal("acme", "docs"), uploaded(fakes, f"# Big\n\n{paragraph}\n".encode()))
    offset = next(index for index, block in enumerate(reader.document(entitled).blocks) if len(block.text) > 1000)
    pieces, part = [], 0
    while True:
        shown = reader.block_window(entitled, offset, part)
        assert shown.markdown is not None and len(shown.markdown) <= MAX_WINDOW_CHARACTERS + 10
        pieces.append(shown.markdown)
        if shown.next_part is None:
            break
        assert shown.next_offset == offset
        part = shown.next_part
    assert len(pieces) > 1 and "".join(pieces).split() == paragraph.split()


def test_tables_are_windowed_with_their_section() -> None:
    fakes = Fakes()
    reader = fakes.reader()
    shown = reader.table_window(reader.entitled(principal("acme", "docs"), uploaded(fakes)), 0, 0)
    assert shown.total_tables == 1 and shown.next_offset is None
    assert shown.tables[0].text.startswith("Section: Report > Regions") and "| North | 14 |" in shown.tables[0].text
    with pytest.raises(InvalidRequest, match="past the document's 1 tables"):
        reader.table_window(reader.entitled(principal("acme", "docs"), uploaded(fakes)), 2, 0)


def test_without_a_summarizer_the_summary_is_the_outline_and_says_why() -> None:
    fakes = Fakes()
    reader = fakes.reader()
    summary = reader.summarize(principal("acme", "docs"), reader.entitled(principal("acme", "docs"), uploaded(fakes)))
    assert summary.generated is None and summary.outline is not None
    assert summary.reason == "no summarizer in unit tests"
    assert any(section.heading == "Report" for section in summary.outline.sections)


def test_a_summary_by_a_model_is_metered_to_the_documents_collection() -> None:
    fakes = Fakes()
    model = FakeSummarizer(input_tokens=100, output_tokens=20)
    reader = fakes.reader(summarizer=model)
    caller = principal("acme", "docs")
    summary = reader.summarize(caller, reader.entitled(caller, uploaded(fakes)))
    assert summary.generated is not None and summary.outline is None and len(model.calls) == 1
    assert [collection for (_, _, collection) in fakes.ledger.request_rows] == ["docs"]


def test_a_reader_may_not_spend_the_tenants_model_tokens_and_gets_the_outline() -> None:
    fakes = Fakes()
    model = FakeSummarizer()
    reader = fakes.reader(summarizer=model)
    caller = principal("acme", "docs", role=Role.READ)
    summary = reader.summarize(caller, reader.entitled(caller, uploaded(fakes)))
    assert summary.generated is None and model.calls == []
    assert summary.reason is not None and "spends the tenant's model tokens" in summary.reason


def test_a_tenant_past_its_daily_generation_tokens_gets_the_outline() -> None:
    fakes = Fakes()
    model = FakeSummarizer(input_tokens=100, output_tokens=20)
    reader = fakes.reader(summarizer=model, limits=TenantLimits(generation_tokens_per_day=50))
    caller = principal("acme", "docs")
    entitled = reader.entitled(caller, uploaded(fakes))
    assert reader.summarize(caller, entitled).generated is not None
    spent = reader.summarize(caller, entitled)
    assert spent.generated is None and spent.reason is not None and "outline" in spent.reason
    assert len(model.calls) == 1


def test_the_previous_version_with_a_document_is_what_a_comparison_starts_from() -> None:
    fakes = Fakes()
    caller = principal("acme", "docs")
    file_id = uploaded(fakes)
    reader = fakes.reader()
    with pytest.raises(NothingToCompare) as alone:
        reader.previous_version(reader.entitled(caller, file_id).record, None)
    assert alone.value.code == "nothing_to_compare"
    first = reader.entitled(caller, file_id).version.version_id
    uploaded(fakes, REPORT.replace(b"| North | 14 |", b"| North | 15 |"), file_id=file_id)
    newest = reader.entitled(caller, file_id)
    assert reader.previous_version(newest.record, None) == first
    compared = reader.compare(reader.entitled(caller, file_id, first), newest)
    assert not compared.diff.identical and len(compared.diff.tables_changed) == 1


def test_a_deleted_version_is_told_as_deleted_to_a_reader_of_its_collection() -> None:
    fakes = Fakes()
    caller = principal("acme", "docs")
    file_id = uploaded(fakes)
    reader = fakes.reader()
    first = reader.entitled(caller, file_id).version.version_id
    fakes.files().delete_file(caller, file_id)
    with pytest.raises(VersionDeleted) as told:
        reader.entitled(caller, file_id, first)
    assert told.value.code == "deleted"
    with pytest.raises(NotFound) as stranger:
        reader.entitled(principal("acme", "finance"), file_id, first)
    assert type(stranger.value) is NotFound


def test_analyze_image_refuses_a_file_that_is_not_an_image_naming_the_tool_to_use() -> None:
    fakes = Fakes()
    reader = fakes.reader()
    with pytest.raises(NotAnImage, match="call extract_text") as refused:
        reader.analyze_image(reader.entitled(principal("acme", "docs"), uploaded(fakes)))
    assert refused.value.code == "not_an_image"


def test_a_rescan_needs_the_write_role_and_an_ocr_engine() -> None:
    fakes = Fakes()
    file_id = uploaded(fakes)
    reader = fakes.reader()
    with pytest.raises(Forbidden):
        reader.scan(principal("acme", "docs", role=Role.READ), file_id)
    with pytest.raises(InvalidRequest, match="only PDFs and images are scanned"):
        reader.scan(principal("acme", "docs"), file_id)
