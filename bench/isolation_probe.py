"""The isolation probe's pure parts (no network): the seeded cells, requests built from the OpenAPI document
with a cell's ids in every slot that names a resource, and the detector that judges each answer.

A cell is one (tenant, collection) with its own canary word; a caller reads some cells and not the others.
A probe names resources of a cell the caller may not read (and, now and then, of one it may: a harness that
never sees a row proves nothing). The detector flags: a foreign id or canary word in a 2xx body (or in an
error body that was not told it); any 2xx where a refusal was due; and a refusal other than 404 that differs
from the answer an id that does not exist gets (a 403 for a foreign id would confirm the id exists).
"""

import json
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import product
from typing import Any

from shared.domain.auth import Role

COLLECTION = "collection"
# What an id-shaped slot names, by how its parameter or field name ends (`file_id`, `fileId`,
# `targetCollectionId` and `sourceFileId` all count), so a new route's slots are filled without a change here.
RESOURCE_KINDS = ("file", "version", "artifact", "export", "replacement", "chunk")
SLOT_KINDS = (COLLECTION, *RESOURCE_KINDS)
# POSTs that only read: probed with the caller's own targets too. Every other POST, and DELETE, only with a
# foreign target somewhere in it, so the seed is never changed by a request that should succeed.
READ_ONLY_POSTS = frozenset({"POST /v1/search"})
# Each slot of a foreign probe names the foreign cell with this probability (at least one always does), so a
# check on one slot cannot hide a missing check on another (an own collection with foreign sources, say).
FOREIGN_SLOT_SHARE = 0.6
# An id that no tenant has: what a refusal for a foreign id must be indistinguishable from.
NEVER_SEEDED_COLLECTION_PREFIX = "absent-"
MEDIA_TYPES_BY_SUFFIX = {".md": "text/markdown", ".txt": "text/plain", ".pdf": "application/pdf"}


def slot_kind(name: str) -> str | None:
    """The kind of resource a parameter or body field names, or None when it names none."""
    key = name.replace("_", "").replace("-", "").lower()
    return next((kind for kind in SLOT_KINDS if key.endswith(f"{kind}id")), None)


@dataclass(frozen=True)
class Cell:
    tenant: str
    collection: str
    canary: str

    @property
    def label(self) -> str:
        return f"{self.tenant}/{self.collection}"


@dataclass
class SeededCell:
    """What was seeded in one cell: ids by kind, each file's versions, and the filenames (which carry the
    cell's canary word)."""

    cell: Cell
    resources: dict[str, list[str]] = field(default_factory=lambda: {kind: [] for kind in RESOURCE_KINDS})
    version_of: dict[str, str] = field(default_factory=dict)
    filenames: list[str] = field(default_factory=list)

    def secrets(self) -> dict[str, str]:
        """Every string of this cell another cell's caller must never read, with what it is."""
        named = {value: f"{self.cell.label} {kind}" for kind, values in self.resources.items() for value in values}
        named[self.cell.canary] = f"{self.cell.label} canary"
        return named


@dataclass(frozen=True)
class Caller:
    tenant: str
    roles: tuple[tuple[str, Role], ...]

    @property
    def collections(self) -> frozenset[str]:
        return frozenset(collection for collection, _ in self.roles)

    def may_read(self, cell: Cell) -> bool:
        return cell.tenant == self.tenant and cell.collection in self.collections

    @property
    def label(self) -> str:
        return f"{self.tenant}[{','.join(f'{c}:{r.value}' for c, r in self.roles)}]"


def callers_of(cells: Sequence[Cell]) -> list[Caller]:
    """Every caller of every tenant: each non-empty set of its collections, each role in each."""
    callers = []
    for tenant in sorted({cell.tenant for cell in cells}):
        names = sorted(cell.collection for cell in cells if cell.tenant == tenant)
        for mask in range(1, 2 ** len(names)):
            chosen = [name for bit, name in enumerate(names) if mask >> bit & 1]
            for roles in product(Role, repeat=len(chosen)):
                callers.append(Caller(tenant, tuple(zip(chosen, roles, strict=True))))
    return callers


