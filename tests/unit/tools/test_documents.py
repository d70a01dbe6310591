"""The document tools (functions/tools/documents.py) over the fakes: windows and where they continue, tables in
pages, summaries (an outline, or a model's checked sentences), comparisons, and each refusal with its code, the tool
to call instead and the collection the audit records it in (tests/unit/test_document_reader.py tests the service)."""

import uuid

import pytest

from functions.tools import documents
from shared.domain.auth import Role
from shared.domain.reading import MAX_WINDOW_CHARACTERS
from shared.services.documents import MAX_TABLES_PER_CALL
from tests.builders.tool_services import ToolServicesOverFakes, fenced_text
from tests.fakes import FakeSummarizer, principal

ANN = principal("acme", "docs")
READER = principal("acme", "docs", role=Role.READ)
REPORT = (
    b"# Report\n\nRevenue grew in every region. Costs fell.\n\n## Regions\n\n| Region | Orders |\n| --- | --- |\n"
    b"| North | 14 |\n| South | 9 |\n\nThe north led.\n"
)


@pytest.fixture
def services() -> ToolServicesOverFakes:
    return ToolServicesOverFakes()


def test_extract_text_is_a_fenced_markdown_window_with_each_blocks_place(services: ToolServicesOverFakes) -> None:
    file_id = services.markdown(ANN, REPORT)
    ran = services.run(documents.extract_text, READER, fileId=file_id)
    window = ran.wire()
    assert window["fileId"] == str(file_id) and window["versionId"] == str(services.newest_version(ANN, file_id))
    assert (window["offset"], window["part"], window["nextOffset"], window["nextPart"]) == (0, 0, None, None)
    assert window["totalBlocks"] == len(window["blocks"]) > 3
    assert [block["index"] for block in window["blocks"]] == list(range(window["totalBlocks"]))
    assert {"lineStart", "kind"} <= set(window["blocks"][0])
    text = ran.unfenced(window["content"])
    assert text.startswith("# Report") and "| North | 14 |" in text
    assert ran.touched == {"docs"}


