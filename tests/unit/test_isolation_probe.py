"""The isolation benchmark's detector and request builder (bench/isolation_probe.py): a detector that cannot
flag a planted foreign row would report 0 whatever the API leaked."""

import random
from typing import Any

import pytest

from bench.isolation_probe import (
    Answer,
    Caller,
    Cell,
    Expectation,
    ProbeRequest,
    RequestBuilder,
    SeededCell,
    callers_of,
    cells_secrets,
    judge,
    operations_of,
    same_refusal,
    slot_kind,
)
from shared.domain.auth import Role

NORTH_ALPHA = Cell("north", "alpha", "vorpalquince")
NORTH_BETA = Cell("north", "beta", "brindlewharf")
SOUTH_ALPHA = Cell("south", "alpha", "ostrakonmere")
READER_OF_NORTH_ALPHA = Caller("north", (("alpha", Role.READ),))
FOREIGN_FILE = "5d1f0a52-0000-4000-8000-00000000f00d"
OWN_FILE = "0a0a0a0a-0000-4000-8000-0000000000aa"

OPENAPI: dict[str, Any] = {
    "paths": {
        "/v1/files/{file_id}": {
            "get": {"parameters": [{"name": "file_id", "in": "path", "required": True, "schema": {"type": "string"}}]}
        },
        "/v1/uploads": {
            "post": {
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["collectionId"],
                                "properties": {"collectionId": {"type": "string"}},
                            }
                        }
                    }
                }
            }
        },
        "/v1/search": {
            "post": {
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Search"}}}}
            }
        },
    },
    "components": {
        "schemas": {
            "Search": {
                "type": "object",
                "required": ["query", "filters"],
                "properties": {"query": {"type": "string"}, "filters": {"$ref": "#/components/schemas/Filters"}},
            },
            "Filters": {
                "type": "object",
                "required": ["collections"],
                "properties": {"collections": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
            },
        }
    },
}


def _seeded(cell: Cell, file_id: str) -> SeededCell:
    seeded = SeededCell(cell)
    for kind in seeded.resources:
        seeded.resources[kind].append(f"{kind}-of-{cell.label}" if kind != "file" else file_id)
    seeded.filenames.append(f"notes-{cell.canary}.md")
    return seeded


SEEDED = [
    _seeded(NORTH_ALPHA, OWN_FILE),
    _seeded(NORTH_BETA, "11111111-0000-4000-8000-0000000000bb"),
    _seeded(SOUTH_ALPHA, FOREIGN_FILE),
]
FOREIGN, OWN = cells_secrets(SEEDED, READER_OF_NORTH_ALPHA)


def _get_file(file_id: str, *, own: bool = False) -> ProbeRequest:
    get_file = operations_of(OPENAPI)[0]
    return ProbeRequest(
        operation=get_file,
        caller=READER_OF_NORTH_ALPHA,
        own=own,
        path=f"/v1/files/{file_id}",
        query={},
        body=None,
        substitutes={} if own else {file_id: "99999999-0000-4000-8000-000000000000"},
        expectation=Expectation.NO_FOREIGN_ROWS if own else Expectation.REFUSAL,
    )


def test_a_foreign_id_planted_in_a_successful_answer_is_seen() -> None:
    verdict = judge(_get_file(OWN_FILE, own=True), Answer(200, f'{{"files": ["{FOREIGN_FILE}"]}}'), FOREIGN, OWN)

    assert verdict.foreign_seen == ["south/alpha file"]


def test_a_foreign_canary_word_in_a_successful_answer_is_seen() -> None:
    verdict = judge(_get_file(OWN_FILE, own=True), Answer(200, '{"excerpt": "the ostrakonmere ledger"}'), FOREIGN, OWN)

    assert verdict.foreign_seen == ["south/alpha canary"]


def test_a_foreign_canary_word_in_an_error_it_was_not_told_is_seen() -> None:
    verdict = judge(_get_file(FOREIGN_FILE), Answer(409, '{"message": "brindlewharf is not ready"}'), FOREIGN, OWN)

    assert verdict.foreign_seen == ["north/beta canary"]


def test_an_error_quoting_the_foreign_id_it_was_sent_is_not_a_foreign_row() -> None:
    verdict = judge(_get_file(FOREIGN_FILE), Answer(422, f'{{"input": "{FOREIGN_FILE}"}}'), FOREIGN, OWN)

    assert verdict.foreign_seen == []
    assert verdict.needs_twin


def test_a_403_for_a_foreign_resource_differs_from_an_absent_ids_404() -> None:
    request = _get_file(FOREIGN_FILE)
    answer = Answer(403, '{"error": "forbidden"}')

    assert judge(request, answer, FOREIGN, OWN).needs_twin
    assert not same_refusal(answer, Answer(404, '{"error": "not_found"}'), request.substitutes)


