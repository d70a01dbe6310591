"""How the tools show what the services return, for a model to read: pure functions, unit-tested alone."""

from typing import Any

from functions.tools import models as m
from shared.domain.document import Block, BlockKind, Location
from shared.domain.document_diff import BlockChangeKind, DocumentDiff, SectionDiff

HEADING_SEPARATOR = " > "
_LOCATION_FIELDS = {
    "page",
    "box",
    "sheet",
    "cell_range",
    "slide",
    "paragraph_index",
    "table_index",
    "line_start",
    "line_end",
}


def heading(path: tuple[str, ...] | list[str]) -> str | None:
    """A heading path as one line (None when there is none)."""
    return HEADING_SEPARATOR.join(path) if path else None


def block_ref(index: int, block: Block) -> m.BlockRef:
    return located_ref(index, block.kind, block.location, block.confidence)


def located_ref(index: int, kind: BlockKind, location: Location, confidence: float | None) -> m.BlockRef:
    return m.BlockRef(
        index=index, kind=kind.value, confidence=confidence, **location.model_dump(include=_LOCATION_FIELDS)
    )


def diff_markdown(diff: DocumentDiff) -> str:
    """The differences for a reader: each section by its heading path, what changed in it, and table cells."""
    if diff.identical:
        return "The two documents have the same blocks."
    lines: list[str] = []

    def section_title(section: SectionDiff) -> str:
        return HEADING_SEPARATOR.join(section.heading_path) or "(before the first heading)"

    for label, sections in (("Added", diff.sections_added), ("Removed", diff.sections_removed)):
        for section in sections:
            lines.append(f"- {label} section: {section_title(section)}")
    for section in diff.sections_changed:
        lines.append(f"- Changed section: {section_title(section)}{' (moved)' if section.moved else ''}")
        for change in section.changes:
            if change.kind is BlockKind.TABLE and change.change is BlockChangeKind.CHANGED:
                continue  # its cells are listed below
            before = f" «{change.before_text}»" if change.before_text else ""
            after = f" → «{change.after_text}»" if change.after_text else ""
            lines.append(f"  - {change.change.value} {change.kind.value}:{before}{after}")
    for table in diff.tables_changed:
        where = HEADING_SEPARATOR.join(table.heading_path) or "(before the first heading)"
        lines.append(f"- Table in {where} (block {table.before_index} → {table.after_index}):")
        lines.extend(
            f"  - row {cell.row + 1}, column {cell.column + 1}: «{cell.before}» → «{cell.after}»"
            for cell in table.cells_changed
        )
        if table.rows_added:
            lines.append(f"  - rows added: {', '.join(str(row + 1) for row in table.rows_added)}")
        if table.rows_removed:
            lines.append(f"  - rows removed: {', '.join(str(row + 1) for row in table.rows_removed)}")
    if diff.truncated:
        lines.append("- (more differences than shown: the diff is capped)")
    return "\n".join(lines)


def diff_structure(diff: DocumentDiff) -> dict[str, Any]:
    """The diff as data without the document's words (those are in the fenced content): block ranges and indexes,
    change kinds, table cell positions."""

    def section(entry: SectionDiff) -> dict[str, Any]:
        return {
            "before": entry.before.model_dump() if entry.before else None,
            "after": entry.after.model_dump() if entry.after else None,
            "moved": entry.moved,
            "changes": [
                {
                    "change": change.change.value,
                    "kind": change.kind.value,
                    "beforeIndex": change.before_index,
                    "afterIndex": change.after_index,
                }
                for change in entry.changes
            ],
        }

    return {
        "sectionsAdded": [section(entry) for entry in diff.sections_added],
        "sectionsRemoved": [section(entry) for entry in diff.sections_removed],
        "sectionsChanged": [section(entry) for entry in diff.sections_changed],
        "tablesChanged": [
            {
                "beforeIndex": table.before_index,
                "afterIndex": table.after_index,
                "matchedBy": table.matched_by,
                "cellsChanged": [
                    {"row": cell.row, "beforeRow": cell.before_row, "column": cell.column}
                    for cell in table.cells_changed
                ],
                "rowsAdded": list(table.rows_added),
                "rowsRemoved": list(table.rows_removed),
            }
            for table in diff.tables_changed
        ],
    }
