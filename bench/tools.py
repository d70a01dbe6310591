"""Agent tool calls three ways through the local stack (issue 17): `extract_text` over MCP at /mcp (the SDK's
own Streamable HTTP client, one session, stateless JSON responses), the same call through its HTTP twin
`POST /v1/tools/extract_text`, and the same read through the route `GET /v1/files/{id}/document`; and `answer`
the same three ways (`POST /v1/tools/answer`, the route `POST /v1/answer`), one question asked again and again,
so after the first ask each is served from the answer cache: the figures are the surfaces' cost, not the
sentence ranking's (bench/answers.py times that). Each client keeps its connection open, so the figures compare
the surfaces, not TCP handshakes. The ratio is MCP over the route: what an agent pays for the protocol (JSON-RPC
framing, the SDK's validation of the result against the tool's output schema, the fence) on top of the read."""

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


def _route_latencies(api: str, token: str, path: str, *, method: str = "GET", body: Any = None) -> list[float]:
    import httpx2

    samples: list[float] = []
    with httpx2.Client(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        for _ in range(CALLS):
            begun = time.perf_counter()
            response = client.request(method, path, json=body)
            response.read()
            samples.append((time.perf_counter() - begun) * 1000)
            assert response.status_code == 200, response.text
    return sorted(samples)


def _mcp_latencies(api: str, token: str, tool: str, arguments: dict[str, Any]) -> list[float]:
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
            for _ in range(CALLS):
                begun = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                samples.append((time.perf_counter() - begun) * 1000)
                assert result.is_error is False, result.structured_content
        return sorted(samples)

    return anyio.run(main)


def figures(result: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    surfaces: dict[str, tuple[list[float], list[float]]] = {
        name: ([], []) for name in ("mcp", "twin", "route", "answer mcp", "answer twin", "answer route")
    }
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        quire(workdir, "up")
        try:
            api = json.loads(quire(workdir, "status", "--json"))["api"]
            token = quire(workdir, "token", "--tenant", TENANT, "--write", COLLECTION).strip()
            client = ApiClient(api, token)
            path = workdir / "field-report.md"
            path.write_text(REPORT, encoding="utf-8")
            ticket = client.upload(path, COLLECTION)
            record = client.wait_until_processed(ticket["fileId"], timeout=300)
            assert record["current"]["processingState"] == "indexed", record
            file_id = ticket["fileId"]
            for _ in range(RUNS):
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
    }
    out: list[dict[str, Any]] = []
    for surface, (p50s, p95s) in surfaces.items():
        route = "answer route" if surface.startswith("answer") else "route"
        route_p50, route_p95 = statistics.median(surfaces[route][0]), statistics.median(surfaces[route][1])
        for name, runs, baseline in (
            (f"{labels[surface]} p50", p50s, route_p50),
            (f"{labels[surface]} p95", p95s, route_p95),
        ):
            figure = result(name, runs, "ms", calls=CALLS, sections=40)
            if surface != route:
                figure["baseline"] = round(baseline, 3)
                figure["ratio"] = round(figure["value"] / baseline, 2) if baseline else None
            out.append(figure)
    return out
