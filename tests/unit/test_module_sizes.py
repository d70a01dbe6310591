"""docs/architecture.md's "Modules over 500 lines, and why" stays true: a module past 600 lines has a row there
with its reason, and every row names a module that exists and is still over 500 lines."""

import re
from pathlib import Path

from tests.conftest import REPO_ROOT

ROW_REQUIRED_ABOVE = 600
TABLE_FLOOR = 500
FOLDERS = ("shared", "functions", "infra", "bench", "migrations")
SECTION = "## Modules over 500 lines, and why"
ROW = re.compile(r"\|\s*`(?P<path>[^`]+\.py)`\s*\|[^|]*\|(?P<reason>[^|]*)\|")


def table_rows(markdown: str) -> dict[str, str]:
    """Module path → reason, from the rows (| `path` | lines | why |) of the section's table."""
    section = markdown.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return {match["path"]: match["reason"].strip() for match in map(ROW.fullmatch, section.splitlines()) if match}


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def non_test_modules() -> list[Path]:
    return [
        path
        for folder in FOLDERS
        for path in sorted((REPO_ROOT / folder).rglob("*.py"))
        if "tests" not in path.relative_to(REPO_ROOT).parts
        and not path.name.startswith("test_")
        and path.name != "conftest.py"
    ]


def documented() -> dict[str, str]:
    return table_rows((REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))


def test_the_table_is_read_row_by_row() -> None:
    markdown = (
        "## Other\n| `a/elsewhere.py` | ~900 | not this table |\n"
        f"{SECTION}\n\n| module | lines | why it stays one module |\n| --- | --- | --- |\n"
        "| `shared/big.py` | ~1,100 | one bounded decoder |\n| `shared/blank.py` | ~700 |  |\n\n"
        "Prose naming `shared/prose.py` is no row.\n\n## Next\n| `b/after.py` | ~800 | not this table either |\n"
    )
    assert table_rows(markdown) == {"shared/big.py": "one bounded decoder", "shared/blank.py": ""}


def test_every_module_over_600_lines_has_a_row_with_its_reason() -> None:
    rows = documented()
    unexplained = {
        str(path.relative_to(REPO_ROOT)): lines
        for path in non_test_modules()
        if (lines := lines_of(path)) > ROW_REQUIRED_ABOVE and not rows.get(str(path.relative_to(REPO_ROOT)))
    }
    assert not unexplained, (
        f"over {ROW_REQUIRED_ABOVE} lines with no row and reason in docs/architecture.md's {SECTION[3:]!r}"
        " (split it along its seams, or add its row saying why it stays one module):\n"
        + "\n".join(f"  {module}: {lines} lines" for module, lines in sorted(unexplained.items()))
    )


def test_every_row_names_a_module_still_over_500_lines() -> None:
    stale = {}
    for module in documented():
        path = REPO_ROOT / module
        if not path.is_file():
            stale[module] = "no such module"
        elif (lines := lines_of(path)) <= TABLE_FLOOR:
            stale[module] = f"{lines} lines, no longer over {TABLE_FLOOR}"
    assert not stale, f"rows of docs/architecture.md's {SECTION[3:]!r} to remove or correct:\n" + "\n".join(
        f"  {module}: {why}" for module, why in sorted(stale.items())
    )
