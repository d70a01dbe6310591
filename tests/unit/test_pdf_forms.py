"""Filled PDF forms and comments: field values and annotation text are text in the file, not in the page's
content, so they are read from the form and the annotations, each as a paragraph on its page with its box."""

import pytest

from shared.adapters.parsers.pdf import PdfParser
from shared.domain.document import Block, BlockKind, ExtractedDocument, ExtractionLimits
from tests.builders.pdf import checkbox, form_pdf, text_field, widget
from tests.conftest import REPO_ROOT

SAMPLES = REPO_ROOT.parent / "shared" / "data" / "pdfs" / "sample-files"
LIMITS = ExtractionLimits()


def parsed(content: bytes, limits: ExtractionLimits = LIMITS) -> ExtractedDocument:
    outcome = PdfParser().parse(content, limits)
    assert isinstance(outcome, ExtractedDocument), outcome
    return outcome


def texts(document: ExtractedDocument) -> list[str]:
    return [block.text for block in document.blocks]


def block_reading(document: ExtractedDocument, text: str) -> Block:
    return next(block for block in document.blocks if block.text == text)


def test_filled_text_fields_become_paragraphs_on_their_page_with_their_box() -> None:
    # Given a form with two filled text fields
    document = parsed(
        form_pdf([text_field(b"Full name", b"Jane Doe"), text_field(b"City", b"Lyon", rect=b"[100 650 300 670]")])
    )
    # When parsed, then each reads "name: value", located where its widget is (from the top-left, 0..1)
    assert texts(document) == ["Full name: Jane Doe", "City: Lyon"]
    block = block_reading(document, "Full name: Jane Doe")
    assert block.kind is BlockKind.PARAGRAPH and block.location.page == 1
    box = block.location.box
    assert box is not None
    assert (round(box.left, 3), round(box.top, 3)) == (round(100 / 612, 3), round(72 / 792, 3))
    assert (round(box.width, 3), round(box.height, 3)) == (round(200 / 612, 3), round(20 / 792, 3))


def test_a_page_whose_only_text_is_its_field_values_is_not_sent_to_ocr() -> None:
    # Given a page whose content draws nothing (the form's labels are a scan, say) but whose fields are filled
    content = form_pdf([text_field(b"Applicant", b"Jane Doe"), text_field(b"Employer", b"Acme Corporation")])
    # When parsed, then the page has text and is not listed for OCR
    document = parsed(content)
    assert document.pages_without_text == ()
    assert not any("no text layer" in warning for warning in document.warnings)


def test_empty_hidden_password_button_and_signature_fields_are_left_out() -> None:
    # Given fields that hold nothing to read, or nothing to show
    content = form_pdf(
        [
            text_field(b"Empty", b""),
            text_field(b"Hidden", b"not shown", extra=b"/F 2"),
            text_field(b"PIN", b"1234", extra=b"/Ff 8192"),
            widget(b"/FT /Btn /Ff 65536 /T (Submit)"),
            widget(b"/FT /Sig /T (Signature)"),
            text_field(b"Kept", b"this one"),
        ]
    )
    # When parsed, then only the filled, visible, non-secret text field is read
    assert texts(parsed(content)) == ["Kept: this one"]


def test_a_checked_box_reads_as_yes_and_an_unchecked_one_is_left_out() -> None:
    content = form_pdf([checkbox(b"Agree to the terms", checked=True), checkbox(b"Newsletter", checked=False)])
    assert texts(parsed(content)) == ["Agree to the terms: Yes"]


def test_a_radio_group_reads_as_its_chosen_option() -> None:
    # Given a radio group (one field, two buttons) whose second option is chosen
    parent = b"<< /FT /Btn /Ff 49152 /T (Contract) /V /Permanent /Kids [8 0 R 9 0 R] >>"
    buttons = [
        widget(b"/Parent 7 0 R /AS /Off /AP << /N << /Temporary 5 0 R /Off 5 0 R >> >>", b"[100 600 112 612]"),
        widget(b"/Parent 7 0 R /AS /Permanent /AP << /N << /Permanent 5 0 R /Off 5 0 R >> >>", b"[200 600 212 612]"),
    ]
    content = form_pdf([parent, *buttons]).replace(b"/Annots [7 0 R 8 0 R 9 0 R]", b"/Annots [8 0 R 9 0 R]")
    # When parsed, then it reads as the chosen option, where its button is
    document = parsed(content)
    assert texts(document) == ["Contract: Permanent"]
    assert document.blocks[0].location.box is not None
    assert round(document.blocks[0].location.box.left, 3) == round(200 / 612, 3)


