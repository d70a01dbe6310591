"""Page images over real HTTP: the API handler, moto's S3 server (real presigned GETs), PostgreSQL, and the real
rasterizer in the real sandbox. `GET /v1/files/{id}/pages/{n}` answers a signed GET of the page drawn as a PNG."""

import io
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from PIL import Image

from shared.domain.page_images import MAX_PAGE_SIDE, page_image_key, page_images_prefix
from shared.domain.uploads import derived_prefix
from shared.domain.workflow import StartOutcome
from shared.local.hostile_corpus import raw_pdf
from shared.sandbox import sandboxed
from shared.services import page_images
from tests.builders.images import picture
from tests.builders.pdf import pdf_of
from tests.integration.files_stack import DOCX_TYPE, Stack, docx_bytes

A4 = (595.28, 841.89)  # what fpdf2's A4 page measures, in points


def fetch(url: str) -> tuple[bytes, Any]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read(), response.headers


def rotated_pdf() -> bytes:
    """One portrait page (612 x 792 points) turned a quarter by /Rotate 90: a viewer shows it landscape."""
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Rotate 90 >>",
        ]
    )


def bomb_png() -> bytes:
    """20,000 x 20,000 pixels (400 megapixels) in about 50 KB."""
    buffer = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(buffer, format="PNG")
    return buffer.getvalue()


class CountedRuns:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return sandboxed(*args, **kwargs)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> CountedRuns:
    counted = CountedRuns()
    monkeypatch.setattr(page_images, "sandboxed", counted)
    return counted


