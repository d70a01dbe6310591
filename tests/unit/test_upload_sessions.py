"""Upload sessions' pure rules (issue 35, item 5): parts planned within S3's limits, part requests checked, and a
completion accepted only when the stored parts make exactly the declared file."""

import base64
import hashlib

import pytest

from shared.domain.upload_sessions import (
    DEFAULT_PART_BYTES,
    MAX_OBJECT_BYTES,
    MAX_PARTS,
    MIB,
    MIN_PART_BYTES,
    SessionRefused,
    StoredPart,
    completed_parts,
    part_plan,
    requested_parts,
)

GIB = 1024 * MIB


@pytest.mark.parametrize(
    "size", [1, MIN_PART_BYTES, DEFAULT_PART_BYTES, DEFAULT_PART_BYTES + 1, GIB, 200 * GIB, MAX_OBJECT_BYTES]
)
def test_a_plan_keeps_within_s3s_limits_and_its_parts_add_up_to_the_declared_size(size: int) -> None:
    plan = part_plan(size)
    assert plan.part_count <= MAX_PARTS and plan.part_size % MIB == 0 and plan.part_size >= MIN_PART_BYTES
    last = plan.expected_size(plan.part_count)
    assert 0 < last <= plan.part_size
    assert plan.part_size * (plan.part_count - 1) + last == size
    if plan.part_count > 1:
        assert plan.expected_size(1) == plan.part_size


def test_a_gibibyte_goes_in_64_parts_of_16_mib_and_5_tib_in_at_most_10000() -> None:
    assert (part_plan(GIB).part_size, part_plan(GIB).part_count) == (16 * MIB, 64)
    huge = part_plan(MAX_OBJECT_BYTES)
    assert huge.part_count <= MAX_PARTS and huge.part_size == 525 * MIB
    with pytest.raises(SessionRefused, match="5 TiB"):
        part_plan(MAX_OBJECT_BYTES + 1)
    with pytest.raises(SessionRefused, match="at least one byte"):
        part_plan(0)


def digest(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_part_requests_take_the_issues_form_or_parts_with_checksums() -> None:
    plan = part_plan(40 * MIB)  # 3 parts
    assert [p.part_number for p in requested_parts({"partNumbers": [1, 3]}, plan, checksums=False)] == [1, 3]
    asked = requested_parts({"parts": [{"partNumber": 2, "checksumSha256": digest(b"x")}]}, plan, checksums=True)
    assert asked[0].checksum_sha256 == digest(b"x")


@pytest.mark.parametrize(
    ("body", "required", "words"),
    [
        ({"partNumbers": [4]}, False, "parts 1 to 3"),
        ({"partNumbers": [0]}, False, "parts 1 to 3"),
        ({"partNumbers": [1, 1]}, False, "twice"),
        ({"partNumbers": ["1"]}, False, "whole number"),
        ({"partNumbers": [True]}, False, "whole number"),
        ({"partNumbers": []}, False, "at least one"),
        ({"partNumbers": list(range(1, 102))}, False, "at most 100"),
        ({"partNumbers": [1], "parts": []}, False, "not both"),
        ({"parts": "1"}, False, "a list"),
        ({"parts": [{"partNumber": 1}]}, True, "opened with checksums"),
        ({"parts": [{"partNumber": 1, "checksumSha256": "abc"}]}, True, "SHA-256"),
        ({"parts": [{"partNumber": 1, "checksumSha256": base64.b64encode(b"short").decode()}]}, True, "SHA-256"),
        # S3 refuses a checksum of an upload begun without one: refused here first, saying how to have them.
        ({"parts": [{"partNumber": 1, "checksumSha256": digest(b"x")}]}, False, "opened without checksums"),
    ],
)
def test_a_bad_part_request_names_the_part_and_the_rule(body: dict[str, object], required: bool, words: str) -> None:
    with pytest.raises(SessionRefused, match=words):
        requested_parts(body, part_plan(40 * MIB), checksums=required)


def stored(plan_size: int) -> list[StoredPart]:
    plan = part_plan(plan_size)
    return [StoredPart(n, plan.expected_size(n), f'"etag-{n}"') for n in range(1, plan.part_count + 1)]


def test_completion_takes_exactly_the_declared_file() -> None:
    plan = part_plan(40 * MIB)
    parts = stored(40 * MIB)
    claims = [(n, f"etag-{n}") for n in (3, 1, 2)]
    assert [p.part_number for p in completed_parts(plan, parts, claims)] == [1, 2, 3]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("missing", "part 2 has not arrived"),
        ("extra", "part 4 is past the last part"),
        ("short", "part 1 is"),
        ("long_last", "part 3 is"),
        ("stale_etag", "part 2: its ETag"),
        ("claim_missing", "name every part"),
        ("claim_twice", "name every part"),
    ],
)
def test_completion_refuses_anything_but_the_declared_file(change: str, words: str) -> None:
    plan = part_plan(40 * MIB)
    parts = stored(40 * MIB)
    claims = [(n, f"etag-{n}") for n in (1, 2, 3)]
    if change == "missing":
        parts = [p for p in parts if p.part_number != 2]
    elif change == "extra":
        parts.append(StoredPart(4, 10, '"etag-4"'))
    elif change == "short":
        parts[0] = StoredPart(1, parts[0].size - 1, '"etag-1"')
    elif change == "long_last":
        parts[2] = StoredPart(3, parts[2].size + 1, '"etag-3"')
    elif change == "stale_etag":
        parts[1] = StoredPart(2, parts[1].size, '"etag-replaced"')
    elif change == "claim_missing":
        claims = claims[:2]
    elif change == "claim_twice":
        claims = [*claims, (3, "etag-3")]
    with pytest.raises(SessionRefused, match=words):
        completed_parts(plan, parts, claims)
