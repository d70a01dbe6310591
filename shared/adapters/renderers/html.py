"""Blocks → one self-contained HTML page: every text escaped, no script, no external resource (the page's
Content-Security-Policy says so too), the citations as numbered notes the markers link to."""

import html
import re
from collections.abc import Callable, Sequence

from shared.domain.document import Block, BlockKind
from shared.domain.exports import ExportFormat, RenderedFile, RenderLimits, RenderRequest, note_text, ordered_numbers
from shared.ports import ArtifactRenderer

_STYLE = (
    "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;"
    "line-height:1.5;color:#1a1a1a}table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #999;"
    "padding:.25em .5em;text-align:left;vertical-align:top}th{background:#eee}pre{background:#f4f4f4;padding:.75em;"
    "overflow-x:auto}blockquote{border-left:3px solid #bbb;margin-left:0;padding-left:1em;color:#444}"
    "p,li,td,th{overflow-wrap:anywhere}.notes{font-size:.9em;color:#333}"
)
_MARKER = re.compile(r"\[(\d{1,4})\]")


def _text(text: str, notes: frozenset[int]) -> str:
    escaped = html.escape(text, quote=True)
    if not notes:
        return escaped
    # After escaping: a marker is digits in brackets, which escaping leaves as they were.
    return _MARKER.sub(
        lambda found: f'<a href="#note-{found[1]}">[{found[1]}]</a>' if int(found[1]) in notes else found[0], escaped
    )


def _table(block: Block, notes: frozenset[int]) -> str:
    if block.table is None or not block.table.rows:
        return ""
    width = max(len(row) for row in block.table.rows)
    parts = ["<table>"]
    for index, row in enumerate(block.table.rows):
        tag = "th" if index < block.table.header_rows else "td"
        if index == 0 and block.table.header_rows:
            parts.append("<thead>")
        if index == block.table.header_rows:
            parts.append("<tbody>")
        cells = "".join(f"<{tag}>{_text(cell, notes)}</{tag}>" for cell in (*row, *("",) * (width - len(row))))
        parts.append(f"<tr>{cells}</tr>")
        if index == block.table.header_rows - 1:
            parts.append("</thead>")
    parts.append("</tbody></table>" if len(block.table.rows) > block.table.header_rows else "</table>")
    return "".join(parts)


def _body(blocks: Sequence[Block], notes: frozenset[int]) -> list[str]:
    parts: list[str] = []
    open_lists: list[str] = []  # the tags of the lists open, outermost first
    numbers = ordered_numbers(blocks)
    for block, number in zip(blocks, numbers, strict=True):
        if block.kind is BlockKind.LIST_ITEM:
            depth = min(block.depth or 0, 8)
            tag = "ol" if block.ordered else "ul"
            while len(open_lists) > depth + 1 or (len(open_lists) == depth + 1 and open_lists[-1] != tag):
                parts.append(f"</{open_lists.pop()}>")
            while len(open_lists) < depth + 1:
                open_lists.append(tag)
                parts.append(f"<{tag}>")
            value = f' value="{number}"' if number is not None else ""
            parts.append(f"<li{value}>{_text(block.text, notes)}</li>")
            continue
        while open_lists:
            parts.append(f"</{open_lists.pop()}>")
        parts.append(_block(block, notes))
    while open_lists:
        parts.append(f"</{open_lists.pop()}>")
    return parts


def _heading(block: Block, notes: frozenset[int]) -> str:
    level = min(max(block.level or 1, 1), 6)
    return f"<h{level}>{_text(block.text, notes)}</h{level}>"


def _labelled(label: str) -> Callable[[Block, frozenset[int]], str]:
    def render(block: Block, notes: frozenset[int]) -> str:
        return f"<p><em>[{label}{': ' + _text(block.text, notes) if block.text else ''}]</em></p>"

    return render


def _paragraph(block: Block, notes: frozenset[int]) -> str:
    return "<p>" + "<br>".join(_text(line, notes) for line in block.text.split("\n")) + "</p>"


_BLOCKS: dict[BlockKind, Callable[[Block, frozenset[int]], str]] = {
    BlockKind.HEADING: _heading,
    BlockKind.TABLE: _table,
    BlockKind.CODE: lambda block, _: f"<pre><code>{html.escape(block.text)}</code></pre>",
    BlockKind.QUOTE: lambda block, notes: f"<blockquote><p>{_text(block.text, notes)}</p></blockquote>",
    BlockKind.IMAGE: _labelled("image"),
    BlockKind.DESCRIPTION: _labelled("description"),
    BlockKind.PAGE_BREAK: lambda _, __: "<hr>",
}


def _block(block: Block, notes: frozenset[int]) -> str:
    return _BLOCKS.get(block.kind, _paragraph)(block, notes)


class HtmlRenderer(ArtifactRenderer):
    format = ExportFormat.HTML

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile:
        notes = frozenset(note.number for note in request.citations)
        parts = [
            "<!DOCTYPE html>",
            '<html><head><meta charset="utf-8">',
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(request.title)}</title>",
            f"<style>{_STYLE}</style></head><body>",
            *_body(request.blocks, notes),
        ]
        if request.citations:
            parts.append('<hr><section class="notes"><p><strong>Notes</strong></p><ol>')
            parts.extend(
                f'<li id="note-{note.number}" value="{note.number}">{html.escape(note_text(note))}</li>'
                for note in request.citations
            )
            parts.append("</ol></section>")
        parts.append("</body></html>\n")
        return RenderedFile(content="\n".join(parts).encode(), format=self.format)