@dataclass(frozen=True)
class Parameter:
    name: str
    required: bool
    schema: Mapping[str, Any]


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    path_parameters: tuple[Parameter, ...]
    query_parameters: tuple[Parameter, ...]
    body: Mapping[str, Any] | None

    @property
    def route(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def only_reads(self) -> bool:
        return self.method == "GET" or self.route in READ_ONLY_POSTS


def operations_of(openapi: Mapping[str, Any]) -> list[Operation]:
    """Every operation of the OpenAPI document, its `$ref`s resolved, in the document's order."""
    components = openapi.get("components", {}).get("schemas", {})
    operations = []
    for path, methods in openapi["paths"].items():
        for method, spec in methods.items():
            parameters = [
                (where, Parameter(p["name"], bool(p.get("required")), _resolved(p.get("schema", {}), components)))
                for p in spec.get("parameters", [])
                for where in [p["in"]]
            ]
            content = spec.get("requestBody", {}).get("content", {}).get("application/json")
            operations.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    path_parameters=tuple(p for where, p in parameters if where == "path"),
                    query_parameters=tuple(p for where, p in parameters if where == "query"),
                    body=_resolved(content["schema"], components) if content else None,
                )
            )
    return operations


def _resolved(schema: Any, components: Mapping[str, Any], inside: frozenset[str] = frozenset()) -> Any:
    """The schema with its references inlined; a reference back into itself (the metadata filter nests filters) is
    left as an empty schema, so a recursive shape ends."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            return {} if name in inside else _resolved(components[name], components, inside | {name})
        return {key: _resolved(value, components, inside) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_resolved(item, components, inside) for item in schema]
    return schema


class Expectation(StrEnum):
    REFUSAL = "refusal"  # a foreign resource is named: 404, as for an id that does not exist
    NO_FOREIGN_ROWS = "no_foreign_rows"  # a listing, a search, the caller itself: answer, but only own rows


@dataclass
class ProbeRequest:
    operation: Operation
    caller: Caller
    own: bool
    path: str
    query: dict[str, str]
    body: Any
    # Each foreign value the request names, and the never-seeded value its twin names instead.
    substitutes: dict[str, str]
    expectation: Expectation
    # A collection the caller has no role in is what the request acts on: accepting it is never right, even
    # where a collection nobody has would be accepted too (collections exist by being named).
    names_foreign_collection: bool = False

    def text(self) -> str:
        return json.dumps([self.path, self.query, self.body])

    def twin(self) -> "ProbeRequest":
        """The same request with every foreign value replaced by one no tenant has."""
        return ProbeRequest(
            operation=self.operation,
            caller=self.caller,
            own=self.own,
            path="/".join(self.substitutes.get(part, part) for part in self.path.split("/")),
            query={key: self.substitutes.get(value, value) for key, value in self.query.items()},
            body=_substituted(self.body, self.substitutes),
            substitutes={},
            expectation=self.expectation,
            names_foreign_collection=self.names_foreign_collection,
        )


def _substituted(value: Any, substitutes: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return substitutes.get(value, value)
    if isinstance(value, list):
        return [_substituted(item, substitutes) for item in value]
    if isinstance(value, dict):
        return {key: _substituted(item, substitutes) for key, item in value.items()}
    return value


class RequestBuilder:
    """Fills an operation's path, query and body from its schema; slots from seeded cells."""

    def __init__(self, rng: random.Random, seeded: Sequence[SeededCell]) -> None:
        self._rng = rng
        self._seeded = list(seeded)

    def build(self, operation: Operation, caller: Caller, *, own: bool) -> ProbeRequest:
        own_cells = [s for s in self._seeded if caller.may_read(s.cell)]
        foreign_cells = [s for s in self._seeded if not caller.may_read(s.cell)]
        for attempt in range(8):
            filling = _Filling(
                rng=self._rng,
                caller=caller,
                own_cell=self._rng.choice(own_cells),
                foreign_cell=None if own else self._rng.choice(foreign_cells),
                foreign_collections=sorted({s.cell.collection for s in foreign_cells} - caller.collections),
                foreign_share=FOREIGN_SLOT_SHARE if attempt < 7 else 1.0,
            )
            request = filling.request(operation, own=own)
            # A foreign probe names at least one foreign slot when the operation has slots at all.
            if own or request.substitutes or not filling.slots_seen:
                return request
        raise AssertionError("unreachable: the last attempt makes every slot foreign")


