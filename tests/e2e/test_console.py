"""The console in a real browser (Debian's Chromium, driven by Playwright) against a real local stack.

A person's session, start to end: sign in, upload two files at once with byte progress, watch them reach
indexed, search, open a citation and check that the highlight sits on the cited box (and that the words
there are the cited words, read back from the PDF by PDFium), the cited cells of a sheet, ask, open the
answer as an artifact, export it and download the file; a hostile document's text shown as text; a
citation whose file was deleted still showing its excerpt; a webhook registered and tested, and a file's state told
by its events (tests/e2e/console_events.py). Screenshots of each view go to
$QUIRE_SCREENSHOTS (`make screenshots` sets .bench/console) or the test's own folder.

Playwright never downloads a browser here: it launches /usr/bin/chromium, which `make test` installs.
"""

import hashlib
import io
import json
import os
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF

from shared.local import scan_corpus
from tests.e2e import console_events, console_metadata, console_parts
from tests.e2e.cli import quire

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGUMENTS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INDEXED_TIMEOUT_MS = 240_000
# Words no other document of the stack holds, so that the first hit is the one the test placed.
PDF_WORDS = "The quokka census counted seventeen burrows beside the lighthouse"
SHEET_WORD = "marmalade"
# Markup a text upload may carry (live markup, a script or an on...= handler, is refused at upload): were it
# inserted as HTML, it would make elements, load an image and restyle the page.
HOSTILE_TEXT = (
    'Markup as words: <b>bold</b> <img src="x"> <a href="javascript:void(0)">click</a>'
    " <style>main{display:none}</style> and plain words follow"
)

# `make test` installs the browser and sets QUIRE_REQUIRE_BROWSER: there, a missing browser fails rather than skips.
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("QUIRE_REQUIRE_BROWSER"),
    reason="needs Debian's chromium at /usr/bin/chromium: `make test` installs it (make browser)",
)


def survey_pdf() -> bytes:
    """Two pages; the cited sentence sits in the middle of page 2, so a box drawn at the top-left is wrong."""
    pdf = FPDF(format="A4")
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Field report. The first page is about weather and tides only.")
    pdf.add_page()
    pdf.set_xy(60, 150)
    pdf.multi_cell(100, 8, f"{PDF_WORDS}.")
    return bytes(pdf.output())


def budget_workbook() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Pantry"
    sheet.append(["Item", "Jars", "Shelf"])
    for row in range(2, 12):
        sheet.append([f"item {row}", row, f"shelf {row}"])
    sheet["C7"] = f"{SHEET_WORD} on the top shelf"
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("console-stack")
    started = quire(workdir, "up").stdout
    try:
        state = json.loads(quire(workdir, "status", "--json").stdout)
        key = (workdir / ".quire" / "console-sign-in.key").read_text().strip()
        # `quire up` prints the console's address with the sign-in key, for its owner to open.
        assert f"Console: {state['api']}/console/#sign-in={key}" in started
        yield {"workdir": workdir, "api": state["api"], "key": key}
    finally:
        quire(workdir, "down", check=False)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wanted = os.environ.get("QUIRE_SCREENSHOTS")
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp("console-shots")
    if wanted:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        # A fresh, empty profile each launch (Playwright's own temporary user data dir).
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGUMENTS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, stack: dict[str, Any]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            problems.append(f"console {message.type}: {message.text}")
            if message.type == "error" and "Content Security Policy" in message.text
            else None
        ),
    )
    opened.problems = problems
    yield opened
    context.close()


def sign_in(page: Any, stack: dict[str, Any]) -> None:
    """The one-click local sign-in, from the address `quire up` prints (its fragment carries the sign-in key)."""
    page.goto(f"{stack['api']}/console/#sign-in={stack['key']}")
    page.get_by_label("Collections (comma-separated)").fill("default")
    page.get_by_label("Role").select_option("admin")
    page.get_by_test_id("local-sign-in").click()
    page.get_by_role("heading", name="Upload").wait_for()


