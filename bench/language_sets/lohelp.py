"""`lohelp/<lang>/`: LibreOffice's help pages in five languages (Debian's libreoffice-help-* packages), one passage
per page that exists, has text and is translated in every language (the same ids in each: a parallel corpus), and
64 how-to questions written for the set."""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

from bench.language_sets.beir import Judgement, Passage, Query, SetStats, collapse, questions, write_beir
from bench.language_sets.sources import Sources

# Language → (Debian package, the help's folder under usr/share/libreoffice/help).
LANGUAGES = {
    "en": ("libreoffice-help-en-us", "en-US"),
    "de": ("libreoffice-help-de", "de"),
    "es": ("libreoffice-help-es", "es"),
    "ru": ("libreoffice-help-ru", "ru"),
    "zh": ("libreoffice-help-zh-cn", "zh-CN"),
}
# A help page enters the corpus only when its Russian and Chinese versions are mostly translated (untranslated
# strings fall back to English in LibreOffice's help): Latin letters at most MAX_LATIN_SHARE of the characters, and
# at least MIN_CHARS of title and text in every language.
MAX_LATIN_SHARE = 0.20
MIN_CHARS = 200
CHECKED_FOR_LATIN = ("ru", "zh")


class _HelpPageParser(html.parser.HTMLParser):
    """The text of a LibreOffice help page: everything inside <div id="DisplayArea">, a line per block."""

    BREAKS = frozenset({"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "tr", "br", "div", "pre"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # of <div>s inside the display area, 0 outside it
        self.skip = 0
        self.parts: list[str] = []
        self.heading: list[str] = []
        self.in_heading = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "div" and dict(attrs).get("id") == "DisplayArea" and self.depth == 0:
            self.depth = 1
            return
        if not self.depth:
            return
        if tag == "div":
            self.depth += 1
        if tag in ("script", "style"):
            self.skip += 1
        if tag == "h1":
            self.in_heading = True
        if tag in self.BREAKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if not self.depth:
            return
        if tag == "div":
            self.depth -= 1
        if tag in ("script", "style"):
            self.skip -= 1
        if tag == "h1":
            self.in_heading = False

    def handle_data(self, data: str) -> None:
        if self.depth and not self.skip:
            self.parts.append(data)
            if self.in_heading:
                self.heading.append(data)


def help_page(page: str) -> tuple[str, str]:
    """(title, text) of a help page: its h1, and its display area's non-empty lines without the h1 repeated."""
    parser = _HelpPageParser()
    parser.feed(page)
    lines = [line for line in (collapse(line) for line in "".join(parser.parts).split("\n")) if line]
    title = collapse("".join(parser.heading))
    if lines and lines[0] == title:  # the title goes in "title", not twice
        lines = lines[1:]
    return title, "\n".join(lines)


def latin_share(text: str) -> float:
    """The share of A-Z letters among all characters: high in a page left untranslated (English fallback)."""
    return len(re.findall(r"[A-Za-z]", text)) / max(1, len(text))


def translated_everywhere(per_language: dict[str, tuple[str, str]]) -> bool:
    """A page worth a passage: a title and MIN_CHARS of text in every language, Russian and Chinese translated."""
    return all(
        title
        and len(title) + len(text) >= MIN_CHARS
        and (lang not in CHECKED_FOR_LATIN or latin_share(title + " " + text) <= MAX_LATIN_SHARE)
        for lang, (title, text) in per_language.items()
    )


def corpus_id(page: str) -> str:
    return "lo-" + page.removeprefix("text/").removesuffix(".html")


def build(sources: Sources, out: Path) -> tuple[SetStats, dict[str, str]]:
    packages = {lang: sources.debian_package(package) for lang, (package, _) in LANGUAGES.items()}
    helps = {
        lang: packages[lang].root / "usr/share/libreoffice/help" / folder for lang, (_, folder) in LANGUAGES.items()
    }
    asked = questions("lohelp")
    pages: dict[str, dict[str, tuple[str, str]]] = {}
    for page in sorted(path.relative_to(helps["en"]).as_posix() for path in helps["en"].glob("text/**/*.html")):
        if not all((helps[lang] / page).is_file() for lang in LANGUAGES):
            continue
        per_language = {lang: help_page((helps[lang] / page).read_text(encoding="utf-8")) for lang in LANGUAGES}
        if translated_everywhere(per_language):
            pages[page] = per_language
    missing = [page for page in asked if page not in pages] + [
        also for page in asked for also in asked[page].get("also", []) if also not in pages
    ]
    if missing:
        raise ValueError(f"lohelp: pages the questions name are left out of the corpus: {missing}")
    stats: SetStats = {}
    for lang in LANGUAGES:
        corpus: list[Passage] = [
            {"_id": corpus_id(page), "title": per_language[lang][0], "text": per_language[lang][1]}
            for page, per_language in pages.items()
        ]
        queries: list[Query] = []
        qrels: list[Judgement] = []
        for page in sorted(asked):
            query_id = "loq-" + page.removeprefix("text/").removesuffix(".html").replace("/", "-")
            queries.append({"_id": query_id, "text": asked[page][lang]})
            qrels.extend((query_id, corpus_id(gold), "lohelp:" + page) for gold in [page, *asked[page].get("also", [])])
        counts = write_beir(out / "lohelp" / lang, corpus, queries, qrels)
        stats[lang] = {"corpus": len(corpus), "queries": len(queries), **counts}
    return stats, {package.name: package.version for package in packages.values()}
