"""text/html → headings, paragraphs, lists, tables, quotes and code, with line spans; no script, style or
navigation chrome; nothing is ever fetched (an image keeps its alt text only).

Cells and rows close themselves when the next one opens (HTML lets `</td>` and `</tr>` be left out),
and a row is never wider than the column limit."""

import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import ClassVar

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

_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "head",
                      "title", "nav", "footer", "aside", "button", "select", "textarea"})  # fmt: skip
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
# What a head holds: any other start tag (or text) ends a head whose `</head>` was left out, as browsers
# read it (valid HTML, and what minifiers write).
_HEAD_CONTENT = frozenset({"base", "basefont", "bgsound", "link", "meta", "title", "noscript", "noframes", "style",
                           "script", "template", "head"})  # fmt: skip
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
MAX_TITLE_CHARACTERS = 1_000
_STRUCTURE = frozenset({"li", "pre", "blockquote", "table", "ul", "ol"})
_TEXT_BLOCKS = frozenset({"p", "div", "section", "article", "main", "header", "dd", "dt", "figcaption", "caption"})
# Tables inside tables beyond this depth are read as the innermost kept table's rows and cells: no page
# nests deeper for layout, and each level costs a table block (100,000 levels took 9 s).
MAX_TABLE_NESTING = 16
_COMMENT_CLOSE = re.compile(r"--\s*>")
_SECTION_CLOSE = re.compile(r"]\s*>")
_CDATA_CLOSE = re.compile(r"]\s*]\s*>")
_OPENING = re.compile(r"<(!--|!\[)?")
_SECTION_KEYWORD = re.compile(r"<!\[\s*([a-zA-Z][-_.a-zA-Z0-9]*)")
_MS_SECTIONS = frozenset({"if", "else", "endif"})
_CDATA_SECTIONS = frozenset({"temp", "cdata", "ignore", "include", "rcdata"})


def _last_start(pattern: re.Pattern[str], text: str) -> int:
    return max((match.start() for match in pattern.finditer(text)), default=-1)


def defused(text: str) -> str:
    """The text with every `<` that can never be closed escaped, in one pass.

    html.parser rescans to the end of its input from each `<` opening a construct it cannot close (a tag
    with no `>` anywhere after it, a comment with no `-->`), which is quadratic: 100 KB of `<a ` kept it
    busy for three minutes. It also raises on `<![` followed by a keyword it does not know. Such a `<`
    can only ever be text, which is what an escaped one is."""
    last_tag_end = text.rfind(">")
    last_comment_close = _last_start(_COMMENT_CLOSE, text)
    last_section_close = _last_start(_SECTION_CLOSE, text)
    last_cdata_close = _last_start(_CDATA_CLOSE, text)
    pieces: list[str] = []
    copied = 0
    for match in _OPENING.finditer(text):
        at, opener = match.start(), match.group(1)
        if opener == "!--":
            closable = last_comment_close >= at + 4
        elif opener == "![":
            keyword = _SECTION_KEYWORD.match(text, at)
            name = keyword.group(1).lower() if keyword else ""
            closable = (name in _MS_SECTIONS and last_section_close >= at + 3) or (
                name in _CDATA_SECTIONS and last_cdata_close >= at + 3
            )
        else:
            closable = last_tag_end > at
        if not closable:
            pieces.extend((text[copied:at], "&lt;"))
            copied = at + 1
    pieces.append(text[copied:])
    return "".join(pieces)