@dataclass
class _Filling:
    rng: random.Random
    caller: Caller
    own_cell: SeededCell
    foreign_cell: SeededCell | None
    foreign_collections: list[str]
    foreign_share: float
    slots_seen: int = 0
    substitutes: dict[str, str] = field(default_factory=dict)
    refusal_due: bool = False
    collection_bound: bool = False
    _picks: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def target(self) -> SeededCell:
        """The cell the probe is about: its canary is searched for, its filenames filtered on."""
        return self.foreign_cell or self.own_cell

    def request(self, operation: Operation, *, own: bool) -> ProbeRequest:
        path = operation.path
        for parameter in operation.path_parameters:
            value = self.value(parameter.name, parameter.schema, binding=True)
            path = path.replace("{" + parameter.name + "}", str(value))
        query: dict[str, str] = {}
        for parameter in operation.query_parameters:
            # A query slot (collectionId, versionId) half the time; other optional parameters (cursors,
            # limits, dates) are left to their defaults.
            wanted = parameter.required or (slot_kind(parameter.name) is not None and self.rng.random() < 0.5)
            if wanted:
                query[parameter.name] = str(self.value(parameter.name, parameter.schema, binding=False))
        body = self.value("body", operation.body, binding=True) if operation.body is not None else None
        return ProbeRequest(
            operation=operation,
            caller=self.caller,
            own=own,
            path=path,
            query=query,
            body=body,
            substitutes=self.substitutes,
            expectation=Expectation.REFUSAL if self.refusal_due else Expectation.NO_FOREIGN_ROWS,
            names_foreign_collection=self.collection_bound,
        )

    def value(self, name: str, schema: Mapping[str, Any], *, binding: bool) -> Any:
        """A value for one field. `binding`: the slot names what the request acts on (a path, a body), so a
        foreign value there must be refused; a query's or a filter's collection only narrows what is read."""
        kind = slot_kind(name)
        if kind is not None:
            return self.slot(kind, binding=binding)
        if options := schema.get("anyOf"):
            concrete = [option for option in options if option.get("type") != "null"]
            return self.value(name, concrete[0], binding=binding) if concrete else None
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        builders: dict[str, Callable[[], Any]] = {
            "object": lambda: self.object(name, schema, binding=binding),
            "array": lambda: self.array(name, schema, binding=binding),
            "integer": lambda: max(int(schema.get("minimum", 1)), min(1, int(schema.get("maximum", 1)))),
            "number": lambda: schema.get("default", 0.25),
            "boolean": lambda: self.rng.random() < 0.5,
        }
        build = builders.get(str(schema.get("type")))
        return build() if build else self.text(name, schema)

    def object(self, name: str, schema: Mapping[str, Any], *, binding: bool) -> dict[str, Any]:
        required = set(schema.get("required", ()))
        built: dict[str, Any] = {}
        # A search's filters only narrow what is read: a foreign collection there must yield no rows.
        inner_binding = binding and name != "filters"
        for field_name, field_schema in schema.get("properties", {}).items():
            # Optional fields half the time; free-form blocks never (markdown does their job, and the schema
            # only half-describes them).
            if field_name not in required and (field_name == "blocks" or self.rng.random() < 0.5):
                continue
            built[field_name] = self.value(field_name, field_schema, binding=inner_binding)
        return built

    def array(self, name: str, schema: Mapping[str, Any], *, binding: bool) -> list[Any]:
        if name == "operations":
            return [{"op": "delete", "blockId": "probe-block"}]
        items = schema.get("items", {})
        count = max(int(schema.get("minItems", 0)), self.rng.randint(1, 2))
        count = min(count, int(schema.get("maxItems", count)))
        if name == "collections":
            return [self.slot(COLLECTION, binding=binding) for _ in range(count)]
        if name == "mediaTypes":
            return self.rng.sample(sorted(MEDIA_TYPES_BY_SUFFIX.values()), min(count, len(MEDIA_TYPES_BY_SUFFIX)))
        return [self.value(name, items, binding=binding) for _ in range(count)]

    def text(self, name: str, schema: Mapping[str, Any]) -> str:
        fixed = {"markdown": "# Probe\n\nA probe's paragraph.", "pages": "1", "ranges": "1"}
        chosen = {
            "query": lambda: self.target.cell.canary,
            "filename": lambda: self.rng.choice(self.target.filenames),
            "mediaType": lambda: self.rng.choice(sorted(MEDIA_TYPES_BY_SUFFIX.values())),
        }
        if name in fixed:
            return fixed[name]
        if name in chosen:
            return chosen[name]()
        if schema.get("format") == "date-time":
            return "2100-01-01T00:00:00Z" if "before" in name.lower() else "2000-01-01T00:00:00Z"
        return str(uuid.uuid4()) if schema.get("format") == "uuid" else "probe"

    def slot(self, kind: str, *, binding: bool) -> str:
        self.slots_seen += 1
        foreign = self.foreign_cell is not None and self.rng.random() < self.foreign_share
        if kind == COLLECTION:
            if foreign and self.foreign_collections:
                value = self.rng.choice(self.foreign_collections)
                self.substitutes[value] = f"{NEVER_SEEDED_COLLECTION_PREFIX}{uuid.uuid4().hex[:12]}"
                self.refusal_due = self.refusal_due or binding
                self.collection_bound = self.collection_bound or binding
                return value
            return self.own_cell.cell.collection
        cell = self.foreign_cell if foreign and self.foreign_cell is not None else self.own_cell
        value = self.pick(cell, kind)
        if cell is self.foreign_cell:
            self.substitutes[value] = str(uuid.uuid4())
            # A foreign resource anywhere (a path, a body, a query's versionId) is a resource the caller
            # acts on or reads: only a 404 answers it.
            self.refusal_due = True
        return value

    def pick(self, seeded: SeededCell, kind: str) -> str:
        """One resource of the cell per kind and probe, so a fileId and its versionId agree."""
        key = (seeded.cell.label, kind)
        if key not in self._picks:
            chosen_file = self._picks.get((seeded.cell.label, "file"))
            if kind == "version" and chosen_file in seeded.version_of:
                self._picks[key] = seeded.version_of[chosen_file]
            else:
                self._picks[key] = self.rng.choice(seeded.resources[kind])
        return self._picks[key]


