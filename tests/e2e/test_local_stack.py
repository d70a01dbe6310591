"""The local stack as a newcomer drives it: `quire up`, `quire status --json`, `quire down`, `quire demo`."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import boto3
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from functions.tools.catalog import TOOLS
from tests.conftest import REPO_ROOT
from tests.e2e.cli import quire


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def stack_processes(workdir: Path) -> list[int]:
    """Live processes whose command line or working files point into this stack's .quire/."""
    marker = str(workdir / ".quire").encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if marker in cmdline.read() and alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


def mcp_tool_names(url: str, token: str) -> list[str]:
    async def main() -> list[str]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http_client,
            Client(streamable_http_client(url, http_client=http_client)) as client,
        ):
            return [tool.name for tool in (await client.list_tools()).tools]

    return anyio.run(main)


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    quire(tmp_path, "down", check=False)


def status(workdir: Path) -> tuple[int, dict[str, Any]]:
    completed = quire(workdir, "status", "--json", check=False)
    return completed.returncode, json.loads(completed.stdout)


def test_up_status_down_and_objects_survive_a_restart(workdir: Path) -> None:
    # Given a fresh directory, when the stack comes up
    assert "Quire is up" in quire(workdir, "up").stdout
    code, report = status(workdir)

    # Then status reports every part, with real versions, and capabilities with reasons
    assert code == 0, report
    assert report["api"].startswith("http://127.0.0.1:")
    assert report["database"]["ok"] is True
    assert report["database"]["postgres"].split(".")[0] == "18"
    assert tuple(int(p) for p in report["database"]["pgvector"].split(".")) >= (0, 8, 0)
    assert report["database"]["role"] == "quire_app"
    # The URL names the role and the server but never the password.
    assert report["database"]["url"].split("//")[1].split("@")[0] == "quire_app"
    assert report["s3"] == {**report["s3"], "ok": True, "bucket": "quire-local", "versioning": "Enabled"}
    for capability in ("embedder", "ocr", "vision", "transcription"):
        entry = report[capability]
        assert set(entry) >= {"available", "provider", "reason"}
        assert entry["available"] or entry["reason"], capability
    assert report["vision"] == {**report["vision"], "available": False}
    # No malware scanner runs locally: status says so, and that uploads are processed unscanned.
    assert report["malware_scanning"]["available"] is False
    assert "processed unscanned" in report["malware_scanning"]["reason"]

    # And the API serves the handler, with tokens from `quire token`
    token = quire(
        workdir,
        "token",
        "--tenant",
        "acme",
        "--collections",
        "hr,legal",
        "--write",
        "hr",
        "--admin",
        "ops",
        "--sub",
        "ann",
    ).stdout.strip()
    request = urllib.request.Request(f"{report['api']}/v1/me", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.load(response) == {
            "tenantId": "acme",
            "subject": "ann",
            "collections": ["hr", "legal", "ops"],
            "roles": {"hr": "write", "legal": "read", "ops": "admin"},
        }

    # And the MCP endpoint is on the same base URL: the SDK's client lists the fifteen tools with that token
    assert report["mcp"] == f"{report['api']}/mcp"
    assert mcp_tool_names(report["mcp"], token) == [tool.name for tool in TOOLS]

    # And a second `up` finds the running stack instead of starting another
    assert "already running" in quire(workdir, "up").stdout

    # When an object is stored in two versions and the stack goes down
    s3 = boto3.client(
        "s3", endpoint_url=report["s3"]["endpoint"], region_name="us-east-1",
        aws_access_key_id="x", aws_secret_access_key="y",
    )  # fmt: skip
    first = s3.put_object(Bucket="quire-local", Key="t/acme/doc", Body=b"v1")["VersionId"]
    s3.put_object(Bucket="quire-local", Key="t/acme/doc", Body=b"v2")
    supervisor_pid = report["pid"]
    assert "Quire is down" in quire(workdir, "down").stdout

    # Then nothing of the stack is left running, and status says it is down
    assert not alive(supervisor_pid)
    assert stack_processes(workdir) == []
    code, down_report = status(workdir)
    assert code == 1 and down_report["running"] is False and down_report["database"]["ok"] is False

    # When it comes back up, both versions are still there at the same addresses
    quire(workdir, "up")
    _, again = status(workdir)
    assert (again["api"], again["s3"]["endpoint"]) == (report["api"], report["s3"]["endpoint"])
    assert s3.get_object(Bucket="quire-local", Key="t/acme/doc", VersionId=first)["Body"].read() == b"v1"
    assert s3.get_object(Bucket="quire-local", Key="t/acme/doc")["Body"].read() == b"v2"


def test_demo_ingests_every_format_answers_with_citations_and_stops(workdir: Path) -> None:
    completed = quire(workdir, "demo")
    out = completed.stdout
    assert "database      ok" in out and "PostgreSQL 18" in out
    assert "s3            ok" in out and "embedder      ok" in out
    # Every generated document, one per format, indexed with vectors.
    for name in (
        "incident-report-ERR-4021.pdf",
        "employee-handbook.docx",
        "budget-Q3-2026.xlsx",
        "product-roadmap.pptx",
        "security-policy.html",
        "onboarding.md",
        "suppliers.csv",
        "meeting-notes-2026-09-02.txt",
        "scanned-remittance.pdf",
        "returns-dashboard.png",
        "faded-delivery-note.pdf",
    ):
        line = next(line for line in out.splitlines() if line.strip().startswith(name))
        assert "indexed:" in line and " 0 embedded" not in line, line
    # The scans were read by OCR, and the fax-quality one says its words may be wrong.
    assert "OCR pages 1,2 at" in next(line for line in out.splitlines() if "scanned-remittance.pdf  " in line)
    assert "LOW CONFIDENCE" in next(line for line in out.splitlines() if "faded-delivery-note.pdf  " in line)
    certified = out.split('Search: "who certified the pressure vessel and until when"')[1].split("Search:")[0]
    assert "1. scanned-remittance.pdf, p. 2 at (" in certified
    # The exact identifier is found in the incident report, cited to its page.
    exact = out.split('Search: "ERR-4021"')[1].split("Search:")[0]
    assert "1. incident-report-ERR-4021.pdf, p. " in exact
    # The paraphrase shares almost no words with the answer and still finds it.
    paraphrase = out.split('Search: "why could customers not pay for their orders in March?"')[1].split("Search:")[0]
    assert "1. incident-report-ERR-4021.pdf" in paraphrase
    # The output half: a cited report, edited by a proposal, exported to PDF and DOCX and read back.
    report = out.split("A cited report from those results")[1]
    assert "v1:" in report and "citations from" in report
    assert "→ v2: rename_heading b1, insert b" in report
    for fmt in ("PDF", "DOCX"):
        section = report.split(f"  {fmt}: ")[1].split("  DOCX: ")[0] if fmt == "PDF" else report.split("  DOCX: ")[1]
        assert "parsed back: headings ['Demo findings (reviewed)', 'Findings', 'Sources'" in section, section
        found = section.split("found: ")[1].split(" of ")
        assert found[0] == found[1].split()[0], section  # every citation note is in the export
    assert "Quire is down" in out
    assert stack_processes(workdir) == []


def test_a_killed_stack_leaves_nothing_that_down_cannot_stop_and_up_recovers(workdir: Path) -> None:
    # Given a running stack whose supervisor is killed outright (no chance to stop PostgreSQL)
    quire(workdir, "up")
    _, report = status(workdir)
    os.kill(report["pid"], 9)
    while alive(report["pid"]):
        time.sleep(0.05)
    # Then status says it is not running, while the orphaned PostgreSQL still is
    code, after_kill = status(workdir)
    assert code == 1 and after_kill["running"] is False
    assert stack_processes(workdir) != []
    # When `quire down` runs, the orphan is stopped too
    quire(workdir, "down")
    assert stack_processes(workdir) == []
    # And the stack comes back up on the same data
    quire(workdir, "up")
    code, recovered = status(workdir)
    assert code == 0 and recovered["database"]["ok"] is True


def test_concurrent_ups_start_one_stack(workdir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("DATABASE_URL", None)
    starts = [
        subprocess.Popen(
            [sys.executable, "-m", "shared.cli", "up"], cwd=workdir, env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [process.communicate(timeout=240)[0] for process in starts]
    assert all(process.returncode == 0 for process in starts), outputs
    assert sum("Quire is up" in output for output in outputs) == 1
    assert sum("already running" in output for output in outputs) == 2


def test_database_url_points_the_stack_at_an_existing_server(
    workdir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from shared.local.embedded_postgres import EmbeddedPostgres

    # Given a PostgreSQL with pgvector that the stack did not start
    root = tmp_path_factory.mktemp("external-postgres")
    server = EmbeddedPostgres(root / "pgdata", secrets_file=root / "admin.secret")
    address = server.start()
    owner_url = server.owner_url(address)
    try:
        # When the stack comes up with DATABASE_URL set
        quire(workdir, "up", database_url=owner_url)
        code, report = status(workdir)
        # Then it migrated and uses that server, as the application role, and started no PostgreSQL of its own
        assert code == 0, report
        assert report["database"]["embedded"] is False
        assert report["database"]["role"] == "quire_app"
        assert report["database"]["url"] == f"postgresql://quire_app@127.0.0.1:{address.port}/quire"
        assert not (workdir / ".quire" / "pgdata").exists()
        quire(workdir, "down")
        assert server.running_pid() is not None  # not ours to stop
    finally:
        server.stop()


def test_a_stale_state_file_never_makes_down_signal_someone_elses_process(workdir: Path) -> None:
    # Given a state file left behind whose pid now belongs to an unrelated process
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        (workdir / ".quire").mkdir()
        (workdir / ".quire" / "state.json").write_text(json.dumps({"pid": bystander.pid}), encoding="utf-8")
        (workdir / ".quire" / "pgdata").mkdir()
        (workdir / ".quire" / "pgdata" / "postmaster.pid").write_text(f"{bystander.pid}\n", encoding="utf-8")
        # When status and down run
        code, report = status(workdir)
        quire(workdir, "down")
        # Then the stack is reported down and the bystander is untouched
        assert code == 1 and report["running"] is False
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def tiny_files(folder: Path) -> list[Path]:
    from tests.builders.office import word_document
    from tests.integration.files_stack import PDF, PNG

    made = []
    for name, content in (("Handbook.pdf", PDF), ("Policy.docx", word_document()), ("Chart.png", PNG)):
        path = folder / name
        path.write_bytes(content)
        made.append(path)
    return made


def test_upload_read_probe_remove_and_reconcile_from_the_cli(workdir: Path) -> None:
    quire(workdir, "up")
    files = tiny_files(workdir)
    uploaded = quire(workdir, "upload", *map(str, files), "--collection", "handbooks", "--tenant", "acme")
    # Progress is drawn on stderr; each file ends stored.
    assert uploaded.stderr.count("100%") == 3
    assert [line.split()[1] for line in uploaded.stdout.splitlines()] == ["stored"] * 3
    listing = json.loads(quire(workdir, "files", "--collections", "handbooks", "--tenant", "acme", "--json").stdout)
    by_name = {record["filename"]: record["fileId"] for record in listing}
    assert set(by_name) == {"Handbook.pdf", "Policy.docx", "Chart.png"}

    _, report = status(workdir)
    api = report["api"]
    owner = quire(workdir, "token", "--tenant", "acme", "--collections", "handbooks").stdout.strip()
    stranger = quire(workdir, "token", "--tenant", "globex", "--collections", "handbooks").stdout.strip()

    def get(path: str, token: str) -> tuple[int, bytes]:
        request = urllib.request.Request(f"{api}{path}", headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    status_code, body = get(f"/v1/files/{by_name['Handbook.pdf']}/content", owner)
    assert status_code == 200
    with urllib.request.urlopen(json.loads(body)["url"], timeout=10) as response:
        assert response.read() == files[0].read_bytes()
        assert response.headers["Content-Disposition"].startswith("attachment;")
    # Another tenant: the same 404, byte for byte, as for an id that never existed.
    assert get(f"/v1/files/{by_name['Handbook.pdf']}", stranger) == get(f"/v1/files/{uuid.uuid4()}", stranger)
    assert get(f"/v1/files/{by_name['Handbook.pdf']}", stranger)[0] == 404

    # The DOCX was extracted by the local pipeline: `quire read` shows it as Markdown, its table as a table.
    deadline = time.monotonic() + 60
    while True:
        read = quire(
            workdir, "read", by_name["Policy.docx"], "--collections", "handbooks", "--tenant", "acme", check=False
        )
        if read.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert read.returncode == 0, read.stderr
    assert "# Employee handbook" in read.stdout
    assert "| Region | Days |" in read.stdout

    for file_id in by_name.values():
        quire(workdir, "rm", file_id, "--collections", "handbooks", "--tenant", "acme")
    reconciled = json.loads(quire(workdir, "reconcile", "--json").stdout)
    assert reconciled["deletedVersions"] == 3
    assert reconciled["orphaned"] is False
    assert reconciled["bytesWithoutRow"] == [] and reconciled["pendingWithoutBytes"] == []


def test_scans_are_read_found_and_flagged_from_the_cli(workdir: Path) -> None:
    from shared.local import scan_corpus

    quire(workdir, "up")
    scans = [scan_corpus.scanned_pdf(), scan_corpus.table_screenshot(), scan_corpus.degraded_pdf()]
    for scan in scans:
        (workdir / scan.filename).write_bytes(scan.content)
    caller = ("--tenant", "acme", "--collections", "scans")
    quire(
        workdir,
        "upload",
        *(str(workdir / scan.filename) for scan in scans),
        "--collection",
        "scans",
        "--tenant",
        "acme",
    )
    deadline = time.monotonic() + 180
    while True:
        listing = json.loads(quire(workdir, "files", *caller, "--json").stdout)
        states = {record["filename"]: record["current"]["processingState"] for record in listing}
        if set(states.values()) <= {"indexed", "failed"} or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(states.values()) == {"indexed"}, states

    # Words that exist only in the pixels of an upside-down page are found, cited to page and box.
    found = json.loads(quire(workdir, "search", "Marguerite Okonkwo", *caller, "--json").stdout)
    citation = found["hits"][0]["citation"]
    assert (citation["filename"], citation["page"], citation["kind"]) == ("scanned-remittance.pdf", 2, "transcription")
    assert citation["box"]["top"] > 0.5  # upside down: the top of the text is at the bottom of the page shown
    printed = quire(workdir, "search", "Kamchatka returns", *caller).stdout
    assert "1. returns-dashboard.png, p. 1 at (" in printed and "Kamchatka | 611 | 8 | 15.8%" in printed

    # A question answered from the pixels: evidence only (no model runs here), cited to the scanned page, and
    # marked as OCR's reading, not the document's own words.
    asked = json.loads(
        quire(workdir, "ask", "Who certified the pressure vessel and until when?", *caller, "--json").stdout
    )
    assert asked["outcome"] == "evidence_only" and asked["method"] == "extractive", asked
    certified = next((claim for claim in asked["claims"] if "Okonkwo" in claim["text"]), None)
    assert certified is not None, json.dumps(asked)[:2500]
    cited = asked["citations"][certified["citations"][0] - 1]
    assert (cited["filename"], cited["page"], cited["kind"]) == ("scanned-remittance.pdf", 2, "transcription")
    assert certified["text"] in cited["excerpt"]
    told = quire(workdir, "ask", "Who certified the pressure vessel and until when?", *caller).stdout
    assert "evidence only (sentences quoted from the sources)" in told and "[1] scanned-remittance.pdf, p. 2" in told

    # The degraded scan's listing line says its words may be misread; the others show what OCR read.
    lines = quire(workdir, "files", *caller).stdout.splitlines()
    faded = next(line for line in lines if "faded-delivery-note.pdf" in line)
    assert "LOW OCR CONFIDENCE" in faded
    assert "[OCR: pages 1,2, confidence" in next(line for line in lines if "scanned-remittance.pdf" in line)

    usage = json.loads(quire(workdir, "usage", *caller, "--json").stdout)
    ocr = next(line for line in usage["lines"] if line["step"] == "ocr")
    assert (ocr["provider"], ocr["calls"], ocr["pages"], ocr["priced"]) == ("rapidocr", 3, 4, False)
    status_report = json.loads(quire(workdir, "status", "--json").stdout)
    assert status_report["ocr"]["available"] is True and status_report["vision"]["available"] is False
    assert "QUIRE_VISION_MODEL_ID" in status_report["vision"]["reason"]
    quire(workdir, "down")