def test_extract_text_reads_a_block_larger_than_a_window_in_parts_that_cover_it(
    services: ToolServicesOverFakes,
) -> None:
    # Given a paragraph three windows long
    paragraph = " ".join(f"word{index}" for index in range(MAX_WINDOW_CHARACTERS // 3))
    file_id = services.markdown(ANN, f"# Big\n\n{paragraph}\n".encode())
    # When it is read from its block on, part after part
    offset, part, pieces = 1, 0, []
    while True:
        ran = services.run(documents.extract_text, ANN, fileId=file_id, offset=offset, part=part)
        pieces.append(ran.unfenced(ran.result.content))
        if ran.result.next_part is None:
            break
        assert ran.result.next_offset == offset and len(ran.result.content) <= MAX_WINDOW_CHARACTERS + 200
        part = ran.result.next_part
    # Then the parts are the paragraph, whole
    assert len(pieces) > 1 and "".join(pieces).split() == paragraph.split()


def test_a_cursor_the_tool_never_returned_is_invalid_arguments_audited_in_the_files_collection(
    services: ToolServicesOverFakes,
) -> None:
    file_id = services.markdown(ANN, REPORT)
    past = services.refused("extract_text", ANN, fileId=file_id, offset=10_000)
    assert past["error"] == "invalid_arguments" and "past the document's" in past["message"]
    assert services.last_audited.collection_ids == ("docs",)
    not_a_part = services.refused("extract_tables", ANN, fileId=file_id, part=3)
    assert not_a_part["error"] == "invalid_arguments"


def test_a_document_not_yet_extracted_is_not_ready_pointing_at_its_status_and_audited_in_its_collection(
    services: ToolServicesOverFakes,
) -> None:
    file_id = services.markdown(ANN, REPORT, process=False)
    for name in ("extract_text", "extract_tables", "summarize_document"):
        refused = services.refused(name, READER, fileId=file_id)
        assert (refused["error"], refused["retryable"], refused["nextTool"]) == (
            "not_ready",
            True,
            "get_file_processing_status",
        )
        assert (services.last_audited.collection_ids, services.last_audited.outcome) == (("docs",), "not_ready")


def test_a_deleted_version_is_told_as_deleted_pointing_at_list_files(services: ToolServicesOverFakes) -> None:
    file_id = services.markdown(ANN, REPORT)
    first = services.newest_version(ANN, file_id)
    services.files.delete_file(ANN, file_id)
    refused = services.refused("extract_text", ANN, fileId=file_id, versionId=first)
    assert (refused["error"], refused["nextTool"]) == ("deleted", "list_files")
    stranger = services.refused("extract_text", principal("acme", "finance"), fileId=file_id, versionId=first)
    assert stranger["error"] == "not_found"


def test_a_deleted_version_is_audited_in_the_collection_it_was_refused_in(services: ToolServicesOverFakes) -> None:
    file_id = services.markdown(ANN, REPORT)
    first = services.newest_version(ANN, file_id)
    services.files.delete_file(ANN, file_id)
    services.refused("extract_text", ANN, fileId=file_id, versionId=first)
    assert services.last_audited.collection_ids == ("docs",)


def test_extract_tables_pages_through_the_tables_each_fenced_with_its_section(services: ToolServicesOverFakes) -> None:
    # Given more small tables than one call returns
    count = MAX_TABLES_PER_CALL + 2
    body = "# Tables\n\n" + "".join(
        f"## T{n}\n\n| Key | Value |\n| --- | --- |\n| k{n} | {n} |\n\n" for n in range(count)
    )
    file_id = services.markdown(ANN, body.encode())
    # When they are read from the start, then from nextOffset
    first = services.run(documents.extract_tables, READER, fileId=file_id)
    rest = services.run(documents.extract_tables, READER, fileId=file_id, offset=first.result.next_offset)
    # Then each call's tables are numbered on, located, counted, and fenced
    assert (first.result.total_tables, first.result.next_offset, len(first.result.tables)) == (
        count,
        MAX_TABLES_PER_CALL,
        MAX_TABLES_PER_CALL,
    )
    assert [table.index for table in rest.result.tables] == [count - 2, count - 1] and rest.result.next_offset is None
    table = rest.wire()["tables"][-1]
    assert (table["headerRows"], table["rowCount"], table["columnCount"]) == (1, 2, 2)
    assert table["location"]["kind"] == "table"
    assert rest.unfenced(table["content"]).startswith(f"Section: Tables > T{count - 1}")


def test_without_a_summarizer_summarize_document_is_a_cited_outline_saying_why(
    services: ToolServicesOverFakes,
) -> None:
    file_id = services.markdown(ANN, REPORT)
    ran = services.run(documents.summarize_document, ANN, fileId=file_id)
    summary = ran.wire()
    assert (summary["method"], summary["generator"], summary["model"]) == (
        "extractive",
        "no summarizer in unit tests",
        None,
    )
    outline = ran.unfenced(summary["content"])
    assert outline.startswith("# Report\n- Revenue grew in every region. [b1]") and "## Regions" in outline
    assert summary["sections"][0]["sentences"][0]["blockIndex"] == 1 and summary["sentences"] == []


def test_a_summarizer_writes_cited_sentences_and_the_uncited_one_is_dropped() -> None:
    services = ToolServicesOverFakes(summarizer=FakeSummarizer())
    file_id = services.markdown(ANN, REPORT)
    ran = services.run(documents.summarize_document, ANN, fileId=file_id)
    summary = ran.wire()
    assert (summary["method"], summary["model"], summary["generator"], summary["dropped"]) == (
        "generated",
        "fake-summarizer",
        None,
        1,
    )
    assert summary["sentences"] and all(sentence["blockIndexes"] for sentence in summary["sentences"])
    assert ran.unfenced(summary["content"]).startswith("- It says: Report. [b0]")
    assert "invented" not in summary["content"] and summary["sections"] == []


def test_a_reader_is_given_the_outline_since_a_model_summary_spends_the_tenants_tokens() -> None:
    model = FakeSummarizer()
    services = ToolServicesOverFakes(summarizer=model)
    file_id = services.markdown(ANN, REPORT)
    summary = services.run(documents.summarize_document, READER, fileId=file_id).result
    assert summary.method == "extractive" and model.calls == []
    assert summary.generator is not None and "spends the tenant's model tokens" in summary.generator


def test_compare_documents_compares_the_previous_version_by_default(services: ToolServicesOverFakes) -> None:
    # Given a file whose second version changes one table cell
    file_id = services.markdown(ANN, REPORT)
    first = services.newest_version(ANN, file_id)
    services.markdown(ANN, REPORT.replace(b"| North | 14 |", b"| North | 15 |"), file_id=file_id)
    # When it is compared with no other named
    outcome = services.call("compare_documents", READER, fileId=file_id)
    # Then the previous version is before, the newest after, and the change is fenced
    assert not outcome.is_error, outcome.content
    compared = outcome.content
    assert compared["before"]["versionId"] == str(first)
    assert compared["after"]["versionId"] == str(services.newest_version(ANN, file_id))
    assert (compared["identical"], compared["tablesChanged"]) == (False, 1)
    assert fenced_text(compared["before"]["filename"]) == "report.md" and "15" in fenced_text(compared["content"])
    assert compared["details"] and services.last_audited.collection_ids == ("docs",)


def test_compare_documents_compares_with_another_file_named(services: ToolServicesOverFakes) -> None:
    report = services.markdown(ANN, REPORT)
    copy = services.markdown(ANN, REPORT, filename="copy.md")
    ran = services.run(documents.compare_documents, ANN, fileId=report, otherFileId=copy)
    assert (ran.result.before.file_id, ran.result.after.file_id, ran.result.identical) == (report, copy, True)
    unseen = services.refused("compare_documents", ANN, fileId=report, otherFileId=uuid.uuid4())
    assert unseen["error"] == "not_found"


def test_a_file_with_one_version_has_nothing_to_compare_and_is_audited_in_its_collection(
    services: ToolServicesOverFakes,
) -> None:
    file_id = services.markdown(ANN, REPORT)
    refused = services.refused("compare_documents", ANN, fileId=file_id)
    assert (refused["error"], refused["nextTool"]) == ("nothing_to_compare", "list_files")
    assert services.last_audited.collection_ids == ("docs",)


def test_analyze_image_refuses_a_document_that_is_not_an_image_naming_extract_text(
    services: ToolServicesOverFakes,
) -> None:
    file_id = services.markdown(ANN, REPORT)
    refused = services.refused("analyze_image", ANN, fileId=file_id)
    assert (refused["error"], refused["nextTool"]) == ("not_an_image", "extract_text")
    assert services.last_audited.collection_ids == ("docs",)


def test_scan_document_needs_the_write_role_and_a_pdf_or_image(services: ToolServicesOverFakes) -> None:
    file_id = services.markdown(ANN, REPORT)
    forbidden = services.refused("scan_document", READER, fileId=file_id)
    assert forbidden["error"] == "forbidden" and services.last_audited.collection_ids == ("docs",)
    not_scannable = services.refused("scan_document", ANN, fileId=file_id)
    assert not_scannable["error"] == "invalid_arguments" and "only PDFs and images" in not_scannable["message"]
