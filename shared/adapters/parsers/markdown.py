"""text/markdown → blocks with their source line spans (markdown-it-py's CommonMark parser, with tables).

An HTML block is read by the HTML parser (its script and style dropped, its tables kept as tables),
located on the Markdown file's own lines."""

from markdown_it import MarkdownIt
from markdown_it.token import Token

from shared.adapters.parsers.html import extract_html
from shared.adapters.parsers.text_encoding import decode_text
from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    ExtractionLimits,
    ExtractionOutcome,
    Location,
    Table,
)
from shared.ports import DocumentParser


def _location(token: Token) -> Location:
    if token.map is None:
        return Location()
    return Location(line_start=token.map[0] + 1, line_end=token.map[1])


class _Context:
    """The open lists and block quotes a paragraph sits in."""

    def __init__(self) -> None:
        self.lists: list[bool] = []  # ordered? for each open list
        self.quote_depth = 0

    def track(self, token: Token) -> bool:
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            self.lists.append(kind == "ordered_list_open")
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self.lists.pop()
        elif kind == "blockquote_open":
            self.quote_depth += 1
        elif kind == "blockquote_close":
            self.quote_depth -= 1
        else:
            return False
        return True

    def paragraph(self, text: str, location: Location) -> Block:
        if self.lists:
            return Block(
                kind=BlockKind.LIST_ITEM,
                text=text,
                depth=len(self.lists) - 1,
                ordered=self.lists[-1],
                location=location,
            )
        return Block(kind=BlockKind.QUOTE if self.quote_depth else BlockKind.PARAGRAPH, text=text, location=location)


class MarkdownParser(DocumentParser):
    media_types = frozenset({"text/markdown"})

    def __init__(self) -> None:
        # CommonMark's own nesting limit bounds recursion on hostile input.
        self._markdown = MarkdownIt("commonmark").enable("table")

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        decoded = decode_text(content)
        tokens = self._markdown.parse(decoded.text)
        collector = BlockCollector(limits)
        context = _Context()
        warnings = [decoded.warning] if decoded.warning else []
        index = 0
        while index < len(tokens) and not collector.truncated:
            token = tokens[index]
            if not context.track(token):
                index = self._block(tokens, index, context, collector, warnings)
            index += 1
        return collector.document("text/markdown", warnings=tuple(warnings))

    def _block(
        self, tokens: list[Token], index: int, context: "_Context", collector: BlockCollector, warnings: list[str]
    ) -> int:
        """Add the block that starts at `index`; returns the index of its last token."""
        token = tokens[index]
        kind = token.type
        if kind == "heading_open":
            text = tokens[index + 1].content.strip()
            collector.add(Block(kind=BlockKind.HEADING, text=text, level=int(token.tag[1]), location=_location(token)))
        elif kind == "paragraph_open":
            collector.add(context.paragraph(tokens[index + 1].content.strip(), _location(token)))
        elif kind in ("fence", "code_block"):
            collector.add(Block(kind=BlockKind.CODE, text=token.content.rstrip("\n"), location=_location(token)))
        elif kind == "html_block":
            first_line = token.map[0] + 1 if token.map else 1
            warnings.extend(extract_html(token.content, collector, first_line=first_line))
        elif kind == "table_open":
            return self._table(tokens, index, collector)
        return index

    @staticmethod
    def _table(tokens: list[Token], start: int, collector: BlockCollector) -> int:
        rows: list[tuple[str, ...]] = []
        row: list[str] = []
        header_rows = 0
        in_head = False
        index = start
        while index < len(tokens) and tokens[index].type != "table_close":
            kind = tokens[index].type
            if kind == "thead_open":
                in_head = True
            elif kind == "thead_close":
                in_head = False
            elif kind == "tr_open":
                row = []
            elif kind in ("th_open", "td_open"):
                row.append(tokens[index + 1].content.strip())
            elif kind == "tr_close":
                rows.append(collector.kept_columns(row))
                header_rows += in_head
            index += 1
        collector.add(
            Block(
                kind=BlockKind.TABLE,
                table=Table(rows=tuple(rows), header_rows=header_rows),
                location=_location(tokens[start]),
            )
        )
        return index