def test_a_value_the_page_already_shows_as_text_is_not_repeated() -> None:
    # Given a field whose value the page's own content also draws, inside the field's box (a flattened copy)
    drawn = b"BT /F1 12 Tf 72 750 Td (Application for a library card) Tj ET BT /F1 12 Tf 104 705 Td (Jane Doe) Tj ET"
    content = form_pdf([text_field(b"Full name", b"Jane Doe")], content=drawn)
    # When parsed, then the text is there once
    assert " ".join(texts(parsed(content))).count("Jane Doe") == 1


def test_free_text_and_comments_are_read_and_a_popup_is_not_read_twice() -> None:
    # Given a FreeText annotation, a sticky note with its popup, and a highlight with a comment
    content = form_pdf(
        [
            b"<< /Type /Annot /Subtype /FreeText /Rect [72 500 400 520] /Contents (Approved by the committee) >>",
            b"<< /Type /Annot /Subtype /Text /Rect [500 700 520 720] /Contents (Check the totals) /Popup 9 0 R >>",
            b"<< /Type /Annot /Subtype /Popup /Rect [500 600 600 700] /Parent 8 0 R /Contents (Check the totals) >>",
            b"<< /Type /Annot /Subtype /Highlight /Rect [72 400 200 412] /Contents (Is this figure right?) >>",
        ]
    )
    # When parsed, then each is read once, in reading order down the page; comments say they are comments
    assert texts(parsed(content)) == [
        "Comment: Check the totals",
        "Approved by the committee",
        "Comment: Is this figure right?",
    ]


def test_comments_alone_do_not_keep_a_scanned_page_from_ocr() -> None:
    # Given a page with no text layer and a sticky note on it (notes are about the page, not on it)
    note = b"<< /Type /Annot /Subtype /Text /Rect [500 700 520 720] /Contents (Please check this scan again) >>"
    # When parsed, then the page still goes to OCR, and the note is kept
    document = parsed(form_pdf([note]))
    assert document.pages_without_text == (1,)
    assert texts(document) == ["Comment: Please check this scan again"]


def test_annotations_are_bounded_per_page_and_long_values_are_cut() -> None:
    from shared.adapters.parsers.pdf import MAX_ANNOTATION_CHARACTERS, MAX_ANNOTATIONS_PER_PAGE

    # Given a page with more annotations than are read, one of them a very long value
    long_value = b"x" * (MAX_ANNOTATION_CHARACTERS * 3)
    fields = [text_field(b"Long", long_value)] + [
        text_field(b"Field %d" % i, b"value %d" % i) for i in range(MAX_ANNOTATIONS_PER_PAGE + 50)
    ]
    # When parsed, then at most the bound is read, the long value is cut, and both are said
    document = parsed(form_pdf(fields))
    assert len(document.blocks) == MAX_ANNOTATIONS_PER_PAGE
    assert len(document.blocks[0].text) <= len("Long: ") + MAX_ANNOTATION_CHARACTERS
    assert any("annotations" in warning for warning in document.warnings)


def test_a_box_is_measured_from_the_visible_page() -> None:
    # Given a page whose crop box starts at (50, 50)
    content = form_pdf([text_field(b"Name", b"Jane Doe", rect=b"[150 692 350 712]")], crop=b"/CropBox [50 50 562 742]")
    # When parsed, then the box is measured from the crop box's top-left corner
    box = parsed(content).blocks[0].location.box
    assert box is not None
    assert (round(box.left, 3), round(box.top, 3)) == (round(100 / 512, 3), round(30 / 692, 3))


@pytest.mark.skipif(not SAMPLES.exists(), reason="../shared/data/pdfs/sample-files is not present on this machine")
def test_a_libreoffice_form_filled_with_pypdf_reads_every_value() -> None:
    import io

    from pypdf import PdfReader, PdfWriter

    # Given LibreOffice's sample form, one more field filled in by pypdf
    writer = PdfWriter(clone_from=PdfReader(SAMPLES / "012-libreoffice-form" / "libreoffice-form.pdf"))
    writer.update_page_form_field_values(writer.pages[0], {"Last Name": "Doe"}, auto_regenerate=False)
    buffer = io.BytesIO()
    writer.write(buffer)
    # When parsed, then the values it came with and the new one are read
    read = texts(parsed(buffer.getvalue()))
    assert {"First Name: Alice", "Last Name: Doe", "First Name_2: Bob"} <= set(read)


@pytest.mark.skipif(not SAMPLES.exists(), reason="../shared/data/pdfs/sample-files is not present on this machine")
def test_the_comments_of_an_annotated_sample_are_read() -> None:
    document = parsed((SAMPLES / "024-annotations" / "annotated_pdf.pdf").read_bytes())
    assert {"Comment: This is a text annotation.", "Comment: Highlight comment", "Comment: Hello world!"} <= set(
        texts(document)
    )
    assert all(block.location.box is not None for block in document.blocks)
