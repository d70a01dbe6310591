"""Writes shared/domain/stopword_lists.py from the Snowball stopword files PostgreSQL ships (share/tsearch_data/*.stop,
the lists its Snowball text search configurations drop), so Python strips the same words the keyword lane's analysers
do, on Lambda too where no PostgreSQL is installed. Run once when the lists change:

    .venv/bin/python -m bench.convert_stopwords [TSEARCH_DATA]

The lists are Snowball's (BSD 3-clause, snowballstem.org), as PostgreSQL distributes them."""

import sys
import textwrap
from pathlib import Path

from shared.domain.languages import ANALYSERS

TARGET = Path(__file__).resolve().parents[1] / "shared" / "domain" / "stopword_lists.py"


def tsearch_data() -> Path:
    import pgserver

    found = sorted(Path(pgserver.__file__).parent.glob("pginstall/share/postgresql/tsearch_data"))
    if not found:
        raise SystemExit("no PostgreSQL tsearch_data here: give its directory")
    return found[0]


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else tsearch_data()
    lines = [
        '"""Each language\'s stopwords: the Snowball lists (BSD 3-clause, snowballstem.org) that PostgreSQL ships',
        "for its Snowball text search configurations (share/tsearch_data/*.stop), by the configuration (analyser)",
        'that drops them. Written by bench/convert_stopwords.py; do not edit by hand."""',
        "",
        "STOPWORD_LISTS: dict[str, str] = {",
    ]
    for path in sorted(source.glob("*.stop")):
        if path.stem not in ANALYSERS:
            continue
        words = sorted({line.strip().lower() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()})
        lines.append(f'    "{path.stem}": (')
        for piece in textwrap.wrap(" ".join(words), 104, break_long_words=False, break_on_hyphens=False):
            lines.append(f'        "{piece} "')
        lines.append("    ),")
    lines.append("}")
    TARGET.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
