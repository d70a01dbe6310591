"""`dhb/<lang>/`: The Debian Administrator's Handbook in six languages (Debian's `debian-handbook`, Publican HTML in
en-US de-DE es-ES ru-RU zh-CN ar-MA), the set that has Arabic at size.

A passage is one section of the book (the text under one heading, without its sub-sections and boxes) or one sidebar
box (TIP, NOTE, BACK TO BASICS …). Units are aligned across languages by position in the same HTML page: every
translation is generated from the same DocBook source, and the build checks the counts are equal. Id = the DocBook
anchor, or `<page>.u<N>` for a box without one.

Translation is partial upstream (untranslated paragraphs fall back to English). A unit's translated share in a
language = 1 - (characters of paragraphs identical to an English paragraph of the unit that read as English prose)
/ (all characters). The corpus (the same ids in every language) = the units with at least MIN_EN_CHARS of English
text whose Arabic version is at least MIN_AR_SHARE translated; the text is what the package ships, so some ru/zh
passages hold English paragraphs (the mean share per language is in the manifest). Every passage a question is
about is at least MIN_GOLD_SHARE translated in all six languages (checked).
"""

from __future__ import annotations

import html.parser
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.language_sets.beir import Judgement, Passage, Query, SetStats, questions, write_beir
from bench.language_sets.sources import Sources

