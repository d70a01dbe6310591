"""PdfTools on the fakes (tests/builders/writing_services.py), with pypdf in its child through the export worker:
merge, split, watermark, compose and a cited report as new files; inputs never change; the same operation is one
result; a bad input fails its result with a sentence; bad requests name the problem and the limit; unentitled
inputs are not found exactly like random ids (tests/integration/test_pdf_tools_api.py runs the same over HTTP)."""

import io
import uuid
from typing import Any

import pytest
from pypdf import PdfReader, PdfWriter

from shared.domain.auth import Principal, Role, with_role
from shared.domain.errors import Forbidden, InvalidRequest, NotFound, PayloadTooLarge
from shared.domain.exports import ExportKind, ExportRecord, ExportState, RenderLimits
from shared.domain.pdf_tools import MAX_PDF_INPUTS, MAX_SPLIT_PARTS, MAX_WATERMARK_CHARS
from shared.services.artifacts import ContentInput
from shared.services.pdf_tools import PdfSource
from tests.builders.pdf import page_texts, pdf_of, top_level_outline
from tests.builders.writing_services import WritingServices
from tests.fakes import principal

ANN = principal("acme", "docs")


def stored_pdf(services: WritingServices, name: str, content: bytes, collection: str = "docs") -> uuid.UUID:
    both = principal("acme", "docs", "hr")
    return services.stored_file(
        both, content, filename=name, media_type="application/pdf", collection=collection
    ).file_id


def rendered(services: WritingServices, records: list[ExportRecord]) -> list[ExportRecord]:
    services.render_all()
    done = [services.export_store.get(record.tenant_id, record.export_id) for record in records]
    assert all(record is not None for record in done)
    return done  # type: ignore[return-value]


def output(services: WritingServices, record: ExportRecord) -> bytes:
    assert record.state is ExportState.RENDERED and record.file_id is not None, record
    file = services.fakes.metadata.get_file(record.tenant_id, record.file_id)
    assert file is not None
    return services.fakes.content.get(file.current.storage_key, max_bytes=10**7)


def test_merge_split_watermark_and_compose_make_new_files_and_leave_the_inputs_alone() -> None:
    services = WritingServices()
    tools = services.pdf_tools
    first_bytes, second_bytes = pdf_of("A1", "A2", "A3"), pdf_of("B1", "B2")
    first, second = stored_pdf(services, "a.pdf", first_bytes), stored_pdf(services, "b.pdf", second_bytes)

    (merged,) = rendered(
        services, tools.merge(ANN, [PdfSource(first), PdfSource(second)], name="ab", collection_id=None)
    )
    content = output(services, merged)
    assert page_texts(content) == ["A1", "A2", "A3", "B1", "B2"] and merged.page_count == 5
    assert [item.title for item in top_level_outline(PdfReader(io.BytesIO(content)))] == ["a.pdf", "b.pdf"]
    file = services.fakes.metadata.get_file("acme", merged.file_id)  # type: ignore[arg-type]
    assert file is not None and file.filename == "ab.pdf" and merged.kind is ExportKind.PDF

    parts = rendered(services, tools.split(ANN, PdfSource(first), ["1", "2-"]))
    assert [page_texts(output(services, part)) for part in parts] == [["A1"], ["A2", "A3"]]

    (stamped,) = rendered(services, tools.watermark(ANN, PdfSource(second), text="DRAFT", opacity=0.3))
    assert all("DRAFT" in text for text in page_texts(output(services, stamped)))

    pages = [PdfSource(second, pages="2"), PdfSource(first, pages="3,1")]
    (composed,) = rendered(services, tools.compose(ANN, pages, name=None, collection_id=None))
    assert page_texts(output(services, composed)) == ["B2", "A3", "A1"]

    # The originals are exactly what was uploaded.
    for file_id, original in ((first, first_bytes), (second, second_bytes)):
        record = services.fakes.metadata.get_file("acme", file_id)
        assert record is not None and len(record.versions) == 1
        assert services.fakes.content.get(record.current.storage_key, max_bytes=10**7) == original
    # The same operation on the same versions is the same result, not a second render.
    (again,) = tools.merge(ANN, [PdfSource(first), PdfSource(second)], name="ab", collection_id=None)
    assert again.export_id == merged.export_id and services.queue.submitted == []


def test_a_bad_input_fails_its_result_with_a_sentence() -> None:
    services = WritingServices()
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_of("secret"))))
    writer.encrypt("pw")
    locked_bytes = io.BytesIO()
    writer.write(locked_bytes)
    locked = stored_pdf(services, "locked.pdf", locked_bytes.getvalue())
    plain = stored_pdf(services, "plain.pdf", pdf_of("P1", "P2"))
    (failed,) = rendered(
        services, services.pdf_tools.merge(ANN, [PdfSource(plain), PdfSource(locked)], name=None, collection_id=None)
    )
    assert failed.state is ExportState.FAILED and "locked.pdf is encrypted" in (failed.failure_reason or "")
    (missing,) = rendered(services, services.pdf_tools.split(ANN, PdfSource(plain), ["3-4"]))
    assert missing.state is ExportState.FAILED and "plain.pdf has 2 pages" in (missing.failure_reason or "")
    assert services.fakes.metadata.get_file("acme", missing.output_file_id) is None  # nothing partial


