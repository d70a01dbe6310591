"""DOCX, XLSX and PPTX files written by python-docx, openpyxl and python-pptx, some rewritten part by part to put
text where the writers' APIs cannot."""

import io
import zipfile
from datetime import datetime


def word_document() -> bytes:
    from docx import Document

    document = Document()
    document.add_heading("Employee handbook", level=0)
    document.add_heading("Leave", level=1)
    document.add_paragraph("Everyone gets annual leave.")
    document.add_paragraph("Plan ahead", style="List Bullet")
    document.add_paragraph("Ask early", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(table.rows, [("Region", "Days"), ("EU", "25"), ("US", "15")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Sick leave", level=2)
    document.add_paragraph("Tell your manager.")
    document.sections[0].header.paragraphs[0].text = "ACME confidential"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def workbook() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Item", "Cost", "Share", "Due"])
    sheet.append(["Rent", 1200.0, 0.6, datetime(2026, 3, 1)])
    sheet.append(["Food", 800, 0.4, datetime(2026, 3, 15, 9, 30)])
    sheet["C2"].number_format = "0%"
    sheet["C3"].number_format = "0%"
    sheet["A4"] = "Total"
    sheet["B4"] = "=SUM(B2:B3)"
    other = book.create_sheet("Notes")
    other["C5"] = "far away"
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def slides() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quarterly results"
    body = first.placeholders[1].text_frame
    body.text = "Revenue up"
    nested = body.add_paragraph()
    nested.text = "EU strongest"
    nested.level = 1
    first.notes_slide.notes_text_frame.text = "Mention the EU launch."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Numbers"
    shape = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1))
    for (row, col), value in {(0, 0): "Quarter", (0, 1): "Revenue", (1, 0): "Q3", (1, 1): "4.2"}.items():
        shape.table.cell(row, col).text = value
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


TEXT_BOX_RUN = (
    '<w:r><mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">'
    '<mc:Choice Requires="wps"><w:drawing><wps:wsp xmlns:wps="http://schemas.microsoft.com/office/word/2010/'
    'wordprocessingShape"><wps:txbx><w:txbxContent><w:p><w:r><w:t>Call 555-0100 to book</w:t></w:r></w:p>'
    "</w:txbxContent></wps:txbx></wps:wsp></w:drawing></mc:Choice>"
    '<mc:Fallback><w:pict><v:textbox xmlns:v="urn:schemas-microsoft-com:vml"><w:txbxContent><w:p><w:r>'
    "<w:t>Call 555-0100 to book</w:t></w:r></w:p></w:txbxContent></v:textbox></w:pict></mc:Fallback>"
    "</mc:AlternateContent></w:r>"
)


def word_document_with_hidden_places() -> bytes:
    """Text where python-docx's paragraph.text does not look: a text box (with its VML fallback copy),
    a tracked insertion next to a tracked deletion, an inline and a block-level content control, a
    simple field; and an even-page header, a header table, a comment and a footnote."""
    from docx import Document
    from docx.shared import Inches

    document = Document()
    document.add_paragraph("Flyer:")
    document.add_paragraph("Prices rise ")
    document.add_paragraph("Signed by ")
    document.add_paragraph("Page ")
    commented = document.add_paragraph("See the appendix.")
    document.add_comment(commented.runs, text="Appendix B is missing", author="Ann")
    section = document.sections[0]
    section.header.paragraphs[0].text = "Odd pages"
    document.settings.odd_and_even_pages_header_footer = True
    section.even_page_header.paragraphs[0].text = "Even pages"
    table = section.header.add_table(1, 2, width=Inches(6))
    table.cell(0, 0).text, table.cell(0, 1).text = "Ref", "HR-7"
    buffer = io.BytesIO()
    document.save(buffer)
    body = zipfile.ZipFile(io.BytesIO(buffer.getvalue())).read("word/document.xml").decode()
    body = body.replace("<w:t>Flyer:</w:t></w:r>", "<w:t>Flyer:</w:t></w:r>" + TEXT_BOX_RUN, 1)
    body = body.replace(
        '<w:t xml:space="preserve">Prices rise </w:t></w:r>',
        '<w:t xml:space="preserve">Prices rise </w:t></w:r>'
        '<w:del w:id="1" w:author="A" w:date="2026-01-01T00:00:00Z"><w:r><w:delText>10%</w:delText></w:r></w:del>'
        '<w:ins w:id="2" w:author="A" w:date="2026-01-01T00:00:00Z"><w:r><w:t>12% in May</w:t></w:r></w:ins>'
        '<w:r><w:footnoteReference w:id="1"/></w:r>',
        1,
    )
    body = body.replace(
        '<w:t xml:space="preserve">Signed by </w:t></w:r>',
        '<w:t xml:space="preserve">Signed by </w:t></w:r>'
        '<w:sdt><w:sdtPr><w:alias w:val="Name"/></w:sdtPr><w:sdtContent><w:r><w:t>Jane Roe</w:t></w:r>'
        "</w:sdtContent></w:sdt>",
        1,
    )
    body = body.replace(
        '<w:t xml:space="preserve">Page </w:t></w:r>',
        '<w:t xml:space="preserve">Page </w:t></w:r><w:fldSimple w:instr="PAGE"><w:r><w:t>4</w:t></w:r></w:fldSimple>',
        1,
    )
    body = body.replace(
        "<w:sectPr",
        "<w:sdt><w:sdtPr/><w:sdtContent><w:p><w:r><w:t>Cover page: annual report 2026</w:t></w:r></w:p>"
        "</w:sdtContent></w:sdt><w:sectPr",
        1,
    )
    footnotes = (
        f"<w:footnotes {W_NS}>"
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
        '<w:footnote w:id="1"><w:p><w:r><w:t>Board decision of 3 March.</w:t></w:r></w:p></w:footnote>'
        "</w:footnotes>"
    )
    footnote_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"
    relationship = (
        '<Relationship Id="rIdNotes" Target="footnotes.xml" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes"/>'
    )
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/document.xml":
                data = body.encode()
            elif item.filename == "word/_rels/document.xml.rels":
                data = data.replace(b"</Relationships>", relationship.encode() + b"</Relationships>")
            elif item.filename == "[Content_Types].xml":
                override = f'<Override PartName="/word/footnotes.xml" ContentType="{footnote_type}"/>'
                data = data.replace(b"</Types>", override.encode() + b"</Types>")
            target.writestr(item, data)
        target.writestr("word/footnotes.xml", footnotes)
    return rewritten.getvalue()


def slides_with_line_breaks() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.paragraphs[0]
    box.add_run().text = "Opening hours"
    box.add_line_break()
    box.add_run().text = "Monday to Friday"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def workbook_with_a_text_box() -> bytes:
    """A sheet with a drawing holding a text box (a disclaimer), as Excel writes one."""
    base = workbook()
    drawing = (
        '<xdr:wsDr xmlns:xdr="http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><xdr:twoCellAnchor>'
        "<xdr:from><xdr:col>0</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>5</xdr:row><xdr:rowOff>0</xdr:rowOff>"
        "</xdr:from><xdr:to><xdr:col>3</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>9</xdr:row><xdr:rowOff>0"
        '</xdr:rowOff></xdr:to><xdr:sp><xdr:nvSpPr><xdr:cNvPr id="2" name="TextBox 1"/><xdr:cNvSpPr txBox="1"/>'
        "</xdr:nvSpPr><xdr:spPr/><xdr:txBody><a:bodyPr/><a:p><a:r><a:t>Figures are unaudited.</a:t></a:r></a:p>"
        "<a:p><a:r><a:t>Source: finance</a:t></a:r><a:br/><a:r><a:t>team</a:t></a:r></a:p></xdr:txBody></xdr:sp>"
        "<xdr:clientData/></xdr:twoCellAnchor></xdr:wsDr>"
    )
    sheet_rels = (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Target="../drawings/drawing1.xml" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing"/></Relationships>'
    )
    source = zipfile.ZipFile(io.BytesIO(base))
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(
                    b"</worksheet>",
                    b'<drawing xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
                    b'r:id="rId1"/></worksheet>',
                )
            target.writestr(item, data)
        target.writestr("xl/worksheets/_rels/sheet1.xml.rels", sheet_rels)
        target.writestr("xl/drawings/drawing1.xml", drawing)
    return rewritten.getvalue()