def api_call(api: str, token: str, method: str, path: str, body: object | None = None) -> Any:
    request = urllib.request.Request(
        f"{api}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def token_of(page: Any) -> str:
    token: str = page.evaluate("sessionStorage.getItem('quire.token')")
    return token


def words_in_box(pdf: bytes, page_number: int, box: dict[str, float]) -> str:
    """The text PDFium finds inside a normalised box (0..1 from the top-left) of a page."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(pdf)
    try:
        page = document[page_number - 1]
        width, height = page.get_size()
        text = page.get_textpage()
        left, right = box["left"] * width, (box["left"] + box["width"]) * width
        top, bottom = height - box["top"] * height, height - (box["top"] + box["height"]) * height
        return str(text.get_text_bounded(left=left, bottom=bottom, right=right, top=top))
    finally:
        document.close()


def processed(page: Any, filename: str) -> Any:
    """The upload's row once its file is indexed; a failure fails here, with the sentence the console shows."""
    row = page.locator(f'li.upload[data-filename="{filename}"]')
    page.locator(f'li.upload.done[data-filename="{filename}"], li.upload.failed[data-filename="{filename}"]').wait_for(
        timeout=INDEXED_TIMEOUT_MS
    )
    assert row.get_attribute("data-state") == "indexed", row.inner_text()
    return row


def upload_two_files(page: Any, folder: Path, shots: Path) -> None:
    pdf, sheet = folder / "quokka-survey.pdf", folder / "pantry.xlsx"
    pdf.write_bytes(survey_pdf())
    sheet.write_bytes(budget_workbook())
    page.locator("#upload-picker").set_input_files([str(pdf), str(sheet)])
    for name in (pdf.name, sheet.name):
        row = processed(page, name)
        progress = row.locator("progress")
        size = (folder / name).stat().st_size
        # The bar is the presigned POST's own byte count: it ends at the file's size, reported by the browser.
        assert progress.evaluate("bar => [bar.value, bar.max]") == [size, size]
        assert int(progress.get_attribute("data-events") or 0) >= 1
        # Then its processing state, live: from the ticket through the upload to indexed, without a reload.
        history = (row.get_attribute("data-history") or "").split(" > ")
        assert history[:4] == ["waiting for its turn", "asking for an upload", "uploading", "uploaded"], history
        assert history[-1] == "indexed", history
    page.screenshot(path=str(shots / "01-upload.png"), full_page=True)


def files_and_reader(page: Any, shots: Path) -> None:
    """Files: both listed with their state and pages; the reader shows the extracted document."""
    page.get_by_role("link", name="Files", exact=True).click()
    row = page.locator("table.files tr", has_text="quokka-survey.pdf")
    row.wait_for()
    assert "indexed" in row.inner_text()
    assert row.locator("td").nth(3).inner_text() == "2"  # pages
    assert row.locator("td").nth(5).inner_text() == "1"  # versions
    page.screenshot(path=str(shots / "02-files.png"), full_page=True)
    row.get_by_role("link", name="quokka-survey.pdf").click()
    page.get_by_test_id("reader").filter(has_text="quokka census").wait_for()
    page.screenshot(path=str(shots / "03-reader.png"), full_page=True)


def cited_page(page: Any, api: str, shots: Path) -> None:
    """Search: the hit's citation names the file, its version and page 2; it opens the page image with the
    cited box drawn where the API says it is, and where PDFium finds the cited words."""
    page.get_by_role("link", name="Search and ask").click()
    page.get_by_label("Search or ask").fill("quokka census burrows")
    page.get_by_role("button", name="Search", exact=True).click()
    hit = page.get_by_test_id("hit").first
    hit.wait_for()
    chip = hit.get_by_test_id("citation")
    assert "quokka-survey.pdf" in chip.inner_text()
    assert "page 2" in chip.inner_text()
    page.screenshot(path=str(shots / "04-search.png"), full_page=True)
    citation = api_call(api, token_of(page), "POST", "/v1/search", {"query": "quokka census burrows"})["hits"][0][
        "citation"
    ]
    chip.click()

    regions = [region["box"] for region in citation["regions"] if region.get("page") == 2 and region.get("box")]
    box = regions[0] if regions else citation["box"]
    # The drawn box is the cited box, within a pixel or two of rounding, at the size the page is shown.
    highlight_matches(page, box)
    # And the cited box is where the words are: PDFium reads the whole cited sentence back from inside it.
    assert PDF_WORDS in " ".join(words_in_box(survey_pdf(), 2, box).split())
    assert "quokka census" in page.get_by_test_id("excerpt").inner_text()
    page.screenshot(path=str(shots / "05-cited-page.png"), full_page=True)
    # The address is the citation itself: a reload shows the same cited spot.
    page.reload()
    page.get_by_test_id("highlight").first.wait_for()


def cited_cells(page: Any, api: str, shots: Path) -> None:
    """A sheet's citation: the cited cells lit up in the grid, at their own address."""
    page.goto(f"{api}/console/#/search")
    page.get_by_label("Search or ask").fill(SHEET_WORD)
    page.get_by_role("button", name="Search", exact=True).click()
    page.get_by_test_id("hit").first.get_by_test_id("citation").click()
    cited_cell = page.locator("td.cited", has_text=SHEET_WORD)
    cited_cell.wait_for()
    assert cited_cell.get_attribute("data-cell") == "C7"
    page.screenshot(path=str(shots / "06-cited-cells.png"), full_page=True)


def answer_artifact_export(page: Any, api: str, shots: Path, folder: Path) -> None:
    """Ask: a grounded answer with numbered citations and its confidence factors; then the answer as an
    artifact with its history, exported to PDF and downloaded through the export's signed link."""
    page.goto(f"{api}/console/#/search")
    page.get_by_label("Search or ask").fill("How many burrows did the quokka census count?")
    page.get_by_role("button", name="Ask").click()
    answer = page.get_by_test_id("answer")
    answer.get_by_test_id("confidence").wait_for()
    assert "top retrieval score" in answer.get_by_test_id("confidence").inner_text()
    assert answer.get_by_test_id("citation").count() >= 1
    assert "#/answers/" in page.url
    page.screenshot(path=str(shots / "07-answer.png"), full_page=True)
    answer.get_by_test_id("citation").first.click()
    page.get_by_test_id("excerpt").wait_for()
    page.go_back()

    page.get_by_role("button", name="Open as an artifact").click()
    page.get_by_role("table", name="History").wait_for()
    # Each format rendered, then downloaded by its signed link, as the file it says it is.
    signatures = {"PDF": b"%PDF-", "DOCX": b"PK\x03\x04", "HTML": b"<!DOCTYPE html", "Markdown": b"# How many"}
    for label, signature in signatures.items():
        page.get_by_role("button", name=f"Export {label}").click()
        extension = {"PDF": "pdf", "DOCX": "docx", "HTML": "html", "Markdown": "md"}[label]
        download_link = page.get_by_test_id(f"download-{extension}")
        download_link.wait_for(timeout=120_000)
        with page.expect_download() as waiting:
            download_link.click()
        saved = folder / f"answer.{extension}"
        waiting.value.save_as(saved)
        assert saved.read_bytes().lstrip().startswith(signature), (label, saved.read_bytes()[:80])
    page.screenshot(path=str(shots / "08-artifact.png"), full_page=True)


def test_console_upload_search_cite_ask_export(page: Any, stack: dict[str, Any], shots: Path, tmp_path: Path) -> None:
    api = stack["api"]
    sign_in(page, stack)
    upload_two_files(page, tmp_path, shots)
    files_and_reader(page, shots)
    cited_page(page, api, shots)
    cited_cells(page, api, shots)
    answer_artifact_export(page, api, shots, tmp_path)
    assert page.problems == []


def highlight_matches(page: Any, box: dict[str, float]) -> None:
    """The first drawn highlight sits on `box` of the page image, within rounding."""
    image = page.get_by_test_id("page-image")
    image.wait_for()
    page.wait_for_function("() => document.querySelector('[data-testid=page-image]').complete")
    highlight = page.get_by_test_id("highlight").first
    highlight.wait_for()
    frame, marked = image.bounding_box(), highlight.bounding_box()
    assert frame is not None and marked is not None
    assert abs(marked["x"] - (frame["x"] + box["left"] * frame["width"])) <= 2
    assert abs(marked["y"] - (frame["y"] + box["top"] * frame["height"])) <= 2
    assert abs(marked["width"] - box["width"] * frame["width"]) <= 3
    assert abs(marked["height"] - box["height"] * frame["height"]) <= 3


def test_an_image_citation_opens_the_image_with_the_box_ocr_read_drawn(
    page: Any, stack: dict[str, Any], shots: Path, tmp_path: Path
) -> None:
    # Given a screenshot with no text but its pixels, uploaded and read by OCR (RapidOCR locally)
    api = stack["api"]
    sign_in(page, stack)
    screenshot = scan_corpus.table_screenshot()
    picture = tmp_path / screenshot.filename
    picture.write_bytes(screenshot.content)
    page.locator("#upload-picker").set_input_files(str(picture))
    processed(page, picture.name)
    # When its transcription is found and its citation opened
    page.goto(f"{api}/console/#/search?q=Kamchatka")
    # (Other tests' files share this stack: the picture's hit is the one named by its file.)
    chip = page.get_by_test_id("hit").filter(has_text=picture.name).first.get_by_test_id("citation")
    chip.wait_for()
    assert "transcription" in chip.inner_text()
    found = api_call(api, token_of(page), "POST", "/v1/search", {"query": "Kamchatka"})["hits"]
    citation = next(hit["citation"] for hit in found if hit["citation"]["filename"] == picture.name)
    chip.click()
    # Then the image is shown with the box OCR read the words from drawn over it, and OCR's confidence said
    regions = [region["box"] for region in citation["regions"] if region.get("page") == 1 and region.get("box")]
    highlight_matches(page, regions[0] if regions else citation["box"])
    assert "OCR confidence" in page.locator("dl.facts").inner_text()
    page.screenshot(path=str(shots / "10-cited-image.png"), full_page=True)


def test_document_text_is_shown_as_text_and_inline_script_is_refused(
    page: Any, stack: dict[str, Any], shots: Path, tmp_path: Path
) -> None:
    api = stack["api"]
    sign_in(page, stack)
    # Dropped on the drop zone, as a file dragged from the desktop arrives
    dropped = page.evaluate_handle(
        "text => { const files = new DataTransfer();"
        " files.items.add(new File([text], 'hostile.txt', {type: 'text/plain'})); return files; }",
        HOSTILE_TEXT,
    )
    page.get_by_test_id("dropzone").dispatch_event("drop", {"dataTransfer": dropped})
    row = processed(page, "hostile.txt")
    row.get_by_role("link", name="Open in the reader").click()
    reader = page.get_by_test_id("reader")
    reader.filter(has_text="plain words follow").wait_for()
    # The markup arrives as the characters it is, never as elements.
    assert '<img src="x">' in reader.inner_text()
    assert "<style>" in reader.inner_text()
    assert reader.locator("b, img, a, style").count() == 0
    # The policy forbids inline script: one written into the page does not run.
    page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1';"
        " document.body.append(s); }"
    )
    assert page.evaluate("window.__inline") is None
    policy = urllib.request.urlopen(f"{api}/console/", timeout=10).headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy


