"""text/plain → paragraphs (runs of non-blank lines), each with its line span."""

from shared.adapters.parsers.text_encoding import decode_text
from shared.domain.document import Block, BlockCollector, BlockKind, ExtractionLimits, ExtractionOutcome, Location
from shared.ports import DocumentParser


class PlainTextParser(DocumentParser):
    media_types = frozenset({"text/plain"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        decoded = decode_text(content)
        collector = BlockCollector(limits)
        paragraph: list[str] = []
        start = 0
        # Only a newline ends a line (as editors number them): splitlines() would also break at form feeds.
        for number, line in enumerate([*decoded.text.replace("\r\n", "\n").split("\n"), ""], start=1):
            if line.strip():
                if not paragraph:
                    start = number
                paragraph.append(line.rstrip())
                continue
            if paragraph:
                block = Block(
                    kind=BlockKind.PARAGRAPH,
                    text="\n".join(paragraph),
                    location=Location(line_start=start, line_end=number - 1),
                )
                paragraph = []
                if not collector.add(block):
                    break
        warnings = (decoded.warning,) if decoded.warning else ()
        return collector.document("text/plain", warnings=warnings)
