"""The text formats (CSV, Markdown, HTML, plain text) generated from their grammar: deep nesting, ragged
rows, constructs never closed, and bytes in several encodings at once."""

from collections.abc import Sequence

from hypothesis import strategies as st

# Text formats, from their grammar


ENCODINGS = (
    "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "cp1252", "shift_jis", "gb18030",
    "koi8-r", "cp437",
)  # fmt: skip
# Bytes no single encoding explains: invalid UTF-8, an encoded surrogate, a byte-order mark mid-text, NUL.
JUNK = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf", b"\xfe\xff", b"\x80\x80", b"\xf4\x90\x80\x80",
        b"\r", b"\x1a", b"\xe2\x80")  # fmt: skip
_CHARACTERS = st.characters(exclude_categories=["Cs"])
WORDS = st.text(_CHARACTERS, max_size=12) | st.sampled_from(
    ["", " ", "word", "Total", "2026-01-01", "-1.5", "1e309", "TRUE", "\u00e9t\u00e9", "\u65e5\u672c", "\u202e", "\t"]
)


@st.composite
def encoded_text(draw: st.DrawFn, text: st.SearchStrategy[str]) -> bytes:
    """`text` in one encoding, or cut in pieces each in its own, with junk bytes among them."""
    value = draw(text)
    cuts = sorted(draw(st.lists(st.integers(0, len(value)), max_size=3)))
    pieces = [value[start:end] for start, end in zip([0, *cuts], [*cuts, len(value)], strict=True)]
    out = bytearray()
    for piece in pieces:
        out += piece.encode(draw(st.sampled_from(ENCODINGS)), errors="replace")
        if draw(st.booleans()):
            out += draw(st.sampled_from(JUNK))
    return bytes(out)


DEPTHS = (1, 10, 100, 1_000, 5_000, 20_000, 100_000)


def repeated(prefixes: Sequence[str], suffix: str = "x") -> st.SearchStrategy[str]:
    """A construct opened many times over (quotes in quotes, lists in lists, tables in cells)."""
    return st.builds(lambda prefix, times: prefix * times + suffix, st.sampled_from(prefixes), st.sampled_from(DEPTHS))


# CSV: ragged rows, quotes that never close, delimiters mixed, rows far wider than the column limit.
CSV_CELLS = (
    WORDS
    | WORDS.map(lambda s: '"' + s.replace('"', '""') + '"')
    | WORDS.map(lambda s: '"' + s)
    | st.sampled_from(['"a\nb"', '"a,b"', 'a"b', '"a""b"', '"', '""', '"\r\n"', "\\", "\x00", "x" * 5000, "=SUM(A1)"])
)


@st.composite
def csv_text(draw: st.DrawFn) -> str:
    delimiters = draw(st.sampled_from([",", ";", "\t", "|", ",;\t|"]))
    rows = draw(st.lists(st.lists(CSV_CELLS, max_size=draw(st.sampled_from([1, 3, 8, 40]))), max_size=40))
    lines = [draw(st.sampled_from(delimiters)).join(row) for row in rows]
    wide = draw(st.sampled_from([0, 0, 0, 300, 5000]))
    if wide:
        lines.insert(draw(st.integers(0, len(lines))), delimiters[0].join(["w"] * wide))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return ending.join(lines) + draw(st.sampled_from(["", ending, '"']))


# Markdown: blocks inside quotes and lists inside one another, tables with ragged rows, fences and
# links left open, raw HTML.
INLINE = WORDS | st.sampled_from(
    ["*a*", "**b", "_c_", "`code", "[link](http://x)", "[unclosed](", "![img](x.png)", "<span>", "&amp;", "\\",
     "|", "<!--", "<a href='x'>", "***", "~~s~~", "[[[", "<", "&#0;"]
)  # fmt: skip
LINE = st.lists(INLINE, max_size=5).map(" ".join)


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * max(len(header), 1)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