def test_a_markdown_file_the_browser_leaves_untyped_is_uploaded_as_markdown(page: Any, stack: dict[str, Any]) -> None:
    # Given a .markdown file whose File.type the browser left empty (as Chromium does for extensions it does not
    # know), dropped on the drop zone
    sign_in(page, stack)
    dropped = page.evaluate_handle(
        "() => { const files = new DataTransfer();"
        " files.items.add(new File(['# Otter notes\\n\\nThe otter holt lies under the willow.\\n'],"
        " 'otter-notes.markdown', {type: ''})); return files; }"
    )
    assert page.evaluate("files => files.files[0].type", dropped) == ""
    page.get_by_test_id("dropzone").dispatch_event("drop", {"dataTransfer": dropped})
    # Then the console names its type from the API's accepted types (GET /v1/meta), the API accepts it, and it
    # is indexed as Markdown
    processed(page, "otter-notes.markdown")
    token = token_of(page)
    listed = api_call(stack["api"], token, "GET", "/v1/files?limit=50")["files"]
    uploaded = next(file for file in listed if file["filename"] == "otter-notes.markdown")
    assert uploaded["current"]["mediaType"] == "text/markdown", uploaded


def test_keyboard_only_and_every_control_is_labelled(page: Any, stack: dict[str, Any]) -> None:
    api = stack["api"]
    sign_in(page, stack)
    # From the top of the page, Tab reaches the views' links; Enter opens one.
    page.locator("body").focus()
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Search and ask":
            break
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Search and ask").wait_for()
    assert page.evaluate("document.activeElement.tagName") == "H2"  # focus lands on the new view
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "query"
    page.keyboard.type("quokka")
    page.keyboard.press("Enter")
    page.get_by_test_id("results").locator("[data-testid=hit], [data-testid=outcome]").first.wait_for()
    # A search that finds nothing says why, in the API's sentence.
    page.get_by_label("Search or ask").fill("xyzzyplugh frobnicated")
    page.keyboard.press("Enter")
    outcome = page.get_by_test_id("outcome")
    outcome.wait_for()
    assert outcome.get_attribute("data-outcome") in ("no_match", "below_floor")
    assert len(outcome.inner_text()) > 20
    for view in ("#/upload", "#/files", "#/search", "#/artifacts", "#/webhooks"):
        page.goto(f"{api}/console/{view}")
        page.locator("main h2").wait_for()
        unlabelled = page.evaluate(
            "() => [...document.querySelectorAll('input, select, textarea')]"
            ".filter(c => c.type !== 'file' && !c.labels.length && !c.getAttribute('aria-label')).map(c => c.id)"
        )
        assert unlabelled == [], view