PACKAGE = "debian-handbook"
LANGUAGES = {"en": "en-US", "de": "de-DE", "es": "es-ES", "ru": "ru-RU", "zh": "zh-CN", "ar": "ar-MA"}
MIN_EN_CHARS = 300
MIN_AR_SHARE = 0.80
MIN_GOLD_SHARE = 0.90
ENGLISH_PROSE = re.compile(r"\b(the|and|of|is|to|with|which|that)\b")
VOID = frozenset({"br", "img", "meta", "link", "hr", "input", "col", "area", "base", "wbr"})
BLOCK = frozenset({"div", "p", "li", "pre", "td", "th", "tr", "dt", "dd", "table"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# "Chapter 3. ", "8.1.2. " (English numbering), then any script's word and number ("Глава 3. ", "الفصل 3. ").
ENGLISH_NUMBERING = re.compile(r"^(Chapter|Appendix)?\s*[\dA-Z]+(\.[\d]+)*\.\s+")
NUMBERING = re.compile(r"^\S*\s*[\dA-Z]+(\.\d+)*\.\s+")

SKIPPED, SIDEBAR, TITLE = "skip", "sidebar", "title"  # what an open element's end closes


@dataclass
class Unit:
    kind: str  # "section" or "sidebar"
    anchor: str | None = None
    title: str = ""
    paragraphs: list[str] = field(default_factory=list)


class _UnitParser(html.parser.HTMLParser):
    """Sections (split at every h1-h6 title) and sidebar boxes of one Publican HTML page, in order; the navigation,
    banner and tables of contents are skipped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.units: list[Unit] = []
        self.open: list[tuple[str, str | None]] = []  # (tag, what its end closes)
        self.current: Unit | None = None
        self.outer: list[Unit | None] = []  # the unit a sidebar interrupts
        self.skip = 0
        self.in_title = False

    def _start(self, kind: str) -> Unit:
        self.current = Unit(kind)
        self.units.append(self.current)
        return self.current

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag in VOID:
            if tag == "br" and self.current is not None and not self.skip and not self.in_title:
                self.current.paragraphs.append("")
            return
        if self.skip or _skipped(tag, attributes):
            self.open.append((tag, SKIPPED))
            self.skip += 1
            return
        role = self._role(tag, attributes)
        current = self.current
        if current is not None and tag == "a" and (anchor := attributes.get("id")) and current.anchor is None:
            by_title = self.in_title or (current.kind == SIDEBAR and not current.title)
            # An "id-…" anchor is generated, not the section's: taken only from inside a title.
            if by_title and (self.in_title or not anchor.startswith("id-")):
                current.anchor = anchor
        if tag in BLOCK and current is not None and not self.in_title:
            current.paragraphs.append("")
        self.open.append((tag, role))

    def _role(self, tag: str, attributes: dict[str, str | None]) -> str | None:
        """Opens a sidebar unit, a section unit at a heading, or a sidebar's title; what the element's end closes."""
        classes = attributes.get("class") or ""
        if tag == "div" and classes == "sidebar":
            self.outer.append(self.current)
            self._start(SIDEBAR)
            return SIDEBAR
        if tag in HEADINGS and "title" in classes:
            if self.current is None or self.current.kind != SIDEBAR:
                self._start("section")
            self.in_title = True
            return TITLE
        current = self.current
        if tag == "p" and "title" in classes and current is not None and current.kind == SIDEBAR and not current.title:
            self.in_title = True
            return TITLE
        return None

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or not any(opened == tag for opened, _ in self.open):
            return
        while self.open:
            opened, role = self.open.pop()
            if role == SKIPPED:
                self.skip -= 1
            elif role == SIDEBAR:
                self.current = self.outer.pop()
            elif role == TITLE:
                self.in_title = False
            if opened == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.skip or self.current is None:
            return
        if self.in_title:
            self.current.title += data
        elif self.current.paragraphs:
            self.current.paragraphs[-1] += data


def _skipped(tag: str, attributes: dict[str, str | None]) -> bool:
    """The page's navigation, banner, table of contents and running title: no unit's text."""
    classes = attributes.get("class") or ""
    return (
        (tag == "ul" and "docnav" in classes)
        or (tag == "div" and (attributes.get("id") == "banner" or classes == "toc"))
        or (tag == "p" and attributes.get("id") == "title")
    )


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u200f", "")).strip()  # without right-to-left marks


def page_units(page: str) -> list[Unit]:
    """The page's units: paragraphs normalized (empty ones dropped), titles without their section numbers."""
    parser = _UnitParser()
    parser.feed(page)
    return [
        Unit(
            unit.kind,
            unit.anchor,
            NUMBERING.sub("", ENGLISH_NUMBERING.sub("", _normalized(unit.title))),
            [paragraph for paragraph in map(_normalized, unit.paragraphs) if paragraph],
        )
        for unit in parser.units
    ]


def translated_share(paragraphs: list[str], english: list[str]) -> float:
    """1 - the share of characters in paragraphs left as the English ones (and reading as English prose)."""
    left_english = set(english)
    total = sum(len(paragraph) for paragraph in paragraphs)
    untranslated = sum(
        len(paragraph)
        for paragraph in paragraphs
        if paragraph in left_english and len(ENGLISH_PROSE.findall(paragraph)) >= 3
    )
    return 1 - untranslated / max(1, total)


def _kept_units(html_root: Path) -> dict[str, dict[str, Any]]:
    """Unit id → {"share": {lang: translated share}, lang: (title, text), …} for the units the corpus keeps."""
    items: dict[str, dict[str, Any]] = {}
    for page in sorted(path.name for path in (html_root / LANGUAGES["en"]).glob("*.html")):
        units = {
            lang: page_units((html_root / folder / page).read_text(encoding="utf-8"))
            for lang, folder in LANGUAGES.items()
        }
        counts = {lang: len(found) for lang, found in units.items()}
        if len(set(counts.values())) != 1:
            raise ValueError(f"dhb {page}: the languages have different numbers of units {counts}")
        for position, english in enumerate(units["en"]):
            unit_id = english.anchor or f"{page.removesuffix('.html')}.u{position}"
            if unit_id in items:
                raise ValueError(f"dhb {page}: unit id {unit_id} twice")
            if len("\n".join(english.paragraphs)) < MIN_EN_CHARS:
                continue
            share = {
                lang: round(translated_share(units[lang][position].paragraphs, english.paragraphs), 3)
                for lang in LANGUAGES
                if lang != "en"
            }
            if share["ar"] < MIN_AR_SHARE:
                continue
            items[unit_id] = {"share": share} | {
                lang: (units[lang][position].title, "\n".join(units[lang][position].paragraphs)) for lang in LANGUAGES
            }
    return items


def build(sources: Sources, out: Path) -> tuple[SetStats, str]:
    package = sources.debian_package(PACKAGE)
    items = _kept_units(package.root / "usr/share/doc/debian-handbook/html")
    asked = questions("dhb")
    for key in asked:
        if key not in items:
            raise ValueError(f"dhb: the passage of question {key} is not in the corpus")
        if min(items[key]["share"].values()) < MIN_GOLD_SHARE:
            raise ValueError(f"dhb: the passage of question {key} is translated less than that: {items[key]['share']}")
    stats: SetStats = {}
    for lang in LANGUAGES:
        corpus: list[Passage] = [
            {"_id": "dhb-" + unit_id, "title": item[lang][0], "text": item[lang][1]} for unit_id, item in items.items()
        ]
        queries: list[Query] = [{"_id": "dhbq-" + key, "text": asked[key][lang]} for key in sorted(asked)]
        qrels: list[Judgement] = [("dhbq-" + key, "dhb-" + key, "dhb:" + key) for key in sorted(asked)]
        mean_share = (
            None if lang == "en" else round(sum(item["share"][lang] for item in items.values()) / len(items), 3)
        )
        counts = write_beir(out / "dhb" / lang, corpus, queries, qrels)
        stats[lang] = {"corpus": len(corpus), "queries": len(queries), "mean_translated_share": mean_share, **counts}
    return stats, package.version