@pytest.fixture(autouse=True)
def unprocessed(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page is drawn from the stored original, processed or not: these uploads are stored and never processed
    (no OCR of their blank pages in the background while the pages are drawn)."""
    monkeypatch.setattr(stack.container.workflow, "start", lambda process: StartOutcome.STARTED)


def test_page_two_of_a_pdf_is_a_signed_png_within_the_bound_drawn_once(stack: Stack, runs: CountedRuns) -> None:
    # Given a two-page A4 PDF
    token = stack.token(collections=("pages",))
    ticket = stack.upload(token, "two.pdf", "application/pdf", pdf_of("first page", "second page"), collection="pages")
    path = f"/v1/files/{ticket['fileId']}/pages/2"

    # When its page 2 is asked for
    status, answer = stack.json("GET", path, token)

    # Then the answer is a signed GET of at most 15 minutes and the drawing's size
    assert status == 200, answer
    assert set(answer) == {"url", "expiresAt", "page", "pageCount", "width", "height", "versionId"}
    assert (answer["page"], answer["pageCount"], answer["versionId"]) == (2, 2, ticket["versionId"])
    assert datetime.fromisoformat(answer["expiresAt"]) <= datetime.now(UTC) + timedelta(minutes=15, seconds=5)
    # And the URL serves a PNG as image/png (an <img> shows it), still an attachment if opened
    body, headers = fetch(answer["url"])
    assert headers["Content-Type"] == "image/png"
    assert headers["Content-Disposition"].startswith('attachment; filename="two page 2.png"')
    drawn = Image.open(io.BytesIO(body))
    assert drawn.format == "PNG" and drawn.size == (answer["width"], answer["height"])
    assert max(drawn.size) == MAX_PAGE_SIDE and drawn.width * drawn.height <= 4_000_000
    assert abs(drawn.width / drawn.height - A4[0] / A4[1]) < 2 / MAX_PAGE_SIDE
    assert runs.calls == 1

    # And it is kept under the original's derived prefix: a second request draws nothing
    original = ticket["upload"]["fields"]["key"]
    kept = stack.container.content.head(page_image_key(original, 2))
    assert kept is not None and kept.content_type == "image/png"
    assert [o.key for o in stack.container.content.object_versions(page_images_prefix(original))] == [
        page_image_key(original, 2)
    ]
    status, again = stack.json("GET", path, token)
    assert status == 200 and runs.calls == 1
    assert (again["width"], again["height"], again["pageCount"]) == (answer["width"], answer["height"], 2)
    still = stack.container.content.head(page_image_key(original, 2))
    assert still is not None and still.version_id == kept.version_id
    assert fetch(again["url"])[0] == body


def test_a_page_past_the_end_is_a_400_naming_the_page_count(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "two.pdf", "application/pdf", pdf_of("one", "two"))
    status, answer = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/3", token)
    assert status == 400
    assert answer["error"] == "invalid_request" and "page 3 of a 2-page document" in answer["message"]
    for page in ("0", "x", "-1", "1.5"):
        status, answer = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/{page}", token)
        assert status == 400 and "from 1" in answer["message"], (page, answer)


def test_a_file_without_pages_is_a_415_pointing_at_its_document(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "memo.docx", DOCX_TYPE, docx_bytes())
    status, answer = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/1", token)
    assert status == 415 and answer["error"] == "unsupported_media_type"
    assert "page images exist for PDFs and images" in answer["message"]
    assert f"GET /v1/files/{ticket['fileId']}/document" in answer["message"]


def test_an_unentitled_caller_cannot_tell_a_page_from_a_random_ids(stack: Stack) -> None:
    owner = stack.token(tenant="acme", collections=("secret",))
    ticket = stack.upload(owner, "plan.pdf", "application/pdf", pdf_of("secret plan"), collection="secret")
    random_file, random_version = uuid.uuid4(), uuid.uuid4()
    for token in (
        stack.token(tenant="globex", collections=("secret",)),
        stack.token(tenant="acme", collections=("docs",)),
    ):
        for query in ("", f"?versionId={ticket['versionId']}"):
            existing = stack.call("GET", f"/v1/files/{ticket['fileId']}/pages/1{query}", token)
            missing = stack.call(
                "GET",
                f"/v1/files/{random_file}/pages/1{query.replace(ticket['versionId'], str(random_version))}",
                token,
            )
            assert existing == missing
            assert existing[0] == 404


def test_a_deleted_file_says_its_pages_are_gone_to_its_reader_only(stack: Stack) -> None:
    token = stack.token(collections=("bye",))
    ticket = stack.upload(token, "bye.pdf", "application/pdf", pdf_of("soon gone"), collection="bye")
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/1", token)[0] == 200
    assert stack.call("DELETE", f"/v1/files/{ticket['fileId']}", token)[0] == 202
    for query in ("", f"?versionId={ticket['versionId']}"):
        status, answer = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/1{query}", token)
        assert status == 404 and answer["error"] == "deleted" and "was deleted" in answer["message"], answer
    # Another collection's reader gets the 404 a random id gets.
    outsider = stack.token(collections=("docs",))
    assert stack.call("GET", f"/v1/files/{ticket['fileId']}/pages/1", outsider) == stack.call(
        "GET", f"/v1/files/{uuid.uuid4()}/pages/1", outsider
    )


def test_deleting_the_file_removes_its_page_images_with_the_original(stack: Stack) -> None:
    token = stack.token(collections=("swept",))
    ticket = stack.upload(token, "swept.pdf", "application/pdf", pdf_of("one", "two"), collection="swept")
    for page in (1, 2):
        assert stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/{page}", token)[0] == 200
    original = ticket["upload"]["fields"]["key"]
    report = stack.container.reconciler.run(datetime.now(UTC) + timedelta(hours=3)).as_dict()
    assert not {page_image_key(original, 1), page_image_key(original, 2)} & {
        e["key"] for e in report["bytesWithoutRow"]
    }
    assert stack.call("DELETE", f"/v1/files/{ticket['fileId']}", token)[0] == 202
    stack.container.reconciler.run(datetime.now(UTC) + timedelta(hours=3))
    assert list(stack.container.content.object_versions(derived_prefix(original))) == []


@pytest.mark.parametrize("deleted", ["file", "collection"])
def test_a_page_link_issued_before_a_deletion_stops_working_with_the_delete(stack: Stack, deleted: str) -> None:
    # Given a reader holding the signed link to a page's drawing
    collection = f"links-{deleted}"
    token = stack.token(collections=(collection,))
    ticket = stack.upload(token, "links.pdf", "application/pdf", pdf_of("held"), collection=collection)
    status, page = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/1", token)
    assert status == 200 and fetch(page["url"])[0].startswith(b"\x89PNG")
    # When an admin deletes the file, or its whole collection (no sweep has run)
    target = f"/v1/files/{ticket['fileId']}" if deleted == "file" else f"/v1/collections/{collection}/files"
    assert stack.call("DELETE", target, token)[0] == 202
    # Then the link answers no bytes, as the original's download link does
    with pytest.raises(urllib.error.HTTPError) as refused:
        fetch(page["url"])
    assert refused.value.code in (403, 404)


def test_a_rotated_page_is_drawn_as_it_is_displayed(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "turned.pdf", "application/pdf", rotated_pdf())
    status, answer = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/1", token)
    assert status == 200, answer
    # 612 x 792 points turned a quarter: landscape, twice its size (the page is small enough to enlarge).
    assert (answer["width"], answer["height"]) == (1584, 1224)
    assert Image.open(io.BytesIO(fetch(answer["url"])[0])).size == (1584, 1224)


def test_an_image_is_its_own_page_one_and_has_no_page_two(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "chart.png", "image/png", picture("PNG", size=(320, 200)))
    status, answer = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/1", token)
    assert status == 200, answer
    assert (answer["page"], answer["pageCount"], answer["width"], answer["height"]) == (1, 1, 320, 200)  # not enlarged
    assert Image.open(io.BytesIO(fetch(answer["url"])[0])).size == (320, 200)
    status, answer = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/2", token)
    assert status == 400 and "page 2 of a 1-page document" in answer["message"]


def test_a_decompression_bomb_is_a_422_sentence_not_a_crash(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "bomb.png", "image/png", bomb_png())
    status, answer = stack.json("GET", f"/v1/files/{ticket['fileId']}/pages/1", token)
    assert status == 422 and answer["error"] == "cannot_render", answer
    assert "60,000,000 pixels" in answer["message"] and answer["retryable"] is False


def test_a_store_that_cannot_sign_serves_the_png_through_the_api(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    token = stack.token()
    ticket = stack.upload(token, "one.pdf", "application/pdf", pdf_of("proxied"))
    monkeypatch.setattr(stack.container.content, "signed_read", lambda *args, **kwargs: None)
    request = urllib.request.Request(
        f"{stack.api}/v1/files/{ticket['fileId']}/pages/1", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Content-Type"] == "image/png"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert max(Image.open(io.BytesIO(response.read())).size) == MAX_PAGE_SIDE