class _Extractor(HTMLParser):
    def __init__(self, collector: BlockCollector, first_line: int) -> None:
        super().__init__(convert_charrefs=True)
        self.collector = collector
        self.line_offset = first_line - 1
        self.skip_depth = 0
        self.skipping = ""  # the element the skip started at
        self.text: list[str] = []
        self.text_start = 1
        self.heading: int | None = None
        self.lists: list[bool] = []
        self.in_item = False
        self.pre = 0
        self.quote = 0
        self.tables: list[tuple[list[tuple[str, ...]], int, int]] = []  # rows, header rows, start line
        self.row: list[str] | None = None
        self.row_all_th = True
        self.cell: list[str] | None = None
        self.saved: list[tuple[list[str] | None, list[str] | None, bool]] = []
        self.flattened_tables = 0  # open tables past MAX_TABLE_NESTING
        # The first <title>'s text (the page's declared title, never a block), kept to MAX_TITLE_CHARACTERS.
        self.title: list[str] | None = None
        self.title_characters = 0
        self.in_title = False

    def getpos(self) -> tuple[int, int]:
        """Lines of the whole source, when this is a fragment of it (an HTML block inside Markdown)."""
        line, column = super().getpos()
        return line + self.line_offset, column

    # -- structure -----------------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # A <title> left open ends at the next tag (a browser reads none inside it); an SVG's <title> is a drawing's.
        self.in_title = False
        if tag == "title" and self.title is None and not (self.skip_depth and self.skipping == "svg"):
            self.title, self.in_title = [], True
        if self.skip_depth and self._directly_in_head() and tag not in _HEAD_CONTENT:
            self.skip_depth = 0
        if self.skip_depth:
            # (a second `<head>` inside the head is not an element of its own: its end tag closes the head)
            self.skip_depth += tag in _SKIPPED and tag not in _VOID and not (tag == "head" and self._directly_in_head())
            return
        if tag in _SKIPPED:
            self.skip_depth, self.skipping = 1, tag
            return
        line = self.getpos()[0]
        if tag in _HEADINGS or tag in _TEXT_BLOCKS or tag in _STRUCTURE:
            self.flush()
            self.text_start = line
        if tag in _HEADINGS:
            self.heading = _HEADINGS[tag]
        elif tag in ("td", "th"):
            self._open_cell(tag)
        else:
            opener = self._OPENERS.get(tag)
            if opener:
                opener(self, line, dict(attrs))

    def _open_list(self, line: int, attrs: dict[str, str | None], ordered: bool) -> None:
        self.lists.append(ordered)

    def _open_item(self, line: int, attrs: dict[str, str | None]) -> None:
        self.in_item = True

    def _open_pre(self, line: int, attrs: dict[str, str | None]) -> None:
        self.pre += 1

    def _open_quote(self, line: int, attrs: dict[str, str | None]) -> None:
        self.quote += 1

    def _open_table(self, line: int, attrs: dict[str, str | None]) -> None:
        if len(self.tables) >= MAX_TABLE_NESTING:
            self.flattened_tables += 1
            return
        # A table inside a cell: the outer row and cell wait, whole, until the inner table closes.
        self.saved.append((self.row, self.cell, self.row_all_th))
        self.row, self.cell = None, None
        self.tables.append(([], 0, line))

    def _open_row(self, line: int, attrs: dict[str, str | None]) -> None:
        if self.tables:
            self._close_row()  # the previous row's `</tr>` may be left out
            self.row, self.row_all_th = [], True

    def _open_cell(self, tag: str) -> None:
        if not self.tables:
            return
        if self.row is None:
            self.row, self.row_all_th = [], True  # a cell outside any row opens one, as browsers do
        self._close_cell()  # the previous cell's `</td>` may be left out
        self.cell = []
        self.row_all_th = self.row_all_th and tag == "th"

    def _line_break(self, line: int, attrs: dict[str, str | None]) -> None:
        self._data("\n")

    def _image(self, line: int, attrs: dict[str, str | None]) -> None:
        self.flush()
        alt = (attrs.get("alt") or "").strip()
        self.collector.add(Block(kind=BlockKind.IMAGE, text=alt, location=Location(line_start=line, line_end=line)))

    _OPENERS: ClassVar[dict[str, Callable[["_Extractor", int, dict[str, str | None]], None]]] = {
        "ul": lambda self, line, attrs: self._open_list(line, attrs, ordered=False),
        "ol": lambda self, line, attrs: self._open_list(line, attrs, ordered=True),
        "li": _open_item,
        "pre": _open_pre,
        "blockquote": _open_quote,
        "table": _open_table,
        "tr": _open_row,
        "br": _line_break,
        "img": _image,
    }

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if self.skip_depth:
            self.skip_depth -= tag in _SKIPPED
            return
        if tag in ("td", "th"):
            self._close_cell()
        elif tag == "tr":
            self._close_row()
        elif tag == "table":
            self._close_table()
        elif tag in _HEADINGS or tag in _TEXT_BLOCKS or tag in ("li", "pre", "blockquote", "ul", "ol"):
            self.flush()
            self._close_container(tag)

    def _close_container(self, tag: str) -> None:
        if tag in _HEADINGS:
            self.heading = None
        elif tag == "li":
            self.in_item = False
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
        elif tag == "blockquote":
            self.quote = max(0, self.quote - 1)
        elif tag in ("ul", "ol") and self.lists:
            self.lists.pop()

    def _close_cell(self) -> None:
        if self.cell is not None and self.row is not None:
            # One past the limit is kept, so that the collector knows (and says) the row was cut.
            if len(self.row) <= self.collector.limits.max_columns:
                self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None

    def _close_row(self) -> None:
        if self.row is None or not self.tables:
            return
        self._close_cell()
        rows, header_rows, start = self.tables[-1]
        if self.row:
            rows.append(self.collector.kept_columns(self.row))
            if self.row_all_th and header_rows == len(rows) - 1:
                header_rows += 1
        self.tables[-1] = (rows, header_rows, start)
        self.row = None

    def _close_table(self) -> None:
        if self.flattened_tables:
            self.flattened_tables -= 1
            return
        if not self.tables:
            return
        self._close_row()
        rows, header_rows, start = self.tables.pop()
        if self.saved:
            self.row, self.cell, self.row_all_th = self.saved.pop()
        if rows:
            self.collector.add(
                Block(
                    kind=BlockKind.TABLE,
                    table=Table(rows=tuple(rows), header_rows=min(header_rows, 1)),
                    location=Location(line_start=start, line_end=self.getpos()[0]),
                )
            )

    def handle_data(self, data: str) -> None:
        if self.in_title and self.title is not None and self.title_characters < MAX_TITLE_CHARACTERS:
            kept = data[: MAX_TITLE_CHARACTERS - self.title_characters]
            self.title.append(kept)
            self.title_characters += len(kept)
        if self.skip_depth and self._directly_in_head() and data.strip(" \t\n\r\f\ufeff"):
            self.skip_depth = 0
        if not self.skip_depth:
            self._data(data)

    def _directly_in_head(self) -> bool:
        return self.skip_depth == 1 and self.skipping == "head"

    def _data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        elif self.tables:
            return  # text between cells is layout, not content
        else:
            if not self.text:
                self.text_start = self.getpos()[0]
            self.text.append(data)

    def flush(self) -> None:
        raw = "".join(self.text)
        self.text = []
        text = raw.strip("\n") if self.pre else " ".join(raw.split())
        if not text.strip():
            return
        location = Location(line_start=self.text_start, line_end=self.getpos()[0])
        if self.heading is not None:
            block = Block(kind=BlockKind.HEADING, text=text, level=self.heading, location=location)
        elif self.pre:
            block = Block(kind=BlockKind.CODE, text=text, location=location)
        elif self.in_item and self.lists:
            block = Block(
                kind=BlockKind.LIST_ITEM,
                text=text,
                depth=len(self.lists) - 1,
                ordered=self.lists[-1],
                location=location,
            )
        elif self.quote:
            block = Block(kind=BlockKind.QUOTE, text=text, location=location)
        else:
            block = Block(kind=BlockKind.PARAGRAPH, text=text, location=location)
        self.collector.add(block)