def test_a_citation_of_a_deleted_file_keeps_its_excerpt_and_says_the_source_is_gone(
    page: Any, stack: dict[str, Any], shots: Path, tmp_path: Path
) -> None:
    api = stack["api"]
    sign_in(page, stack)
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("The aardwolf ledger records termite mounds by the river.\n")
    page.locator("#upload-picker").set_input_files(str(doomed))
    processed(page, "doomed.txt")
    page.goto(f"{api}/console/#/search?q=aardwolf%20ledger")
    chip = page.get_by_test_id("hit").first.get_by_test_id("citation")
    chip.wait_for()
    address = chip.get_attribute("href")
    assert address is not None and address.startswith("#/cite/")
    # A text file's cited spot is its cited lines, lit up in the reader.
    chip.click()
    page.locator(".document .cited", has_text="aardwolf ledger").wait_for()
    # The address names the snapshot this tab was given; it does not carry it (a crafted one shows nothing forged).
    assert "aardwolf" not in address

    page.goto(f"{api}/console/#/files")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete doomed.txt").click()
    page.locator("table.files tr", has_text="doomed.txt").wait_for(state="detached")

    page.goto(f"{api}/console/{address}")
    page.get_by_test_id("source-gone").wait_for()
    assert "aardwolf ledger" in page.get_by_test_id("excerpt").inner_text()
    page.screenshot(path=str(shots / "09-source-gone.png"), full_page=True)

    # A citation address this tab never found (a link someone crafted) shows no excerpt at all.
    page.goto(f"{api}/console/#/cite/00000000-0000-4000-8000-000000000000")
    page.get_by_text("works in the tab whose search found it").wait_for()
    assert page.get_by_test_id("excerpt").count() == 0


