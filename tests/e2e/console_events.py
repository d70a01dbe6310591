"""The console's webhooks view and its event-driven file states (issue 34), driven in a real browser by
tests/e2e/test_console.py on its stack (`quire up`, whose relay publishes each change as it commits and whose
deliverer sends it): a webhook registered to a receiver on 127.0.0.1 (plain http, which only the local stack allows,
and only to loopback), its secret shown once, a test message delivered and listed with its body; a file's state in
the Files view changed by its events alone (that view never polls), and the upload view falling back to polling
when GET /v1/events does not answer.
"""

import json
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from shared.cli.smoke_http import post_form
from tests.e2e.console_metadata import api_json

DELIVERED_TIMEOUT_MS = 30_000
INDEXED_TIMEOUT_MS = 120_000


@dataclass
class Receiver:
    """A webhook endpoint on 127.0.0.1: records each POST's headers and body, answers 204."""

    port: int
    received: list[dict[str, Any]] = field(default_factory=list)

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/quire-hook"


@contextmanager
def loopback_receiver() -> Iterator[Receiver]:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            receiver.received.append({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(port=server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def register_and_see_the_secret_once(page: Any, api: str, token: str, receiver: Receiver, shots: Path) -> str:
    """The form's checks and the API's refusal beside their fields; then the webhook added, its secret shown once
    with a working copy button; gone after a reload, and never in the API's answers again. Returns its id."""
    page.get_by_role("link", name="Webhooks").click()
    page.get_by_role("heading", name="Webhooks").wait_for()
    form = page.get_by_test_id("webhook-form")
    # Said before sending: no URL, no event type.
    form.get_by_role("button", name="Add webhook").click()
    assert "URL" in page.locator("#webhook-url-error").inner_text()
    assert "event type" in page.locator("#webhook-events-error").inner_text()
    # The API's own refusal, beside the field it names: plain http to an address that is not this machine.
    page.get_by_label("Endpoint URL").fill("http://0.0.0.0/quire-hook")
    page.get_by_label("All events (*), and any type added later").check()
    form.get_by_role("button", name="Add webhook").click()
    page.locator("#webhook-url-error").filter(has_text="refused by the rule").wait_for()
    assert page.get_by_test_id("webhook-secret").count() == 0

    page.get_by_label("Endpoint URL").fill(receiver.url())
    assert page.get_by_label("default").is_checked()  # the one collection this admin administers, ticked
    page.get_by_label("Description (optional)").fill("the browser test's receiver")
    form.get_by_role("button", name="Add webhook").click()
    panel = page.get_by_test_id("webhook-secret")
    panel.wait_for()
    assert "Shown only now" in panel.inner_text()
    secret = page.get_by_test_id("webhook-secret-value").input_value()
    assert secret.startswith("whsec_")
    page.get_by_test_id("copy-secret").click()
    page.get_by_test_id("copy-status").filter(has_text="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    row = page.locator("table.webhooks tr", has_text=receiver.url())
    assert row.locator("[data-state]").get_attribute("data-state") == "active"
    assert "all events" in row.inner_text() and "default" in row.inner_text()
    page.screenshot(path=str(shots / "15-webhooks.png"), full_page=True)

    # Shown once: not after a reload, and not in anything the API answers about the webhook.
    page.reload()
    page.locator("table.webhooks tr", has_text=receiver.url()).wait_for()
    assert secret not in page.content()
    listed = api_json(api, token, "GET", "/v1/webhooks")["webhooks"]
    assert secret not in json.dumps(listed)
    (webhook,) = [w for w in listed if w["url"] == receiver.url()]
    return str(webhook["webhookId"])


def send_a_test_and_rotate(page: Any, receiver: Receiver, shots: Path) -> None:
    """Send a test: its delivery is listed at once, then as delivered with the receiver's status, its body (the one
    the receiver got) on expand; a rotation shows the new secret once."""
    page.locator("table.webhooks a", has_text=receiver.url()).click()
    page.get_by_role("heading", name="Webhook", exact=True).wait_for()
    page.get_by_role("button", name="Send a test").click()
    delivery = page.get_by_test_id("delivery").filter(has_text="webhook.test")
    delivery.wait_for()
    page.locator('[data-testid=delivery][data-state="delivered"]').wait_for(timeout=DELIVERED_TIMEOUT_MS)
    assert "204" in delivery.inner_text()
    (sent,) = [r for r in receiver.received if json.loads(r["body"])["type"] == "webhook.test"]
    assert sent["headers"]["webhook-signature"].startswith("v1,")
    delivery.get_by_role("button", name="Body").click()
    shown = page.locator("tr.delivery-body:not([hidden]) pre")
    assert json.loads(shown.inner_text()) == json.loads(sent["body"])
    page.screenshot(path=str(shots / "16-webhook-deliveries.png"), full_page=True)

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Rotate secret").click()
    page.get_by_test_id("webhook-secret").filter(has_text="New signing secret").wait_for()
    assert page.get_by_test_id("webhook-secret-value").input_value().startswith("whsec_")
    assert "still signs beside the new one" in page.get_by_test_id("webhook-facts").inner_text()


def file_state_follows_its_events(page: Any, api: str, token: str) -> None:
    """The Files view polls nothing: a file waiting for its bytes turns indexed there, then leaves it when deleted
    behind the console's back, each told by its event, without a reload."""
    content = b"The pangolin almanac lists the scales of the season.\n"
    ticket = api_json(
        api,
        token,
        "POST",
        "/v1/uploads",
        {"collectionId": "default", "filename": "pangolin.txt", "mediaType": "text/plain", "byteSize": len(content)},
    )
    page.goto(f"{api}/console/#/files")
    row = page.locator(f'table.files tr[data-file-id="{ticket["fileId"]}"]')
    assert row.locator("[data-state]").get_attribute("data-state") == "waiting for its upload"
    page.locator("html[data-event-stream=following]").wait_for()
    # Only now do the bytes arrive: whatever the row shows next, an event told it.
    post_form(ticket["upload"]["url"], ticket["upload"]["fields"], "pangolin.txt", content, "text/plain")
    page.locator(f'tr[data-file-id="{ticket["fileId"]}"] [data-state="indexed"]').wait_for(timeout=INDEXED_TIMEOUT_MS)
    assert row.get_attribute("data-told-by") == "event"
    delete = urllib.request.Request(
        f"{api}/v1/files/{ticket['fileId']}", method="DELETE", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(delete, timeout=60):
        pass
    row.wait_for(state="detached")


def upload_polls_without_the_stream(page: Any, api: str, folder: Path) -> None:
    """GET /v1/events answering 404 (a stack without it): the upload view polls as before and still sees the end."""
    page.route("**/v1/events*", lambda route: route.fulfill(status=404, json={"error": "not_found", "message": "x"}))
    page.goto(f"{api}/console/#/upload")
    page.get_by_role("heading", name="Upload").wait_for()
    plain = folder / "no-stream.txt"
    plain.write_text("The ibis register notes the nests along the canal.\n")
    page.locator("#upload-picker").set_input_files(str(plain))
    done = page.locator('li.upload:is(.done, .failed)[data-filename="no-stream.txt"]')
    done.wait_for(timeout=INDEXED_TIMEOUT_MS)
    assert done.get_attribute("data-state") == "indexed"
    assert done.get_attribute("data-told-by") == "poll"
    page.locator("html[data-event-stream=unavailable]").wait_for()
    page.unroute("**/v1/events*")


def hidden_from_a_reader(browser: Any, api: str, key: str) -> None:
    """A reader administers nothing: no Webhooks link, and the address says why instead of a form."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{api}/console/#sign-in={key}")
        page.get_by_label("Role").select_option("read")
        page.get_by_test_id("local-sign-in").click()
        page.get_by_role("heading", name="Upload").wait_for()
        assert page.get_by_role("link", name="Webhooks").count() == 0
        page.goto(f"{api}/console/#/webhooks")
        page.get_by_text("Webhooks are for collection admins").wait_for()
        assert page.get_by_test_id("webhook-form").count() == 0
    finally:
        context.close()