MARKDOWN_LEAVES = st.one_of(
    st.builds(lambda level, text: "#" * level + " " + text, st.integers(1, 7), LINE),
    LINE,
    st.builds(lambda text, rule: text + "\n" + rule, LINE, st.sampled_from(["===", "---", "- - -"])),
    st.builds(lambda lang, text, close: f"```{lang}\n{text}{close}", WORDS, LINE, st.sampled_from(["\n```", ""])),
    LINE.map(lambda text: "    " + text),
    st.builds(
        _markdown_table,
        st.lists(WORDS.map(lambda s: s.replace("|", "")), max_size=8),
        st.lists(st.lists(WORDS, max_size=12), max_size=6),
    ),
    st.builds(lambda width: _markdown_table(["h"] * width, [["c"] * width]), st.sampled_from([300, 2000])),
    st.sampled_from(["***", "[x]: http://y 'title", "<div>\n<table><tr><td>cell", "</div>", "<!-- open", "<?x"]),
)


def _quoted(block: str) -> str:
    return "\n".join("> " + line for line in block.split("\n"))


def _listed(marker: str, block: str) -> str:
    lines = block.split("\n")
    return "\n".join([marker + lines[0], *("   " + line for line in lines[1:])])


MARKDOWN_BLOCKS = st.recursive(
    MARKDOWN_LEAVES,
    lambda children: st.one_of(
        children.map(_quoted),
        st.builds(_listed, st.sampled_from(["- ", "* ", "1. ", "2) ", "+ "]), children),
        st.lists(children, max_size=4).map("\n\n".join),
        st.lists(children, max_size=4).map("\n".join),
    ),
    max_leaves=16,
)
MARKDOWN = MARKDOWN_BLOCKS | repeated(["> ", "- ", "1. ", "  - ", "* ", "[", "<div>", "`", "*", "> - ", "#"])


# HTML: tag soup, cells outside rows, tables in cells, tags and comments never closed.
HTML_TAGS = (
    "p", "div", "span", "h1", "h2", "h6", "ul", "ol", "li", "table", "tr", "td", "th", "thead", "tbody", "caption",
    "pre", "code", "blockquote", "br", "img", "a", "b", "script", "style", "svg", "template", "noscript", "nav",
    "footer", "select", "option", "textarea", "iframe", "form", "input", "math", "section", "dd", "dt", "head",
    "body", "html", "title", "xmp", "plaintext",
)  # fmt: skip
HTML_ATTRIBUTES = st.sampled_from(
    ["", " class=x", " alt='pic'", ' alt="a>b"', " colspan=100000", " rowspan=-1", " a", " =x", " onload=alert(1)",
     ' x="unterminated', " style='color:red'", " alt"]
)  # fmt: skip
HTML_TEXT = WORDS | st.sampled_from(
    ["&amp;", "&#0;", "&#x110000;", "&bogus;", "&#;", "<", "<!--", "<![CDATA[", "<![if !ie]>", "<!DOCTYPE html>",
     "<?php ?>", "</", "<a ", "-->", "]]>", "<![endif]>", "\x00"]
)  # fmt: skip


def _html_element(tag: str, attributes: str, children: list[str], closing: str) -> str:
    end = {"proper": f"</{tag}>", "none": "", "wrong": "</div>", "open": f"</{tag}"}[closing]
    return f"<{tag}{attributes}>" + "".join(children) + end


HTML = st.recursive(
    HTML_TEXT,
    lambda children: st.builds(
        _html_element,
        st.sampled_from(HTML_TAGS),
        HTML_ATTRIBUTES,
        st.lists(children, max_size=5),
        st.sampled_from(["proper", "proper", "none", "wrong", "open"]),
    ),
    max_leaves=30,
) | repeated(["<table><tr><td>", "<div>", "<ul><li>", "<b>", "<table>", "<td>", "<blockquote>", "<ol><li><p>"])


# Plain text: every kind of line end and blank, long lines, control characters.
TEXT_LINES = WORDS | st.sampled_from(
    ["\x0b", "\x0c", "\u2028", "\u2029", "\x85", "\u3000", "\xa0", "\x00", "x" * 20_000, "   ", "\t\t"]
)
PLAIN_TEXT = st.builds(
    lambda lines, ending: ending.join(lines),
    st.lists(TEXT_LINES, max_size=60),
    st.sampled_from(["\n", "\r\n", "\r", "\n\n", "\n \n"]),
)
TEXT_GRAMMARS: dict[str, st.SearchStrategy[str]] = {
    "text/csv": csv_text(),
    "text/markdown": MARKDOWN,
    "text/html": HTML,
    "text/plain": PLAIN_TEXT,
}
