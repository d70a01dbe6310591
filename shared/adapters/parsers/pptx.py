"""PPTX → per slide: its title as a heading, bullet text as list items by level, text boxes as paragraphs,
tables, pictures and speaker notes, located by slide number and shape name."""

import io
from typing import Any

from shared.adapters.parsers.ooxml_guard import read_office
from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionOutcome,
    Location,
    Table,
)
from shared.domain.files import FailureReason
from shared.domain.layout import looks_like_header
from shared.ports import DocumentParser

PPTX_TYPE = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
_MAX_GROUP_DEPTH = 16


class PptxParser(DocumentParser):
    media_types = frozenset({PPTX_TYPE})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        return read_office(content, limits, "PPTX", lambda: self._read(content, limits))

    def _read(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        from pptx import Presentation

        presentation = Presentation(io.BytesIO(content))
        slides = list(presentation.slides)
        if len(slides) > limits.max_pages:
            return ExtractionFailure(
                reason=FailureReason.TOO_MANY_PAGES,
                detail=f"the presentation has {len(slides)} slides; the limit is {limits.max_pages}",
            )
        collector = BlockCollector(limits)
        for number, slide in enumerate(slides, start=1):
            if not self._slide(slide, number, collector):
                break
        return collector.document(PPTX_TYPE, page_count=len(slides), title=presentation.core_properties.title)

    def _slide(self, slide: Any, number: int, collector: BlockCollector) -> bool:
        title = slide.shapes.title
        if title is not None and title.has_text_frame and title.text_frame.text.strip():
            heading = Block(
                kind=BlockKind.HEADING,
                text=" ".join(title.text_frame.text.split()),
                level=1,
                location=Location(slide=number, shape=title.name),
            )
            if not collector.add(heading):
                return False
        for shape in slide.shapes:
            if title is not None and shape.shape_id == title.shape_id:
                continue
            if not self._shape(shape, slide, number, collector, depth=0):
                return False
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                block = Block(
                    kind=BlockKind.PARAGRAPH, text=notes.text.strip(), location=Location(slide=number, shape="notes")
                )
                return collector.add(block)
        return True

    def _shape(self, shape: Any, slide: Any, number: int, collector: BlockCollector, depth: int) -> bool:
        from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

        location = Location(slide=number, shape=shape.name)
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP and depth < _MAX_GROUP_DEPTH:
            return all(self._shape(inner, slide, number, collector, depth + 1) for inner in shape.shapes)
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = [
                collector.kept_columns(" ".join(cell.text.split()) for cell in row.cells) for row in shape.table.rows
            ]
            header = 1 if shape.table.first_row or looks_like_header(rows) else 0
            return collector.add(
                Block(kind=BlockKind.TABLE, table=Table(rows=tuple(rows), header_rows=header), location=location)
            )
        if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
            image_ref = str(slide.part.related_part(shape._element.blip_rId).partname)
            return collector.add(Block(kind=BlockKind.IMAGE, text=shape.name, image_ref=image_ref, location=location))
        if not shape.has_text_frame:
            return True
        bullets = shape.is_placeholder and shape.placeholder_format.type in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT)
        for paragraph in shape.text_frame.paragraphs:
            # The paragraph's text, not its runs': a line break (a:br) and a field (a:fld) are text too.
            text = " ".join(paragraph.text.split())
            if not text:
                continue
            if bullets or paragraph.level > 0:
                block = Block(
                    kind=BlockKind.LIST_ITEM, text=text, depth=paragraph.level, ordered=False, location=location
                )
            else:
                block = Block(kind=BlockKind.PARAGRAPH, text=text, location=location)
            if not collector.add(block):
                return False
        return True