def test_a_refusal_identical_to_an_absent_ids_after_putting_the_id_back_confirms_nothing() -> None:
    request = _get_file(FOREIGN_FILE)
    twin = request.twin()
    substitute = request.substitutes[FOREIGN_FILE]

    assert twin.path == f"/v1/files/{substitute}"
    assert same_refusal(Answer(422, f'"{FOREIGN_FILE} bad"'), Answer(422, f'"{substitute} bad"'), request.substitutes)


def test_a_404_for_a_foreign_resource_is_a_proper_refusal() -> None:
    verdict = judge(_get_file(FOREIGN_FILE), Answer(404, '{"error": "not_found"}'), FOREIGN, OWN)

    assert (verdict.foreign_seen, verdict.needs_twin, verdict.accepted_foreign) == ([], False, False)


def test_a_success_where_a_refusal_was_due_is_an_accepted_foreign_resource() -> None:
    verdict = judge(_get_file(FOREIGN_FILE), Answer(200, "{}"), FOREIGN, OWN)

    assert verdict.accepted_foreign


def test_an_own_probe_that_reads_its_own_row_counts_it() -> None:
    verdict = judge(_get_file(OWN_FILE, own=True), Answer(200, f'{{"fileId": "{OWN_FILE}"}}'), FOREIGN, OWN)

    assert verdict.own_seen == ["north/alpha file"]


def test_slots_are_recognised_by_how_their_names_end() -> None:
    names = ["file_id", "fileId", "targetCollectionId", "collection_id", "versionId", "chunkId", "version", "query"]
    assert [slot_kind(name) for name in names] == [
        "file", "file", "collection", "collection", "version", "chunk", None, None
    ]  # fmt: skip


def test_a_foreign_probe_puts_a_foreign_id_in_the_path_and_expects_a_refusal() -> None:
    builder = RequestBuilder(random.Random(1), SEEDED)
    get_file = operations_of(OPENAPI)[0]

    request = builder.build(get_file, READER_OF_NORTH_ALPHA, own=False)

    foreign_id = request.path.rsplit("/", 1)[-1]
    assert foreign_id in FOREIGN
    assert request.expectation is Expectation.REFUSAL
    assert foreign_id not in request.twin().path


def test_an_own_probe_names_only_the_callers_own_cell() -> None:
    builder = RequestBuilder(random.Random(2), SEEDED)

    request = builder.build(operations_of(OPENAPI)[0], READER_OF_NORTH_ALPHA, own=True)

    assert request.path == f"/v1/files/{OWN_FILE}"
    assert request.substitutes == {}


@pytest.mark.parametrize("seed", range(5))
def test_a_searchs_foreign_filter_collection_and_canary_expect_an_answer_without_foreign_rows(seed: int) -> None:
    builder = RequestBuilder(random.Random(seed), SEEDED)
    search = operations_of(OPENAPI)[2]

    request = builder.build(search, READER_OF_NORTH_ALPHA, own=False)

    assert request.expectation is Expectation.NO_FOREIGN_ROWS
    assert request.body["query"] in {NORTH_BETA.canary, SOUTH_ALPHA.canary}
    assert set(request.body["filters"]["collections"]) <= {"alpha", "beta"}


def test_every_tenant_gets_each_set_of_its_collections_with_each_role() -> None:
    callers = callers_of([NORTH_ALPHA, NORTH_BETA, SOUTH_ALPHA])

    # north: {alpha} 3 + {beta} 3 + {alpha, beta} 9; south: {alpha} 3.
    assert len(callers) == 18
    assert Caller("north", (("alpha", Role.ADMIN), ("beta", Role.READ))) in callers


def test_a_write_into_a_collection_the_caller_has_no_role_in_is_never_excused_by_its_twin() -> None:
    builder = RequestBuilder(random.Random(3), SEEDED)

    request = builder.build(operations_of(OPENAPI)[1], READER_OF_NORTH_ALPHA, own=False)

    # "alpha" is the caller's own name in its tenant; "beta" is the one collection it has no role in.
    assert request.body == {"collectionId": "beta"}
    assert request.expectation is Expectation.REFUSAL
    assert request.names_foreign_collection
    assert request.twin().body["collectionId"].startswith("absent-")


def test_every_route_of_the_document_is_read_though_a_schema_nests_itself() -> None:
    """The metadata filter nests filters (andAll of filters): resolving it must end, or `make bench` never runs."""
    import json
    from pathlib import Path

    from bench.isolation_probe import _resolved

    document = json.loads((Path(__file__).parents[2] / "clients" / "openapi.json").read_text())
    components = document["components"]["schemas"]
    resolved = _resolved({"$ref": "#/components/schemas/MetadataFilter"}, components)
    assert json.dumps(resolved).count('"$ref"') == 0 and resolved
