"""Isolation probes (issue 16): random cross-tenant and cross-collection requests to every route of the local
API for two minutes, counting the foreign rows any answer shows (must be 0); then search's p95 on the same
stack, started with the per-tenant limits on.

Two tenants of two collections each, one collection name shared across the tenants (so a tenant check cannot
hide behind a collection check); each cell holds a Markdown and a text file, a PDF made by /v1/pdf/create, a
pending upload, an artifact, an export and a pending replacement, all carrying the cell's canary word.
The routes come from GET /v1/openapi.json, so a route added later is probed without a change here.
The request building and the detector are bench/isolation_probe.py (tested in tests/unit/test_isolation_probe.py).

    python -m bench.isolation --seconds 30     # a short run, printed; `make bench` runs PROBE_SECONDS
"""

import argparse
import json
import random
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.isolation_probe import (
    Answer,
    Caller,
    Cell,
    Operation,
    ProbeRequest,
    RequestBuilder,
    SeededCell,
    callers_of,
    cells_secrets,
    judge,
    operations_of,
    same_refusal,
)
from bench.run import percentile, quire
from shared.adapters.local.jwt_tokens import LocalTokenIssuer
from shared.adapters.local.secret_files import read_or_create_secret
from shared.domain.auth import Principal, Role, with_role
from shared.local.api_client import ApiClient
from shared.local.paths import StackPaths

PROBE_SECONDS = 120.0
# The QUIRE_* settings the probed stack is started with, and search's p95 is measured under: the per-tenant
# limits (issue 16). The daily spend limits are on by default (shared/config.py); the request rate is off by
# default, so it is turned on here, high enough that the probes themselves are not throttled (about 40 requests
# a second from one process): every request then takes its token from its tenant's bucket.
STACK_SETTINGS_WITH_LIMITS: dict[str, str] = {
    "QUIRE_LIMIT_REQUESTS_PER_SECOND": "500",
    "QUIRE_LIMIT_REQUEST_BURST": "1000",
}
# The share of probes aimed at the caller's own cells (reads only): they must see rows, or the harness is blind.
OWN_PROBE_SHARE = 0.15
SEARCH_RUNS = 3
SEARCHES_PER_RUN = 100
CELLS = (
    Cell("iso-north", "alpha", "vorpalquince"),
    Cell("iso-north", "beta", "brindlewharf"),
    Cell("iso-south", "alpha", "ostrakonmere"),
    Cell("iso-south", "gamma", "quaggathimble"),
)
FINDINGS_KEPT = 20
_READY_SECONDS = 180


def send(api: str, token: str, request: ProbeRequest) -> Answer:
    query = f"?{urllib.parse.urlencode(request.query)}" if request.query else ""
    http_request = urllib.request.Request(  # noqa: S310 - the local stack on loopback
        f"{api}{request.path}{query}",
        data=json.dumps(request.body).encode() if request.body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method=request.operation.method,
    )
    try:
        with urllib.request.urlopen(http_request, timeout=60) as response:  # noqa: S310 - loopback
            return Answer(response.status, response.read().decode(errors="replace"))
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.read().decode(errors="replace"))


def _seed_text(cell: Cell, what: str) -> bytes:
    return (
        f"# {what.title()} {cell.canary}\n\nThe {cell.canary} ledger lists pallets, crates and lamps.\n" * 8
    ).encode()


