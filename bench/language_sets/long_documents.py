"""`delong/de/`: long German documents, one corpus entry per whole document (the product chunks it).

Sources, Debian packages:
  manpages-de          every German manual page whose rendered text has at least MIN_WORDS words, but for two
                       keyword indexes (systemd.directives(7), systemd.index(7)); rendered by man-db (`man -l`,
                       MANWIDTH=4000 so a paragraph is one line, no hyphenation or justification) and `col -bx`,
                       so man-db and groff-base must be installed;
  debian-reference-de  the German Debian Reference, each chapter (chNN.de.html) of at least MIN_WORDS words.
One question per document, in German, written for the set (questions/delong.json).
"""

from __future__ import annotations

import html.parser
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.language_sets.beir import Judgement, Passage, Query, SetStats, questions, write_beir
from bench.language_sets.sources import Sources, installed_version

MAN_PAGES, REFERENCE = "manpages-de", "debian-reference-de"
RENDERERS = ("man-db", "groff-base")
MIN_WORDS = 3000
MAN_EXCLUDE = frozenset({"systemd.directives.7", "systemd.index.7"})  # lists of keywords, not documents
EN_DASH = "\u2013"


def render_man_page(path: Path) -> str:
    """The page as man-db formats it for a terminal, without overstrikes, its running header and footer lines."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "MANWIDTH": "4000"}
    try:
        formatted = subprocess.run(
            ["man", "--nh", "--nj", "-E", "UTF-8", "-l", str(path)], env=env, check=True, capture_output=True
        ).stdout
        plain = subprocess.run(["col", "-bx"], input=formatted, env=env, check=True, capture_output=True).stdout
    except FileNotFoundError as error:
        raise RuntimeError(f"{error.filename} is missing: apt-get install man-db groff-base") from error
    lines = [line.rstrip() for line in plain.decode("utf-8").splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    lines = lines[1:-1]  # the running header ("GREP(1) … GREP(1)") and the footer line
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def man_documents(root: Path) -> list[Passage]:
    pages = [
        path
        for path in sorted((root / "usr/share/man/de").glob("man*/*"))
        if not path.is_symlink() and path.is_file() and path.name.removesuffix(".gz") not in MAN_EXCLUDE
    ]
    # man and groff are processes of their own: rendered on every core, kept in the pages' order.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        texts = list(pool.map(render_man_page, pages))
    documents: list[Passage] = []
    for path, text in zip(pages, texts, strict=True):
        name = path.name.removesuffix(".gz")
        if len(text.split()) < MIN_WORDS:
            continue
        page, section = name.rsplit(".", 1)
        described = re.search(r"^(?:BEZEICHNUNG|NAME)\n\s*(.+)$", text, re.MULTILINE)
        description = described.group(1).strip() if described else ""
        title = f"{page}({section}) {EN_DASH} {description}".strip(f" {EN_DASH}")
        documents.append({"_id": f"man-{page}.{section}", "title": title, "text": text})
    return documents


class _ChapterParser(html.parser.HTMLParser):
    """A Debian Reference chapter's text, a line per block, without scripts, styles, navigation and the table of
    contents; its title is the first h1 or h2."""

    BLOCK = frozenset(
        {"p", "li", "pre", "td", "th", "tr", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "br", "div", "table"}
    )
    SKIPPED_DIVS = ("navheader", "navfooter", "toc")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0  # open <script>s and <style>s
        self.skipped_divs: list[int] = []  # per skipped <div>: how many <div>s are open inside it
        self.heading: str | None = None
        self.title = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.skip += 1
        elif tag == "div" and dict(attrs).get("class") in self.SKIPPED_DIVS:
            self.skipped_divs.append(0)
        elif tag == "div" and self.skipped_divs:
            self.skipped_divs[-1] += 1
        if tag in self.BLOCK:
            self.parts.append("\n")  # even inside what is skipped: it only separates lines
        if tag in ("h1", "h2") and not self.title:
            self.heading = tag

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip -= 1
        elif tag == "div" and self.skipped_divs:
            if self.skipped_divs[-1] == 0:
                self.skipped_divs.pop()
            else:
                self.skipped_divs[-1] -= 1
        if tag == self.heading:
            self.heading = None
            self.title = re.sub(r"\s+", " ", self.title).strip() or " "  # one heading only, even an empty one

    def handle_data(self, data: str) -> None:
        if self.skip or self.skipped_divs:
            return
        self.parts.append(data)
        if self.heading:
            self.title += data


def reference_documents(root: Path) -> list[Passage]:
    documents: list[Passage] = []
    for path in sorted((root / "usr/share/debian-reference").glob("ch*.de.html")):
        parser = _ChapterParser()
        parser.feed(path.read_text(encoding="utf-8"))
        lines = [re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parser.parts).split("\n")]
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
        if len(text.split()) < MIN_WORDS:
            continue
        title = re.sub(r"^Kapitel \d+\.\s*", "", parser.title)
        documents.append(
            {"_id": "debref-" + path.name.split(".")[0], "title": "Debian-Referenz: " + title, "text": text}
        )
    return documents


def build(sources: Sources, out: Path) -> tuple[SetStats, dict[str, str]]:
    man_pages, reference = sources.debian_package(MAN_PAGES), sources.debian_package(REFERENCE)
    corpus = man_documents(man_pages.root) + reference_documents(reference.root)
    ids = {document["_id"] for document in corpus}
    asked = questions("delong")
    queries: list[Query] = []
    qrels: list[Judgement] = []
    for document_id in sorted(asked):
        if document_id not in ids:
            raise ValueError(f"delong: the document of question {document_id} is not in the corpus")
        for number, question in enumerate(asked[document_id]["de"]):
            query_id = f"dlq-{document_id}" + (f"-{number + 1}" if number else "")
            queries.append({"_id": query_id, "text": question})
            qrels.append((query_id, document_id, "delong:" + document_id))
    words = sorted(len(document["text"].split()) for document in corpus)
    counts = write_beir(out / "delong" / "de", corpus, queries, qrels)
    stats: SetStats = {
        "de": {
            "corpus": len(corpus),
            "queries": len(queries),
            "words_min": words[0],
            "words_median": words[len(words) // 2],
            "words_max": words[-1],
            **counts,
        }
    }
    versions = {MAN_PAGES: man_pages.version, REFERENCE: reference.version}
    versions |= {f"{tool} (renderer)": installed_version(tool) for tool in RENDERERS}
    return stats, versions
