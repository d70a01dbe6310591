import pytest

from shared.domain.layout import TextLine, extent, on_page, union
from shared.domain.recognition import BoundingBox


def test_the_union_of_boxes_is_the_smallest_box_around_all_of_them() -> None:
    first = BoundingBox(left=0.1, top=0.2, width=0.3, height=0.1)
    second = BoundingBox(left=0.25, top=0.5, width=0.5, height=0.25)

    joined = union([first, second])

    assert (joined.left, joined.top) == (0.1, 0.2)
    assert joined.right == pytest.approx(0.75)
    assert joined.bottom == pytest.approx(0.75)


def test_one_box_is_its_own_union_unchanged() -> None:
    box = BoundingBox(left=0.1, top=0.2, width=0.7, height=0.3)

    assert union([box]) is box


def test_a_union_reaching_past_the_page_is_cut_at_its_edge() -> None:
    # A box may be valid and still end past the page (left 0.5 + width 0.8).
    wide = BoundingBox(left=0.5, top=0.6, width=0.8, height=0.9)
    inside = BoundingBox(left=0.2, top=0.1, width=0.1, height=0.1)

    joined = union([wide, inside])

    assert (joined.left, joined.top, joined.right, joined.bottom) == (0.2, 0.1, 1.0, 1.0)


def test_a_rectangle_is_put_on_the_page_edge_by_edge() -> None:
    assert on_page(-0.01, 0.2, 1.02, 0.4) == BoundingBox(left=0.0, top=0.2, width=1.0, height=0.4 - 0.2)
    # An edge entirely off the page leaves an empty box on the page's edge, never a negative one.
    assert on_page(1.1, 0.5, 1.3, 0.4) == BoundingBox(left=1.0, top=0.5, width=0.0, height=0.0)


def test_the_extent_of_lines_is_their_outer_edges_unclamped() -> None:
    lines = [
        TextLine(page=1, text="a", size=10, left=0.3, top=0.1, right=0.6, bottom=0.15),
        TextLine(page=1, text="b", size=10, left=-0.05, top=0.2, right=1.05, bottom=0.25),
    ]

    assert extent(lines) == (-0.05, 0.1, 1.05, 0.25)