@dataclass(frozen=True)
class Answer:
    status: int
    body: str


@dataclass
class Verdict:
    foreign_seen: list[str]
    own_seen: list[str]
    # A refusal was due and the answer was neither a 404 nor a success: settled by the twin's answer.
    needs_twin: bool
    # A refusal was due and the request succeeded: a foreign row unless the twin succeeds too (the route
    # ignored the reference, as it would an id nobody has) and no foreign collection was acted on.
    accepted_foreign: bool
    server_error: bool
    throttled: bool


def found_in(text: str, secrets: Mapping[str, str]) -> list[str]:
    """What each secret found in `text` is, once per secret."""
    return sorted({label for secret, label in secrets.items() if secret in text})


def judge(request: ProbeRequest, answer: Answer, foreign: Mapping[str, str], own: Mapping[str, str]) -> Verdict:
    """The detector. `foreign`: every string the caller must never read; `own`: its own cells' strings."""
    success = 200 <= answer.status < 300
    told = request.text()
    # An error may quote what it was told (a validator echoes its input); nothing else foreign.
    visible = {s: label for s, label in foreign.items() if success or s not in told}
    refused_properly = answer.status == 404
    due = request.expectation is Expectation.REFUSAL
    return Verdict(
        foreign_seen=found_in(answer.body, visible),
        own_seen=found_in(answer.body, own) if success and request.own else [],
        needs_twin=due and not success and not refused_properly and answer.status != 429,
        accepted_foreign=due and success,
        server_error=answer.status >= 500,
        throttled=answer.status == 429,
    )


def same_refusal(answer: Answer, twin_answer: Answer, substitutes: Mapping[str, str]) -> bool:
    """Whether the answer for the foreign ids is the one an id no tenant has gets (after putting the foreign
    values back where the twin's answer quotes its own)."""
    restored = twin_answer.body
    for original, substitute in substitutes.items():
        restored = restored.replace(substitute, original)
    return answer.status == twin_answer.status and answer.body == restored


def cells_secrets(seeded: Sequence[SeededCell], caller: Caller) -> tuple[dict[str, str], dict[str, str]]:
    """(foreign, own): the strings of the cells the caller may not read, and of those it may."""
    foreign: dict[str, str] = {}
    own: dict[str, str] = {}
    for cell in seeded:
        (own if caller.may_read(cell.cell) else foreign).update(cell.secrets())
    return foreign, own