def seed(api: str, issuer: LocalTokenIssuer, files: Path) -> list[SeededCell]:
    """Every cell's resources, made through the API by the cell's administrator; waits until they are
    indexed, so searches and documents have something to show."""
    clients = {
        cell.label: ApiClient(api, issuer.issue(with_role(cell.tenant, "seeder", {cell.collection}, Role.ADMIN)))
        for cell in CELLS
    }
    seeded = {cell.label: SeededCell(cell) for cell in CELLS}
    to_index: list[tuple[SeededCell, str]] = []
    pdf_exports: list[tuple[SeededCell, str]] = []
    for cell in CELLS:
        client, seeds = clients[cell.label], seeded[cell.label]
        for prefix, suffix in (("notes", ".md"), ("memo", ".txt")):
            path = files / f"{prefix}-{cell.canary}{suffix}"
            path.write_bytes(_seed_text(cell, prefix))
            ticket = client.upload(path, cell.collection)
            _add_file(seeds, ticket["fileId"], ticket["versionId"], path.name)
            to_index.append((seeds, ticket["fileId"]))
        pending_name = f"pending-{cell.canary}.txt"
        ticket = client.call(
            "POST",
            "/v1/uploads",
            {"collectionId": cell.collection, "filename": pending_name, "mediaType": "text/plain", "byteSize": 64},
        )
        _add_file(seeds, ticket["fileId"], ticket["versionId"], pending_name)
        markdown = _seed_text(cell, "plan").decode()
        artifact = client.call(
            "POST",
            "/v1/artifacts",
            {"collectionId": cell.collection, "name": f"plan-{cell.canary}", "markdown": markdown},
        )
        seeds.resources["artifact"].append(artifact["artifactId"])
        export = client.call("POST", f"/v1/artifacts/{artifact['artifactId']}/versions/1/exports", {"format": "md"})
        seeds.resources["export"].append(export["exportId"])
        report = client.call(
            "POST",
            "/v1/pdf/create",
            {"collectionId": cell.collection, "name": f"report-{cell.canary}", "markdown": markdown},
        )["exports"][0]
        seeds.resources["export"].append(report["exportId"])
        seeds.resources["artifact"].append(report["artifactId"])
        pdf_exports.append((seeds, report["exportId"]))
    for seeds, export_id in pdf_exports:
        client = clients[seeds.cell.label]
        deadline = time.monotonic() + _READY_SECONDS
        while (rendered := client.call("GET", f"/v1/exports/{export_id}")).get("fileId") is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the seed PDF of {seeds.cell.label} was not rendered: {rendered}")
            time.sleep(0.2)
        # A tool's output is stored, not indexed (its processing is `skipped`): readable, not searchable.
        record = client.call("GET", f"/v1/files/{rendered['fileId']}")
        _add_file(seeds, record["fileId"], record["current"]["versionId"], record["filename"])
    for seeds, file_id in to_index:
        record = clients[seeds.cell.label].wait_until_processed(file_id, timeout=_READY_SECONDS)
        if record["current"]["processingState"] != "indexed":
            raise RuntimeError(f"a seed file of {seeds.cell.label} was not indexed: {record['current']}")
    for seeds in seeded.values():
        client, cell = clients[seeds.cell.label], seeds.cell
        notes = seeds.resources["file"][0]
        replacement = client.call(
            "POST", f"/v1/files/{notes}/replacements", {"markdown": _seed_text(cell, "notes").decode()}
        )
        seeds.resources["replacement"].append(replacement["replacementId"])
        found = client.call("POST", "/v1/search", {"query": cell.canary, "mode": "keyword", "limit": 50})
        seeds.resources["chunk"].extend(hit["chunkId"] for hit in found.get("hits", []))
        if not seeds.resources["chunk"]:
            raise RuntimeError(f"the seed of {cell.label} is not searchable: {found}")
    return list(seeded.values())


def _add_file(seeds: SeededCell, file_id: str, version_id: str, filename: str) -> None:
    seeds.resources["file"].append(file_id)
    seeds.resources["version"].append(version_id)
    seeds.version_of[file_id] = version_id
    seeds.filenames.append(filename)


@dataclass
class Tally:
    probes: int = 0
    foreign_rows: int = 0
    own_rows: int = 0
    own_probes: int = 0
    server_errors: int = 0
    throttled: int = 0
    # Refusals other than 404 that an id no tenant has gets too (a validator's 422 before any lookup).
    refusals_like_an_absent_id: int = 0
    # Successes that named a foreign resource the route ignored, answering as it does for an id nobody has:
    # nothing foreign read or changed, but a field the route drops without a word (listed per route).
    ignored_foreign_references: Counter[str] = field(default_factory=Counter)
    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)

    def finding(self, request: ProbeRequest, answer: Answer, why: str, seen: Sequence[str]) -> None:
        if len(self.findings) < FINDINGS_KEPT:
            self.findings.append(
                {
                    "route": request.operation.route,
                    "caller": request.caller.label,
                    "path": request.path,
                    "query": request.query,
                    "body": request.body,
                    "status": answer.status,
                    "why": why,
                    "seen": list(seen),
                    "answer": answer.body[:300],
                }
            )