def test_metadata_shown_edited_by_a_writer_read_only_to_a_reader_and_facet_chips_filter(
    page: Any, browser: Any, stack: dict[str, Any], shots: Path
) -> None:
    api = stack["api"]
    sign_in(page, stack)
    token = token_of(page)
    dialogs: list[str] = []

    def refuse(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", refuse)
    acme, _ = console_metadata.two_files_with_metadata(page, api, token)
    revision = console_metadata.panel_shows_each_type_and_markup_as_text(page, api, token, acme)
    console_metadata.writer_edits(page, api, token, acme, revision=revision, shots=shots)
    console_metadata.refusal_beside_its_field_and_conflict_reloads(page, api, token, acme, shots)
    console_metadata.file_list_facets(page, api, shots)
    console_metadata.search_facets(page, api, shots)
    console_metadata.reader_sees_it_read_only(browser, api, stack["key"], acme)
    # No value's markup ran as script (an alert would be a dialog), and the page met no error.
    assert dialogs == []
    assert page.problems == []


def test_webhooks_view_and_file_states_told_by_the_event_stream(
    page: Any, browser: Any, stack: dict[str, Any], shots: Path, tmp_path: Path
) -> None:
    api = stack["api"]
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=api)
    sign_in(page, stack)
    token = token_of(page)
    with console_events.loopback_receiver() as receiver:
        console_events.register_and_see_the_secret_once(page, api, token, receiver, shots)
        console_events.send_a_test_and_rotate(page, receiver, shots)
    console_events.file_state_follows_its_events(page, api, token)
    console_events.upload_polls_without_the_stream(page, api, tmp_path)
    console_events.hidden_from_a_reader(browser, api, stack["key"])
    assert page.problems == []


