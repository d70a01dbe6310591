"""The structural diff: sections by heading path, blocks within them, table cells by row and column; bounded and
deterministic whatever the inputs."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.document import Block, BlockCollector, BlockKind, ExtractionLimits, Table
from shared.domain.document_diff import (
    MAX_CHANGE_TEXT,
    MAX_DIFF_CHANGES,
    MAX_SECTION_CHANGES,
    MAX_TABLE_CHANGES,
    BlockChange,
    BlockChangeKind,
    BlockRange,
    CellChange,
    DocumentDiff,
    compare_blocks,
)


def collected(*blocks: Block) -> tuple[Block, ...]:
    """The blocks as an extractor hands them over: heading paths set as the headings go by."""
    collector = BlockCollector(ExtractionLimits(max_blocks=1_000_000))
    for block in blocks:
        collector.add(block)
    return collector.document("text/plain").blocks


def heading(text: str, level: int = 1) -> Block:
    return Block(kind=BlockKind.HEADING, text=text, level=level)


def paragraph(text: str) -> Block:
    return Block(kind=BlockKind.PARAGRAPH, text=text)


def table(*rows: tuple[str, ...], header_rows: int = 1) -> Block:
    return Block(kind=BlockKind.TABLE, table=Table(rows=rows, header_rows=header_rows))


def section(title: str, *texts: str, level: int = 1) -> list[Block]:
    return [heading(title, level), *(paragraph(text) for text in texts)]


BASE = collected(
    paragraph("Preface."),
    *section("Scope", "Laptops are covered.", "Phones are covered."),
    *section("Rules", "Encrypt disks.", "Lock screens."),
    *section("Contacts", "Ask IT."),
)


def count_entries(diff: DocumentDiff) -> int:
    changed = sum(1 + len(s.changes) for s in diff.sections_changed)
    tables = sum(1 + len(t.cells_changed) + len(t.rows_added) + len(t.rows_removed) for t in diff.tables_changed)
    return len(diff.sections_added) + len(diff.sections_removed) + changed + tables


def all_texts(diff: DocumentDiff) -> list[str]:
    texts = [h for s in (*diff.sections_added, *diff.sections_removed, *diff.sections_changed) for h in s.heading_path]
    texts += [t for s in diff.sections_changed for c in s.changes for t in (c.before_text, c.after_text) if t]
    texts += [t for table in diff.tables_changed for c in table.cells_changed for t in (c.before, c.after)]
    return texts


def test_identical_documents_are_identical_with_nothing_changed() -> None:
    diff = compare_blocks(BASE, BASE)
    assert diff == DocumentDiff(identical=True, unchanged_sections=4)


def test_white_space_and_locations_alone_are_no_change() -> None:
    reflowed = tuple(b.model_copy(update={"text": b.text.replace(" ", "\n  ")}) for b in BASE)
    assert compare_blocks(BASE, reflowed).identical


def test_a_section_added_and_another_removed_are_named_by_heading_path_with_their_blocks() -> None:
    after = collected(
        paragraph("Preface."),
        *section("Scope", "Laptops are covered.", "Phones are covered."),
        *section("Contacts", "Ask IT."),
        *section("Exceptions", "None.", level=2),
    )
    diff = compare_blocks(BASE, after)
    assert not diff.identical
    assert [(s.heading_path, s.before, s.after) for s in diff.sections_removed] == [
        (("Rules",), BlockRange(start=4, end=7), None)
    ]
    assert [(s.heading_path, s.before, s.after) for s in diff.sections_added] == [
        (("Contacts", "Exceptions"), None, BlockRange(start=6, end=8))
    ]
    assert (diff.sections_changed, diff.tables_changed, diff.unchanged_sections, diff.truncated) == ((), (), 3, False)


def test_a_paragraph_changed_within_a_section_is_one_block_change_with_both_texts() -> None:
    after = list(BASE)
    after[3] = paragraph("Phones and tablets are covered.")
    diff = compare_blocks(BASE, collected(*after))
    (changed,) = diff.sections_changed
    assert (changed.heading_path, changed.before, changed.after, changed.moved) == (
        ("Scope",),
        BlockRange(start=1, end=4),
        BlockRange(start=1, end=4),
        False,
    )
    assert changed.changes == (
        BlockChange(
            change=BlockChangeKind.CHANGED,
            kind=BlockKind.PARAGRAPH,
            before_index=3,
            after_index=3,
            before_text="Phones are covered.",
            after_text="Phones and tablets are covered.",
        ),
    )
    assert (diff.sections_added, diff.sections_removed, diff.unchanged_sections) == ((), (), 3)


def test_blocks_inserted_and_deleted_within_a_section_are_added_and_removed() -> None:
    after = collected(
        paragraph("Preface."),
        *section("Scope", "Laptops are covered.", "Desktops are covered.", "Phones are covered."),
        *section("Rules", "Lock screens."),
        *section("Contacts", "Ask IT."),
    )
    diff = compare_blocks(BASE, after)
    changes = {
        s.heading_path: [(c.change, c.before_index, c.after_index) for c in s.changes] for s in diff.sections_changed
    }
    assert changes == {
        ("Scope",): [(BlockChangeKind.ADDED, None, 3)],
        ("Rules",): [(BlockChangeKind.REMOVED, 5, None)],
    }


def test_a_table_cell_changed_gives_its_row_column_and_both_values() -> None:
    prices = table(("Item", "Price"), ("Pen", "1.00"), ("Ink", "4.50"))
    before = collected(*section("Prices", "As of May."), prices)
    after = collected(*section("Prices", "As of May."), table(("Item", "Price"), ("Pen", "1.00"), ("Ink", "4.75")))
    diff = compare_blocks(before, after)
    (changed_table,) = diff.tables_changed
    assert (changed_table.heading_path, changed_table.before_index, changed_table.after_index) == (("Prices",), 2, 2)
    assert changed_table.matched_by == "position"
    assert changed_table.cells_changed == (CellChange(row=2, before_row=2, column=1, before="4.50", after="4.75"),)
    assert (changed_table.rows_added, changed_table.rows_removed, changed_table.truncated) == ((), (), False)
    (section_change,) = diff.sections_changed[0].changes
    assert (section_change.change, section_change.kind) == (BlockChangeKind.CHANGED, BlockKind.TABLE)


def test_table_rows_added_and_removed_keep_the_cells_of_the_other_rows_matched() -> None:
    before = collected(table(("Name", "Role"), ("Ann", "Dev"), ("Bob", "Ops"), ("Cy", "QA")))
    after = collected(table(("Name", "Role"), ("Zoe", "PM"), ("Ann", "Dev"), ("Cy", "Lead")))
    (changed_table,) = compare_blocks(before, after).tables_changed
    assert changed_table.rows_added == (1,)
    assert changed_table.rows_removed == (2,)
    assert changed_table.cells_changed == (CellChange(row=3, before_row=3, column=1, before="QA", after="Lead"),)


def test_a_table_of_thousands_of_changed_rows_shows_at_most_its_cap() -> None:
    before = collected(table(("id", "value"), *((f"r{n}", "old") for n in range(5_000))))
    after = collected(table(("id", "value"), *((f"r{n}", "new") for n in range(5_000))))
    diff = compare_blocks(before, after, max_changes=10_000)
    (changed_table,) = diff.tables_changed
    assert len(changed_table.cells_changed) == MAX_TABLE_CHANGES
    assert changed_table.cells_changed[0] == CellChange(row=1, before_row=1, column=1, before="old", after="new")
    assert changed_table.truncated
    assert diff.truncated


def test_a_table_moved_to_another_section_is_matched_by_its_header() -> None:
    before = collected(*section("Old", "Intro."), table(("Region", "Sales"), ("North", "10")))
    after = collected(*section("New", "Intro."), table(("Region", "Sales"), ("North", "12")))
    diff = compare_blocks(before, after)
    (changed_table,) = diff.tables_changed
    assert (changed_table.matched_by, changed_table.heading_path) == ("header", ("New",))
    assert changed_table.cells_changed == (CellChange(row=1, before_row=1, column=1, before="10", after="12"),)
    assert [s.heading_path for s in diff.sections_removed] == [("Old",)]
    assert [s.heading_path for s in diff.sections_added] == [("New",)]


def test_reordered_sections_are_moved_not_removed_and_added() -> None:
    after = collected(
        paragraph("Preface."),
        *section("Contacts", "Ask IT."),
        *section("Scope", "Laptops are covered.", "Phones are covered."),
        *section("Rules", "Encrypt disks.", "Lock screens."),
    )
    diff = compare_blocks(BASE, after)
    assert not diff.identical
    assert (diff.sections_added, diff.sections_removed) == ((), ())
    assert [(s.heading_path, s.before, s.after, s.moved, s.changes) for s in diff.sections_changed] == [
        (("Contacts",), BlockRange(start=7, end=9), BlockRange(start=1, end=3), True, ())
    ]
    assert diff.unchanged_sections == 3


def test_reordered_blocks_within_a_section_are_a_removal_and_an_addition() -> None:
    before = collected(*section("S", "One.", "Two.", "Three."))
    after = collected(*section("S", "Three.", "One.", "Two."))
    (changed,) = compare_blocks(before, after).sections_changed
    assert [(c.change, c.before_index, c.after_index, c.before_text or c.after_text) for c in changed.changes] == [
        (BlockChangeKind.ADDED, None, 1, "Three."),
        (BlockChangeKind.REMOVED, 3, None, "Three."),
    ]


def test_a_long_changed_text_is_cut_around_its_first_difference() -> None:
    head = "Intro words. " * 100
    before = collected(*section("S", head + "The fee is 10 euros." + " Tail." * 100))
    after = collected(*section("S", head + "The fee is 12 euros." + " Tail." * 100))
    (change,) = compare_blocks(before, after).sections_changed[0].changes
    assert change.before_text is not None
    assert change.after_text is not None
    assert "10 euros" in change.before_text
    assert "12 euros" in change.after_text
    assert len(change.before_text) <= MAX_CHANGE_TEXT
    assert change.before_text.startswith("…")
    assert change.before_text.endswith("…")


def test_large_inputs_finish_within_every_cap() -> None:
    # Given 20,000 blocks a side: sections renamed, paragraphs changed, repeated and reordered, tables edited
    before_blocks: list[Block] = []
    after_blocks: list[Block] = []
    for n in range(2_000):
        before_blocks += [heading(f"Part {n}"), *(paragraph(f"Text {n}.{k}") for k in range(8)), paragraph("Same.")]
        texts = [f"Text {n}.{k}" if (n + k) % 3 else f"Edited {n}.{k}" for k in range(8)]
        after_blocks += [heading(f"Part {n if n % 7 else -n}"), paragraph("Same."), *map(paragraph, texts)]
    wide = table(("h1", "h2"), *((f"r{r}", str(r)) for r in range(5_000)))
    edited = table(("h1", "h2"), *((f"r{r}", str(r + 1)) for r in range(5_000)))
    before, after = collected(*before_blocks, wide), collected(*after_blocks, edited)
    assert len(before) > 20_000
    diff = compare_blocks(before, after)
    # Then the report holds at most the caps, and says it was cut
    assert diff.truncated
    assert count_entries(diff) <= MAX_DIFF_CHANGES
    assert all(len(s.changes) <= MAX_SECTION_CHANGES for s in diff.sections_changed)
    tables = diff.tables_changed
    assert all(len(t.cells_changed) + len(t.rows_added) + len(t.rows_removed) <= MAX_TABLE_CHANGES for t in tables)
    assert all(len(text) <= MAX_CHANGE_TEXT for text in all_texts(diff))
    assert compare_blocks(before, after) == diff  # deterministic


def test_repetitive_inputs_stay_fast_and_bounded() -> None:
    # Items that repeat everywhere give no anchors: the gaps' sizes and autojunk keep SequenceMatcher's work down.
    before = collected(*(paragraph("ab"[(n * 7) % 3 % 2]) for n in range(20_000)))
    after = collected(*(paragraph("ab"[(n * 5) % 3 % 2]) for n in range(20_000)))
    diff = compare_blocks(before, after)
    assert diff.truncated
    assert count_entries(diff) <= MAX_DIFF_CHANGES


def test_a_small_budget_is_shared_across_added_removed_and_changed_sections() -> None:
    before = collected(*(b for n in range(50) for b in section(f"Old {n}", "x")), *section("Kept", "one"))
    after = collected(*(b for n in range(50) for b in section(f"New {n}", "x")), *section("Kept", "two"))
    diff = compare_blocks(before, after, max_changes=9)
    assert (len(diff.sections_changed), len(diff.sections_added), len(diff.sections_removed)) == (1, 4, 4)
    assert diff.sections_changed[0].truncated  # its block change did not fit
    assert diff.truncated
    assert count_entries(diff) <= 9


def test_empty_documents() -> None:
    assert compare_blocks((), ()).identical
    diff = compare_blocks((), BASE)
    assert [s.heading_path for s in diff.sections_added] == [(), ("Scope",), ("Rules",), ("Contacts",)]


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_changes"):
        compare_blocks(BASE, BASE, max_changes=-1)


words = st.sampled_from(["alpha", "beta", "gamma", "delta"])
blocks_strategy = st.lists(
    st.one_of(
        words.map(paragraph),
        words.map(lambda word: heading(word, 1)),
        words.map(lambda word: heading(word, 2)),
        st.tuples(words, words).map(lambda cells: table(("k", "v"), cells)),
    ),
    max_size=25,
).map(lambda blocks: collected(*blocks))


@given(blocks_strategy, blocks_strategy, st.integers(0, 30))
def test_any_two_documents_give_a_bounded_consistent_diff(
    before: tuple[Block, ...], after: tuple[Block, ...], max_changes: int
) -> None:
    diff = compare_blocks(before, after, max_changes=max_changes)
    assert diff.identical == (compare_blocks(after, before).identical)
    assert count_entries(diff) <= max_changes
    if diff.identical:
        assert count_entries(diff) == 0
    elif not diff.truncated:
        assert count_entries(diff) > 0
    for changed in diff.sections_changed:
        for change in changed.changes:
            if change.before_index is not None:
                assert changed.before is not None
                assert changed.before.start <= change.before_index < changed.before.end
            if change.after_index is not None:
                assert changed.after is not None
                assert changed.after.start <= change.after_index < changed.after.end
