"""How the tools show a diff and a block's place: pure functions over the domain's values."""

from functions.tools.presenting import block_ref, diff_markdown, diff_structure, heading
from shared.domain.document import Block, BlockKind, Location, Table
from shared.domain.document_diff import compare_blocks

BEFORE = (
    Block(kind=BlockKind.HEADING, text="Prices", level=1),
    Block(kind=BlockKind.PARAGRAPH, text="Prices rose.", heading_path=("Prices",)),
    Block(
        kind=BlockKind.TABLE,
        table=Table(rows=(("Item", "Price"), ("Tea", "3")), header_rows=1),
        heading_path=("Prices",),
        location=Location(sheet="S", cell_range="A1:B2"),
    ),
)


def test_identical_documents_say_so_in_one_sentence() -> None:
    diff = compare_blocks(BEFORE, BEFORE)
    assert diff_markdown(diff) == "The two documents have the same blocks."
    assert diff_structure(diff)["sectionsChanged"] == []


def test_a_changed_cell_is_listed_by_row_and_column_with_both_values() -> None:
    after = (
        *BEFORE[:2],
        BEFORE[2].model_copy(update={"table": Table(rows=(("Item", "Price"), ("Tea", "4")), header_rows=1)}),
    )
    diff = compare_blocks(BEFORE, after)
    shown = diff_markdown(diff)
    assert "- Changed section: Prices" in shown and "row 2, column 2: «3» → «4»" in shown
    # The structure carries places, never the document's words (those are in the fenced content).
    cells = diff_structure(diff)["tablesChanged"][0]["cellsChanged"]
    assert cells == [{"row": 1, "beforeRow": 1, "column": 1}] and "4" not in str(
        diff_structure(diff)["sectionsChanged"]
    )


def test_a_block_ref_carries_its_place_in_camel_case() -> None:
    ref = block_ref(2, BEFORE[2]).model_dump(by_alias=True, exclude_none=True)
    assert ref == {"index": 2, "kind": "table", "sheet": "S", "cellRange": "A1:B2"}
    assert heading(("A", "B")) == "A > B" and heading(()) is None