def probe(
    api: str,
    *,
    tokens: Mapping[Caller, str],
    seeded: Sequence[SeededCell],
    operations: Sequence[Operation],
    seconds: float,
    rng: random.Random,
) -> Tally:
    tally = Tally(statuses={operation.route: Counter() for operation in operations})
    builder = RequestBuilder(rng, seeded)
    reads = [operation for operation in operations if operation.only_reads]
    secrets = {caller: cells_secrets(seeded, caller) for caller in tokens}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        caller = rng.choice(list(tokens))
        own = rng.random() < OWN_PROBE_SHARE
        request = builder.build(rng.choice(reads if own else list(operations)), caller, own=own)
        answer = send(api, tokens[caller], request)
        foreign, own_secrets = secrets[caller]
        verdict = judge(request, answer, foreign, own_secrets)
        tally.probes += 1
        tally.own_probes += own
        tally.statuses[request.operation.route][answer.status] += 1
        tally.server_errors += verdict.server_error
        tally.throttled += verdict.throttled
        tally.own_rows += len(verdict.own_seen)
        if verdict.foreign_seen:
            tally.foreign_rows += len(verdict.foreign_seen)
            tally.finding(request, answer, "foreign ids or canary words in the answer", verdict.foreign_seen)
        elif verdict.accepted_foreign:
            twin_answer = None if request.names_foreign_collection else send(api, tokens[caller], request.twin())
            if twin_answer is not None and 200 <= twin_answer.status < 300:
                tally.ignored_foreign_references[request.operation.route] += 1
            else:
                tally.foreign_rows += 1
                tally.finding(request, answer, "a foreign resource was accepted instead of refused", [])
        if verdict.needs_twin:
            twin = request.twin()
            if same_refusal(answer, send(api, tokens[caller], twin), request.substitutes):
                tally.refusals_like_an_absent_id += 1
            else:
                tally.foreign_rows += 1
                tally.finding(request, answer, "the refusal differs from an absent id's: it confirms the id", [])
    return tally


def seed_changes(api: str, issuer: LocalTokenIssuer, seeded: Sequence[SeededCell]) -> list[str]:
    """What of the seed is no longer as it was made: a foreign probe that got through would show here."""
    changed = []
    for seeds in seeded:
        cell = seeds.cell
        token = issuer.issue(with_role(cell.tenant, "checker", {cell.collection}, Role.ADMIN))
        client = ApiClient(api, token)
        for file_id in seeds.resources["file"]:
            record = client.call("GET", f"/v1/files/{file_id}")
            if record["collectionId"] != cell.collection or record["current"]["state"] in ("deleting", "deleted"):
                changed.append(f"{cell.label} file {file_id}: {record['collectionId']} {record['current']['state']}")
        for artifact_id in seeds.resources["artifact"]:
            if (latest := client.call("GET", f"/v1/artifacts/{artifact_id}")["latestVersion"]) != 1:
                changed.append(f"{cell.label} artifact {artifact_id}: version {latest}")
        for replacement_id in seeds.resources["replacement"]:
            if (state := client.call("GET", f"/v1/replacements/{replacement_id}")["state"]) != "pending":
                changed.append(f"{cell.label} replacement {replacement_id}: {state}")
    return changed


