"""The console's metadata flows (issue 33), driven in a real browser by tests/e2e/test_console.py on its stack:
files uploaded with metadata through the API, the file's panel (values by type, the revision), a writer's edit
(saved, the revision bumped), the API's 400 beside its field and a 409 reloading the current values, a reader's
read-only panel, and facet chips narrowing the file list and search. A value holding markup is user-supplied text
and must show as its characters everywhere.
"""

import json
import urllib.request
from pathlib import Path
from typing import Any

from shared.cli.smoke_http import post_form

HOSTILE_VALUE = "<img src=x onerror=alert(1)>"
WORDS = "The wombat ledger lists the burrow leases of the season"
ACME = {
    "customer": "acme",
    "tags": ["nda", "renewal"],
    "effective": "2026-03-01",
    "amount": 1200,
    "note": HOSTILE_VALUE,
}
GLOBEX = {"customer": "globex", "tags": ["renewal"]}
POLLS = 960  # a quarter second each: four minutes for a text file to be indexed


def api_json(api: str, token: str, method: str, path: str, body: object | None = None) -> Any:
    request = urllib.request.Request(
        f"{api}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def upload_with_metadata(api: str, token: str, filename: str, text: str, metadata: dict[str, Any]) -> str:
    """A text file uploaded as a client does it: a ticket carrying the metadata, then the presigned POST."""
    content = text.encode()
    ticket = api_json(
        api,
        token,
        "POST",
        "/v1/uploads",
        {
            "collectionId": "default",
            "filename": filename,
            "mediaType": "text/plain",
            "byteSize": len(content),
            "metadata": metadata,
        },
    )
    post_form(ticket["upload"]["url"], ticket["upload"]["fields"], filename, content, "text/plain")
    return str(ticket["fileId"])


def wait_indexed(page: Any, api: str, token: str, file_id: str) -> None:
    version: dict[str, Any] = {}
    for _ in range(POLLS):
        version = api_json(api, token, "GET", f"/v1/files/{file_id}")["current"]
        if version.get("processingState") in ("indexed", "failed") or version["state"] == "rejected":
            break
        page.wait_for_timeout(250)
    assert version.get("processingState") == "indexed", version


def two_files_with_metadata(page: Any, api: str, token: str) -> tuple[str, str]:
    acme = upload_with_metadata(api, token, "meta-acme.txt", f"{WORDS}: acme's copy.\n", ACME)
    globex = upload_with_metadata(api, token, "meta-globex.txt", f"{WORDS}: globex's copy.\n", GLOBEX)
    wait_indexed(page, api, token, acme)
    wait_indexed(page, api, token, globex)
    return acme, globex


def values(page: Any) -> Any:
    return page.get_by_test_id("metadata-values")


def panel_shows_each_type_and_markup_as_text(page: Any, api: str, token: str, file_id: str) -> int:
    """Each key and value by type (a list as chips, a date as a date), the revision; returns the revision."""
    page.goto(f"{api}/console/#/files/{file_id}")
    values(page).wait_for()
    assert values(page).locator("dd[data-key=tags] .value-item").all_inner_texts() == ["nda", "renewal"]
    assert values(page).locator("dd[data-key=effective] time").get_attribute("datetime") == "2026-03-01"
    assert values(page).locator("dd[data-key=amount]").inner_text() == "1200"
    # Markup in a value is its characters: no element made, no handler run.
    assert values(page).locator("dd[data-key=note]").inner_text() == HOSTILE_VALUE
    assert page.locator("main img").count() == 0
    revision = int(api_json(api, token, "GET", f"/v1/files/{file_id}")["metadataRevision"])
    assert page.get_by_test_id("metadata-revision").inner_text() == f"revision {revision}"
    return revision


def writer_edits(page: Any, api: str, token: str, file_id: str, *, revision: int, shots: Path) -> None:
    """A number changed, a key added, a key removed; saved with the revision read, which the save bumps."""
    page.get_by_test_id("edit-metadata").click()
    page.get_by_label("Value of amount").fill("1300")
    page.get_by_role("button", name="Add a key").click()
    page.get_by_label("New key", exact=True).fill("region")
    page.get_by_label("Value of region").fill("emea")
    page.locator("tr[data-key=effective]").get_by_role("button", name="Remove").click()
    page.screenshot(path=str(shots / "11-metadata-editor.png"), full_page=True)
    page.get_by_role("button", name="Save").click()
    page.get_by_text(f"Saved: revision {revision + 1}.").wait_for()
    stored = api_json(api, token, "GET", f"/v1/files/{file_id}")
    assert stored["metadataRevision"] == revision + 1
    assert (stored["metadata"]["amount"], stored["metadata"]["region"]) == (1300, "emea")
    assert "effective" not in stored["metadata"]
    assert values(page).locator("dd[data-key=region]").inner_text() == "emea"


def refusal_beside_its_field_and_conflict_reloads(page: Any, api: str, token: str, file_id: str, shots: Path) -> None:
    # The API's 400 is said beside the field it names: amount is a number in this collection.
    page.get_by_test_id("edit-metadata").click()
    page.get_by_label("Type of amount").select_option("string")
    page.get_by_label("Value of amount").fill("lots")
    page.get_by_role("button", name="Save").click()
    refusal = page.locator("tr[data-key=amount] .field-error")
    refusal.filter(has_text="amount").wait_for()
    assert "number" in refusal.inner_text()
    # Changed meanwhile by another writer: the save is a 409, nothing is saved, the current values are shown.
    page.get_by_label("Type of amount").select_option("number")
    page.get_by_label("Value of amount").fill("1400")
    api_json(api, token, "PATCH", f"/v1/files/{file_id}/metadata", {"set": {"region": "apac"}})
    page.get_by_role("button", name="Save").click()
    page.get_by_text("The metadata changed meanwhile").wait_for()
    assert values(page).locator("dd[data-key=region]").inner_text() == "apac"
    assert values(page).locator("dd[data-key=amount]").inner_text() == "1300"
    page.screenshot(path=str(shots / "12-metadata-panel.png"), full_page=True)


def chip(page: Any, key: str, value: str) -> Any:
    return page.locator(f"[data-testid=facet-chip][data-key={key}][data-value={value}]")


def active(page: Any, label: str) -> Any:
    return page.get_by_test_id("active-filter").filter(has_text=label)


def listed_names(page: Any) -> set[str]:
    page.locator("table.files tbody tr").first.wait_for()
    return {name.strip() for name in page.locator("table.files tbody tr td:first-child").all_inner_texts()}


def file_list_facets(page: Any, api: str, shots: Path) -> None:
    """customer acme narrows the list to acme's file, and the address keeps it; a list key's chip tests
    membership; removing the customer chip widens the list again."""
    page.goto(f"{api}/console/#/files")
    chip(page, "customer", "acme").click()
    active(page, "customer = acme").wait_for()
    assert listed_names(page) == {"meta-acme.txt"}
    assert "filter=" in page.url
    page.reload()
    active(page, "customer = acme").wait_for()
    assert listed_names(page) == {"meta-acme.txt"}
    assert page.locator("main img").count() == 0  # the hostile value in the row's metadata, as text too
    page.screenshot(path=str(shots / "13-files-facets.png"), full_page=True)
    chip(page, "tags", "renewal").click()
    active(page, "tags has renewal").wait_for()
    page.get_by_role("button", name="Remove the filter customer = acme").click()
    active(page, "customer = acme").wait_for(state="detached")
    assert listed_names(page) == {"meta-acme.txt", "meta-globex.txt"}


def search_facets(page: Any, api: str, shots: Path) -> None:
    """Both copies found; the globex chip narrows the hits to globex's, each hit showing its file's metadata."""
    page.goto(f"{api}/console/#/search?q=wombat%20ledger%20burrow%20leases")
    hits = page.get_by_test_id("hit")
    hits.first.wait_for()
    assert {"meta-acme.txt", "meta-globex.txt"} <= set(hits.locator(".chip-file").all_inner_texts())
    chip(page, "customer", "globex").click()
    active(page, "customer = globex").wait_for()
    hits.filter(has_text="meta-acme.txt").wait_for(state="detached")
    assert set(hits.locator(".chip-file").all_inner_texts()) == {"meta-globex.txt"}
    assert "customer: globex" in hits.first.get_by_test_id("metadata-compact").inner_text()
    assert "filter=" in page.url
    page.screenshot(path=str(shots / "14-search-facets.png"), full_page=True)


def reader_sees_it_read_only(browser: Any, api: str, key: str, file_id: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{api}/console/#sign-in={key}")
        page.get_by_label("Collections (comma-separated)").fill("default")
        page.get_by_label("Role").select_option("read")
        page.get_by_test_id("local-sign-in").click()
        page.get_by_role("heading", name="Upload").wait_for()
        page.goto(f"{api}/console/#/files/{file_id}")
        page.get_by_test_id("metadata-read-only").wait_for()
        assert page.get_by_test_id("edit-metadata").count() == 0
        assert values(page).locator("dd[data-key=customer]").inner_text() == "acme"
    finally:
        context.close()
