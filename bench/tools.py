"""Agent tool calls three ways through the local stack (issue 17): `extract_text` over MCP at /mcp (the SDK's own
Streamable HTTP client, one session, stateless JSON responses), the same call through its HTTP twin `POST
/v1/tools/extract_text`, and the same read through the route `GET /v1/files/{id}/document`; and `answer` the same
three ways (`POST /v1/tools/answer`, the route `POST /v1/answer`), one question asked again and again, so after the
first ask each is served from the answer cache: the figures are the surfaces' cost, not the sentence ranking's
(bench/answers.py times that); and 40 questions each asked once the same three ways, each surface in a tenant of
its own per run (the same report indexed in each), so no answer is served from the cache (the sentence vectors of
the report are, after the first question): what an agent's `answer` costs over MCP beside the route's. Each client
keeps its connection open, so the figures compare the surfaces, not TCP handshakes. The ratio is MCP over the
route: what an agent pays for the protocol (JSON-RPC framing, the SDK's validation of the result against the tool's
output schema, the fence) on top of the read."""

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.run import percentile, quire
from shared.local.api_client import ApiClient

RUNS = 3
CALLS = 200
TENANT, COLLECTION = "bench-tools", "notes"
QUESTION = "How many animals did the okapi census count at site 7?"
REPORT = "# Field report\n\n" + "".join(
    f"## Site {index}\n\nThe okapi census at site {index} counted {index * 3} animals near the river.\n\n"
    for index in range(40)
)


# Asked anew: one question per site, each asked once per surface, in a tenant of the surface's own (each run's), so
# no answer is cached and no surface reads another's sentence vectors. Within a surface the questions meet the same
# report, so after the first most of their sentences' vectors are cached: an agent asking about one document.
NEW_QUESTIONS = [f"How many animals did the okapi census count at site {index}?" for index in range(40)]
ANEW_SURFACES = ("answer anew mcp", "answer anew twin", "answer anew route")


def _route_latencies(
    api: str, token: str, path: str, *, method: str = "GET", body: Any = None, bodies: list[Any] | None = None
) -> list[float]:
    import httpx2

    samples: list[float] = []
    with httpx2.Client(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        for sent in bodies if bodies is not None else [body] * CALLS:
            begun = time.perf_counter()
            response = client.request(method, path, json=sent)
            response.read()
            samples.append((time.perf_counter() - begun) * 1000)
            assert response.status_code == 200, response.text
    return sorted(samples)


def _mcp_latencies(
    api: str, token: str, tool: str, arguments: dict[str, Any], every: list[dict[str, Any]] | None = None
) -> list[float]:
    import anyio
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> list[float]:
        samples: list[float] = []
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http_client,
            Client(streamable_http_client(f"{api}/mcp", http_client=http_client)) as client,
        ):
            for sent in every if every is not None else [arguments] * CALLS:
                begun = time.perf_counter()
                result = await client.call_tool(tool, sent)
                samples.append((time.perf_counter() - begun) * 1000)
                assert result.is_error is False, result.structured_content
        return sorted(samples)

    return anyio.run(main)


def _indexed_report(workdir: Path, api: str, tenant: str) -> tuple[str, str]:
    """A token of `tenant` and the id of the field report uploaded and indexed in its collection."""
    token = quire(workdir, "token", "--tenant", tenant, "--write", COLLECTION).strip()
    client = ApiClient(api, token)
    path = workdir / "field-report.md"
    path.write_text(REPORT, encoding="utf-8")
    ticket = client.upload(path, COLLECTION)
    record = client.wait_until_processed(ticket["fileId"], timeout=300)
    assert record["current"]["processingState"] == "indexed", record
    return token, str(ticket["fileId"])


def _asked_anew(api: str, workdir: Path, run: int) -> dict[str, list[float]]:
    asked = [{"question": question} for question in NEW_QUESTIONS]
    # Every tenant indexed before any is asked (indexing's work is not in another surface's time), and the surfaces
    # asked in a rotated order each run (none is always first).
    tokens = {
        surface: _indexed_report(workdir, api, f"{TENANT}-{surface.rsplit(' ', 1)[1]}-{run}")[0]
        for surface in ANEW_SURFACES
    }
    time.sleep(2)
    measured: dict[str, list[float]] = {}
    for surface in ANEW_SURFACES[run % 3 :] + ANEW_SURFACES[: run % 3]:
        token = tokens[surface]
        if surface.endswith("mcp"):
            measured[surface] = _mcp_latencies(api, token, "answer", asked[0], every=asked)
        else:
            path = "/v1/tools/answer" if surface.endswith("twin") else "/v1/answer"
            measured[surface] = _route_latencies(api, token, path, method="POST", bodies=asked)
    return measured


def figures(result: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    surfaces: dict[str, tuple[list[float], list[float]]] = {
        name: ([], []) for name in ("mcp", "twin", "route", "answer mcp", "answer twin", "answer route", *ANEW_SURFACES)
    }
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        quire(workdir, "up")
        try:
            api = json.loads(quire(workdir, "status", "--json"))["api"]
            token, file_id = _indexed_report(workdir, api, TENANT)
            for run in range(RUNS):
                asked = {"question": QUESTION}
                measured = {
                    "mcp": _mcp_latencies(api, token, "extract_text", {"fileId": file_id}),
                    "twin": _route_latencies(
                        api, token, "/v1/tools/extract_text", method="POST", body={"fileId": file_id}
                    ),
                    "route": _route_latencies(api, token, f"/v1/files/{file_id}/document"),
                    "answer mcp": _mcp_latencies(api, token, "answer", asked),
                    "answer twin": _route_latencies(api, token, "/v1/tools/answer", method="POST", body=asked),
                    "answer route": _route_latencies(api, token, "/v1/answer", method="POST", body=asked),
                    **_asked_anew(api, workdir, run),
                }
                for surface, samples in measured.items():
                    surfaces[surface][0].append(percentile(samples, 0.5))
                    surfaces[surface][1].append(percentile(samples, 0.95))
        finally:
            quire(workdir, "down")
    labels = {
        "mcp": "tool call extract_text via /mcp (SDK client, one session)",
        "twin": "tool call extract_text via POST /v1/tools/extract_text",
        "route": "the same read via GET /v1/files/{id}/document",
        "answer mcp": "tool call answer via /mcp (SDK client, one session; from the answer cache)",
        "answer twin": "tool call answer via POST /v1/tools/answer (from the answer cache)",
        "answer route": "the same answer via POST /v1/answer (from the answer cache)",
        "answer anew mcp": "tool call answer via /mcp, 40 questions each asked once (ranked, not cached)",
        "answer anew twin": "tool call answer via POST /v1/tools/answer, the 40 questions asked once",
        "answer anew route": "the 40 questions asked once via POST /v1/answer",
    }
    out: list[dict[str, Any]] = []
    for surface, (p50s, p95s) in surfaces.items():
        route = surface.rsplit(" ", 1)[0] + " route" if surface.startswith("answer") else "route"
        route_p50, route_p95 = statistics.median(surfaces[route][0]), statistics.median(surfaces[route][1])
        for name, runs, baseline in (
            (f"{labels[surface]} p50", p50s, route_p50),
            (f"{labels[surface]} p95", p95s, route_p95),
        ):
            calls = len(NEW_QUESTIONS) if surface in ANEW_SURFACES else CALLS
            figure = result(name, runs, "ms", calls=calls, sections=40)
            if surface != route:
                figure["baseline"] = round(baseline, 3)
                figure["ratio"] = round(figure["value"] / baseline, 2) if baseline else None
            out.append(figure)
    return out