def test_bad_requests_name_the_problem_and_the_limit() -> None:
    services = WritingServices()
    tools = services.pdf_tools
    plain = stored_pdf(services, "plain.pdf", pdf_of("P1", "P2"))
    with pytest.raises(InvalidRequest, match=r"ranges\[0\]"):
        tools.split(ANN, PdfSource(plain), ["two"])
    with pytest.raises(InvalidRequest, match=f"between 1 and {MAX_SPLIT_PARTS} ranges"):
        tools.split(ANN, PdfSource(plain), ["1"] * (MAX_SPLIT_PARTS + 1))
    with pytest.raises(InvalidRequest, match=f"between 2 and {MAX_PDF_INPUTS} PDFs"):
        tools.merge(ANN, [PdfSource(plain)], name=None, collection_id=None)
    with pytest.raises(InvalidRequest, match=f"1 to {MAX_WATERMARK_CHARS} characters"):
        tools.watermark(ANN, PdfSource(plain), text="x" * (MAX_WATERMARK_CHARS + 1), opacity=0.3)
    with pytest.raises(InvalidRequest, match=r"opacity must be between 0\.05 and 1"):
        tools.watermark(ANN, PdfSource(plain), text="x", opacity=2)
    with pytest.raises(InvalidRequest, match="name no pages"):
        tools.watermark(ANN, PdfSource(plain, pages="1"), text="x", opacity=0.3)
    with pytest.raises(InvalidRequest, match="compose names the pages"):
        tools.compose(ANN, [PdfSource(plain)], name=None, collection_id=None)
    text = services.stored_file(ANN, b"just text\n", filename="notes.txt", media_type="text/plain").file_id
    with pytest.raises(InvalidRequest, match=r"sources\[0\] \(notes.txt\) is not a PDF"):
        tools.watermark(ANN, PdfSource(text), text="x", opacity=0.3)
    assert services.queue.submitted == []


def test_the_inputs_together_are_bounded_by_the_render_limit() -> None:
    services = WritingServices(render_limits=RenderLimits(max_bytes=1_000))
    big = stored_pdf(services, "big.pdf", pdf_of(*[f"page {n} " + "x" * 80 for n in range(8)]))
    with pytest.raises(PayloadTooLarge, match="the limit is 1000"):
        services.pdf_tools.merge(ANN, [PdfSource(big), PdfSource(big)], name=None, collection_id=None)


def test_a_result_lives_in_its_inputs_collection_and_needs_the_writer_role_there() -> None:
    services = WritingServices()
    both = principal("acme", "docs", "hr")
    docs, hr = stored_pdf(services, "d.pdf", pdf_of("D")), stored_pdf(services, "h.pdf", pdf_of("H"), "hr")
    with pytest.raises(InvalidRequest, match="one collection"):
        services.pdf_tools.merge(both, [PdfSource(docs), PdfSource(hr)], name=None, collection_id=None)
    with pytest.raises(InvalidRequest, match="one collection"):
        services.pdf_tools.merge(both, [PdfSource(docs), PdfSource(docs)], name=None, collection_id="hr")
    reader = with_role("acme", "rita", ("docs",), Role.READ)
    with pytest.raises(Forbidden):
        services.pdf_tools.watermark(reader, PdfSource(docs), text="x", opacity=0.3)


@pytest.mark.parametrize(
    "intruder",
    [principal("other-co", "docs"), principal("acme", "other")],
    ids=["other tenant", "other collection"],
)
def test_inputs_the_caller_cannot_read_are_not_found_exactly_like_random_ids(intruder: Principal) -> None:
    services = WritingServices()
    theirs = stored_pdf(services, "private.pdf", pdf_of("private"))
    tools = services.pdf_tools
    probes: list[Any] = [
        lambda f: tools.merge(intruder, [PdfSource(f), PdfSource(f)], name=None, collection_id=None),
        lambda f: tools.split(intruder, PdfSource(f), ["1"]),
        lambda f: tools.watermark(intruder, PdfSource(f), text="x", opacity=0.3),
        lambda f: tools.compose(intruder, [PdfSource(f, pages="1")], name=None, collection_id=None),
    ]
    for probe in probes:
        with pytest.raises(NotFound) as real:
            probe(theirs)
        with pytest.raises(NotFound) as random:
            probe(uuid.uuid4())
        assert (str(real.value), real.value.field) == (str(random.value), random.value.field)


def test_create_makes_a_cited_report_artifact_and_its_pdf() -> None:
    services = WritingServices()
    body = ContentInput(markdown="# Weekly\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n")
    view, record = services.pdf_tools.create(ANN, collection_id="docs", name="Weekly", body=body)
    assert view.version.provenance.producer == "create_pdf"
    assert (record.kind, record.artifact_id, record.version) == (ExportKind.ARTIFACT, view.artifact.artifact_id, 1)
    (done,) = rendered(services, [record])
    assert page_texts(output(services, done))[0].startswith("Weekly")