def search_latencies_ms(api: str, issuer: LocalTokenIssuer) -> tuple[list[float], int]:
    """POST /v1/search through the local API, one tenant's reader over both its collections; (latencies of
    the answered searches, sorted; how many were throttled)."""
    tenant = CELLS[0].tenant
    mine = [cell for cell in CELLS if cell.tenant == tenant]
    token = issuer.issue(with_role(tenant, "searcher", {cell.collection for cell in mine}, Role.READ))
    queries = [*(cell.canary for cell in mine), "ledger pallets", "crates and lamps", "plan", "report of the notes"]
    samples, throttled = [], 0
    for serial in range(SEARCHES_PER_RUN):
        request = urllib.request.Request(  # noqa: S310 - loopback
            f"{api}/v1/search",
            data=json.dumps({"query": queries[serial % len(queries)]}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        begun = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - loopback
                response.read()
        except urllib.error.HTTPError as error:
            if error.code != 429:
                raise
            throttled += 1
            continue
        samples.append((time.perf_counter() - begun) * 1000)
    return sorted(samples), throttled


def figures(
    result: Callable[..., dict[str, Any]], seconds: float = PROBE_SECONDS, seed_value: int | None = None
) -> list[dict[str, Any]]:
    chosen_seed = seed_value if seed_value is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(chosen_seed)  # noqa: S311 - reproducible probe choices (the seed is reported), not secrets
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        quire(workdir, "up", settings=STACK_SETTINGS_WITH_LIMITS)
        try:
            api = json.loads(quire(workdir, "status", "--json"))["api"]
            issuer = LocalTokenIssuer(read_or_create_secret(StackPaths.in_directory(workdir).jwt_secret))
            files = workdir / "seed"
            files.mkdir()
            seeded = seed(api, issuer, files)
            with urllib.request.urlopen(f"{api}/v1/openapi.json", timeout=30) as response:  # noqa: S310 - loopback
                operations = operations_of(json.loads(response.read()))
            callers = callers_of(CELLS)
            tokens = {caller: issuer.issue(_principal(caller)) for caller in callers}
            tally = probe(api, tokens=tokens, seeded=seeded, operations=operations, seconds=seconds, rng=rng)
            changed = seed_changes(api, issuer, seeded)
            p50s, p95s, throttled = [], [], 0
            for _ in range(SEARCH_RUNS):
                samples, refused = search_latencies_ms(api, issuer)
                throttled += refused
                if samples:  # a run the limits throttled entirely has no latency to report
                    p50s.append(percentile(samples, 0.5))
                    p95s.append(percentile(samples, 0.95))
        finally:
            quire(workdir, "down")
    limits = dict(STACK_SETTINGS_WITH_LIMITS)
    statuses = {route: dict(sorted(counts.items())) for route, counts in tally.statuses.items()}
    return [
        result(
            f"isolation probes of every route, cross-tenant and cross-collection, in {seconds:.0f} s",
            [float(tally.probes)],
            "probes",
            routes=len(operations),
            callers=len(callers),
            own_target_probes=tally.own_probes,
            statuses_per_route=statuses,
            refusals_like_an_absent_id=tally.refusals_like_an_absent_id,
            ignored_foreign_references=dict(tally.ignored_foreign_references),
            throttled=tally.throttled,
            random_seed=chosen_seed,
        ),
        result(
            "foreign rows seen by the isolation probes (must be 0)",
            [float(tally.foreign_rows)],
            "rows",
            findings=tally.findings,
        ),
        result(
            "own rows seen by the probes aimed at the caller's own cells (must be above 0)",
            [float(tally.own_rows)],
            "rows",
        ),
        result("5xx answers to the isolation probes", [float(tally.server_errors)], "count"),
        result("seed resources changed after the probes (must be 0)", [float(len(changed))], "count", changed=changed),
        result("POST /v1/search p50 through the local API, per-tenant limits on", p50s, "ms", limits=limits),
        result(
            "POST /v1/search p95 through the local API, per-tenant limits on",
            p95s,
            "ms",
            searches=SEARCHES_PER_RUN,
            throttled=throttled,
            limits=limits,
        ),
    ]


def _principal(caller: Caller) -> Principal:
    return Principal(
        tenant_id=caller.tenant,
        subject=f"probe-{caller.label}",
        collections=caller.collections,
        writable=frozenset(c for c, role in caller.roles if role in (Role.WRITE, Role.ADMIN)),
        administered=frozenset(c for c, role in caller.roles if role is Role.ADMIN),
    )


def main() -> int:
    from bench.run import result

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=PROBE_SECONDS, help="how long to probe")
    parser.add_argument("--seed", type=int, default=None, help="the random seed (a past run's random_seed)")
    arguments = parser.parse_args()
    for entry in figures(result, arguments.seconds, arguments.seed):
        data = {key: value for key, value in entry["data"].items() if key not in ("statuses_per_route", "findings")}
        print(f"{entry['name']}: {entry['value']} {entry['unit']}  {json.dumps(data)}")
        for finding in entry["data"].get("findings", []):
            print(f"    {json.dumps(finding)}")
        if "statuses_per_route" in entry["data"]:
            for route, counts in entry["data"]["statuses_per_route"].items():
                print(f"    {route:<55} {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