def extract_html(text: str, collector: BlockCollector, *, first_line: int = 1) -> list[str]:
    """The blocks of an HTML text, added to `collector` with the lines they span (counted from
    `first_line`); returns the warnings of reading it."""
    return _extracted(text, collector, first_line)[0]


def _extracted(text: str, collector: BlockCollector, first_line: int) -> tuple[list[str], str | None]:
    """extract_html's warnings, and the page's <title>."""
    extractor = _Extractor(collector, first_line)
    warnings: list[str] = []
    try:
        extractor.feed(defused(text))
        extractor.close()
    except AssertionError:
        # html.parser's own consistency checks on markup it cannot make sense of: what came before stays.
        warnings.append(f"the HTML could not be read past line {extractor.getpos()[0]}")
    extractor.flush()
    # A table left open by the page still holds content: close what is open, innermost first (and
    # first leave any skipped element the page never closed, or the closing tags would be skipped too).
    extractor.skip_depth = extractor.flattened_tables = 0
    while extractor.tables:
        extractor.handle_endtag("table")
    return warnings, "".join(extractor.title) if extractor.title else None


class HtmlParser(DocumentParser):
    media_types = frozenset({"text/html"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        decoded = decode_text(content)
        collector = BlockCollector(limits)
        warnings = [decoded.warning] if decoded.warning else []
        read, title = _extracted(decoded.text, collector, 1)
        return collector.document("text/html", warnings=(*warnings, *read), title=title)