def test_a_recording_citation_plays_the_cited_moment_beside_its_transcript(
    page: Any, stack: dict[str, Any], shots: Path, tmp_path: Path
) -> None:
    from shared.local.speech_corpus import espeak_missing
    from tests.e2e.console_recordings import check_cited_moment, write_talk

    missing = espeak_missing()
    if missing is not None:
        if os.environ.get("QUIRE_REQUIRE_SPEECH"):
            pytest.fail(missing)
        pytest.skip(missing)
    # Given a recording of speech uploaded through the picker and transcribed by the stack's engine
    sign_in(page, stack)
    path, talk = write_talk(tmp_path)
    page.locator("#upload-picker").set_input_files(str(path))
    processed(page, path.name)
    # When a spoken identifier is searched for and its citation opened
    page.goto(f"{stack['api']}/console/#/search?q=Falcon%2042")
    chip = page.get_by_test_id("hit").first.get_by_test_id("citation")
    chip.wait_for()
    assert path.name in chip.inner_text() and "transcription" in chip.inner_text()
    chip.click()
    # Then the recording plays from the cited second to its end, the cited segment lit in its transcript
    check_cited_moment(page, talk)
    assert page.problems == []
    page.screenshot(path=str(shots / "14-cited-recording.png"), full_page=True)


def test_a_large_file_goes_by_parts_and_a_reload_resumes_it_sending_only_the_missing_parts(
    page: Any, stack: dict[str, Any], shots: Path, tmp_path: Path
) -> None:
    api = stack["api"]
    console_parts.serve_parts_config(page)
    sign_in(page, stack)
    token = token_of(page)
    puts = console_parts.PartPuts(let_through=1)
    puts.watch(page)
    # Given an 11 MiB file (3 parts of 5 MiB): one part stored, the other two held in flight
    tides = tmp_path / "tide-tables.txt"
    tides.write_bytes(console_parts.document_of(11 * console_parts.MIB + 5, "sandpiper"))
    upload_id = console_parts.started_by_parts(page, tides, puts)
    console_parts.wait_for(page, lambda: len(puts.held) == 2, "two parts held in flight")
    assert sorted(puts.sent) == [1, 2, 3] and len(puts.passed) == 1, puts
    stored = console_parts.wait_for(page, lambda: console_parts.held_parts(api, token, upload_id), "a part stored")
    assert stored == puts.passed, (stored, puts)

    # When the page is reloaded, and the same file chosen again
    puts.open(page)
    page.reload()
    page.get_by_role("heading", name="Upload", exact=True).wait_for()
    unfinished = page.get_by_test_id("unfinished-uploads")
    assert "tide-tables.txt" in unfinished.inner_text()
    page.screenshot(path=str(shots / "17-upload-interrupted.png"), full_page=True)
    page.locator("#upload-picker").set_input_files(str(tides))

    # Then only the two missing parts are sent, the session completes, and the file is the file
    row = processed(page, tides.name)
    assert sorted(puts.sent[3:]) == sorted(puts.held), puts
    assert row.get_attribute("data-resumed-parts") == "1"
    assert "Resumed: 1 of 3 parts were already uploaded." in row.get_by_test_id("upload-note").inner_text()
    size = tides.stat().st_size
    assert row.locator("progress").evaluate("bar => [bar.value, bar.max]") == [size, size]
    file_id = row.get_attribute("data-file-id")
    assert file_id is not None
    assert api_call(api, token, "GET", f"/v1/uploads/{upload_id}")["state"] == "completed"
    assert console_parts.stored_sha256(api, token, file_id) == hashlib.sha256(tides.read_bytes()).hexdigest()
    assert console_parts.notes_of(page) == {}
    page.screenshot(path=str(shots / "18-upload-resumed.png"), full_page=True)

    # And a file whose noted session was aborted meanwhile starts again, saying so
    ebb = tmp_path / "ebb-tides.txt"
    ebb.write_bytes(console_parts.document_of(9 * console_parts.MIB, "turnstone"))
    gone = console_parts.PartPuts(let_through=0)
    aborted_id = console_parts.started_by_parts(page, ebb, gone)
    api_call(api, token, "DELETE", f"/v1/uploads/{aborted_id}")
    gone.open(page)
    page.reload()
    page.get_by_role("heading", name="Upload", exact=True).wait_for()
    page.locator("#upload-picker").set_input_files(str(ebb))
    row = processed(page, ebb.name)
    assert row.get_attribute("data-restarted") == "aborted"
    assert "was aborted: it starts again from the first byte" in row.get_by_test_id("upload-note").inner_text()
    assert row.get_attribute("data-upload-id") != aborted_id
    assert page.problems == []


def test_a_hit_shows_the_language_its_words_are_in(page: Any, stack: dict[str, Any], tmp_path: Path) -> None:
    # Given a German note uploaded through the picker
    sign_in(page, stack)
    note = tmp_path / "mietvertrag-notiz.txt"
    note.write_text(
        "Der Mieter verpflichtet sich, die Wohnung in einem ordnungsgemäßen Zustand zu halten und Schäden"
        " unverzüglich dem Vermieter zu melden.\n",
        encoding="utf-8",
    )
    page.locator("#upload-picker").set_input_files(str(note))
    processed(page, note.name)
    # When it is found by another form of its words
    page.goto(f"{stack['api']}/console/#/search?q=Schaden%20melden&mode=keyword")
    hit = page.get_by_test_id("hit").first
    hit.wait_for()
    # Then the hit says its language, and its excerpt is marked with it
    badge = hit.get_by_test_id("hit-language")
    assert badge.inner_text() == "DE" and badge.get_attribute("title") == "German (de)"
    assert hit.locator("p.excerpt").get_attribute("lang") == "de"
    hit.get_by_test_id("citation").click()
    assert "German (de)" in page.locator("dl.facts").inner_text()
    assert page.problems == []


def test_a_file_whose_bytes_the_collection_held_already_says_so_and_search_shows_the_text_once(
    page: Any, stack: dict[str, Any], tmp_path: Path
) -> None:
    # Given the same note uploaded twice under two names
    sign_in(page, stack)
    text = "The heron nests on the north bank of the mill pond every spring.\n"
    first, second = tmp_path / "heron.txt", tmp_path / "heron-copy.txt"
    for path in (first, second):
        path.write_text(text, encoding="utf-8")
    page.locator("#upload-picker").set_input_files([str(first), str(second)])
    for path in (first, second):
        processed(page, path.name)
    listed = api_call(stack["api"], token_of(page), "GET", "/v1/files?limit=50")["files"]
    files = {file["filename"]: file for file in listed if file["filename"] in (first.name, second.name)}
    copy, original = sorted(files.values(), key=lambda file: file["current"]["duplicateOf"] is None)
    assert copy["current"]["duplicateOf"]["fileId"] == original["fileId"]
    # When the later one is opened, then its view names the earlier one, linked; the earlier one names nothing
    page.goto(f"{stack['api']}/console/#/files/{copy['fileId']}")
    note = page.get_by_test_id("duplicate-of")
    note.wait_for()
    assert original["filename"] in note.inner_text()
    assert note.locator("a").get_attribute("href") == (
        f"#/files/{original['fileId']}?version={original['current']['versionId']}"
    )
    page.goto(f"{stack['api']}/console/#/files/{original['fileId']}")
    page.get_by_role("heading", name="Versions").wait_for()
    assert page.get_by_test_id("duplicate-of").count() == 0
    # And a search finds the text once
    page.goto(f"{stack['api']}/console/#/search?q=heron%20nests%20mill%20pond&mode=keyword")
    page.get_by_test_id("hit").first.wait_for()
    assert page.get_by_test_id("hit").filter(has_text="heron nests").count() == 1
    assert page.problems == []
