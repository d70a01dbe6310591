// A file's metadata panel: key → value by type, and its revision; for a writer of the file's collection an editor
// (add, change, remove keys, each value of a chosen type) saved by PATCH /v1/files/{id}/metadata with the revision
// it was read at. A 409 says the metadata changed meanwhile and shows the current values; a 400 is shown beside
// the field the API's message names. Every key and value is text (dom.js): metadata is user-supplied.

import { ApiError, get, patch } from "./api.js";
import { el, fill, notice } from "./dom.js";
import { valueElement } from "./facets.js";
import { TYPES, editText, keyOfError, metadataChange, typeOfValue } from "./metadata.js";
import { mayIn } from "./state.js";

let rowNumber = 0;

function heading(file) {
  return el(
    "h3",
    { id: "metadata-heading" },
    "Metadata ",
    el("span", { class: "badge", "data-testid": "metadata-revision" }, `revision ${file.metadataRevision ?? 0}`),
  );
}

function readView(target, file, message) {
  const entries = Object.entries(file.metadata || {}).sort(([a], [b]) => a.localeCompare(b));
  const writable = mayIn(file.collectionId, "write");
  target.dataset.revision = String(file.metadataRevision ?? 0); // what the file view's event stream compares with
  fill(
    target,
    heading(file),
    message,
    entries.length
      ? el(
          "dl",
          { class: "facts metadata-values", "data-testid": "metadata-values" },
          entries.map(([key, value]) => [el("dt", {}, key), el("dd", { "data-key": key }, valueElement(value))]),
        )
      : el("p", { class: "sentence" }, "No metadata."),
    writable
      ? el(
          "button",
          { type: "button", "data-testid": "edit-metadata", onclick: () => editView(target, file) },
          "Edit metadata",
        )
      : el(
          "p",
          { class: "sentence", "data-testid": "metadata-read-only" },
          `Read-only: changing metadata needs the write role in ${file.collectionId}.`,
        ),
  );
}

/** One editor row: its key, type and value controls, a Remove toggle, and the place its error is said. */
function editorRow(key, value, original, declared) {
  rowNumber += 1;
  const number = rowNumber;
  const keyInput = el("input", {
    id: `meta-key-${number}`,
    value: key,
    readonly: original,
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    "aria-label": original ? `Key ${key}` : "New key",
    pattern: "[a-z][a-z0-9_.\\-]{0,63}",
    title: "lower-case letters, digits, _ . - (starting with a letter), at most 64",
  });
  const type = el(
    "select",
    { id: `meta-type-${number}`, "aria-label": `Type of ${key || "the new key"}` },
    TYPES.map((name) =>
      el("option", { value: name, selected: name === (original ? typeOfValue(value) : "string") }, name),
    ),
  );
  const error = el("span", { id: `meta-error-${number}`, class: "field-error", role: "alert" });
  const holder = el("span", { class: "value-control" });
  let control = null;
  const makeControl = (text) => {
    const described = {
      id: `meta-value-${number}`,
      "aria-label": `Value of ${keyInput.value || "the new key"}`,
      "aria-describedby": error.id,
    };
    if (type.value === "boolean")
      control = el(
        "select",
        described,
        ["true", "false"].map((name) => el("option", { value: name, selected: name === text }, name)),
      );
    else if (type.value === "list") control = el("textarea", { ...described, rows: 3, title: "one item a line" }, text);
    else
      control = el("input", {
        ...described,
        value: text,
        autocomplete: "off",
        placeholder: type.value === "date" ? "2026-12-06 or 2026-12-06T09:30:00Z" : type.value === "number" ? "42" : "",
        inputmode: type.value === "number" ? "decimal" : null,
      });
    fill(holder, control, type.value === "list" ? el("span", { class: "sentence" }, "one item a line") : null);
  };
  makeControl(editText(type.value, original ? value : undefined));
  type.addEventListener("change", () => {
    const text = control.value;
    makeControl(type.value === "boolean" ? "true" : text);
  });
  // The controls are named by the key they belong to, as it is typed.
  keyInput.addEventListener("input", () => {
    const name = keyInput.value.trim() || "the new key";
    type.setAttribute("aria-label", `Type of ${name}`);
    control.setAttribute("aria-label", `Value of ${name}`);
  });
  // A key the collection's schema declares starts as the declared type.
  keyInput.addEventListener("change", () => {
    const wanted = declared?.[keyInput.value.trim()]?.type;
    if (!original && wanted && wanted !== type.value) {
      type.value = wanted;
      makeControl(editText(wanted, undefined));
    }
  });
  const row = el("tr", { "data-key": key, "data-testid": "metadata-row" });
  const state = { key, original, removed: false };
  const removeButton = el(
    "button",
    {
      type: "button",
      class: "danger",
      "aria-pressed": "false",
      onclick: () => {
        state.removed = !state.removed;
        row.classList.toggle("removed", state.removed);
        removeButton.setAttribute("aria-pressed", String(state.removed));
        removeButton.textContent = state.removed ? "Keep" : "Remove";
      },
    },
    "Remove",
  );
  row.append(el("td", {}, keyInput), el("td", {}, type), el("td", {}, holder, error), el("td", {}, removeButton));
  return {
    element: row,
    read: () => ({ ...state, key: keyInput.value.trim(), type: type.value, text: control.value }),
    showError: (text) => {
      error.textContent = text;
      control.setAttribute("aria-invalid", "true");
    },
    clearError: () => {
      error.textContent = "";
      control.removeAttribute("aria-invalid");
    },
  };
}

/** After a 409: the file's metadata as it is now, with what happened said above it. */
async function changedMeanwhile(target, file, revision) {
  const said = `The metadata changed meanwhile (now revision ${revision ?? "newer"}): nothing was saved.`;
  try {
    const current = await get(`/v1/files/${file.fileId}`);
    readView(
      target,
      current,
      notice(`${said} The current values are shown; edit again to make your change.`, "warning"),
    );
  } catch (error) {
    readView(target, file, notice(`${said} The current values could not be read: ${error.message}`, "error"));
  }
}

async function editView(target, file) {
  let declared = null;
  try {
    declared = (await get(`/v1/collections/${encodeURIComponent(file.collectionId)}/metadata-schema`)).schema?.keys;
  } catch {
    // The schema only seeds a new key's type: without it the editor still works.
  }
  const rows = [];
  const body = el("tbody");
  const status = el("div", { "data-testid": "metadata-status" });
  const add = (key, value, original) => {
    const row = editorRow(key, value, original, declared);
    rows.push(row);
    body.append(row.element);
    return row;
  };
  for (const [key, value] of Object.entries(file.metadata || {}).sort(([a], [b]) => a.localeCompare(b)))
    add(key, value, true);
  const saveButton = el("button", { type: "submit" }, "Save");
  const save = async (event) => {
    event.preventDefault();
    rows.forEach((row) => row.clearError());
    fill(status);
    const read = rows.map((row) => row.read());
    const change = metadataChange(file.metadata || {}, read);
    if (change.errors) {
      for (const [key, sentence] of Object.entries(change.errors)) {
        const at = rows.find((row, index) => read[index].key === key && !read[index].removed);
        at?.showError(key ? `${key}: ${sentence}` : sentence);
      }
      fill(status, notice("Some values cannot be saved as they are: see beside them.", "error"));
      return;
    }
    if (!Object.keys(change.set).length && !change.remove.length) {
      fill(status, notice("Nothing changed."));
      return;
    }
    fill(status, notice("Saving…"));
    saveButton.disabled = true; // a double click must not send the change twice (the second would be a 409)
    try {
      const saved = await patch(`/v1/files/${file.fileId}/metadata`, {
        set: change.set,
        remove: change.remove,
        expectedRevision: file.metadataRevision ?? 0,
      });
      readView(target, saved, notice(`Saved: revision ${saved.metadataRevision}.`));
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        await changedMeanwhile(target, file, error.body.metadataRevision);
        return;
      }
      const key =
        error instanceof ApiError && error.status === 400
          ? keyOfError(
              error.message,
              read.map((r) => r.key),
              change.remove,
            )
          : null;
      const at = key === null ? undefined : rows.find((row, index) => read[index].key === key);
      if (at) at.showError(error.message);
      fill(status, notice(at ? "The API refused a value: see beside it." : error.message, "error"));
      saveButton.disabled = false;
    }
  };
  fill(
    target,
    heading(file),
    el(
      "form",
      { class: "metadata-editor", "data-testid": "metadata-editor", onsubmit: save },
      el(
        "table",
        { "aria-label": "Metadata editor" },
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            ["Key", "Type", "Value", ""].map((title) => el("th", { scope: "col" }, title)),
          ),
        ),
        body,
      ),
      el(
        "p",
        {},
        el(
          "button",
          { type: "button", onclick: () => add("", undefined, false).element.querySelector("input")?.focus() },
          "Add a key",
        ),
        " ",
        saveButton,
        " ",
        el("button", { type: "button", onclick: () => readView(target, file) }, "Cancel"),
      ),
      status,
    ),
  );
}

/** The panel for `file` (as GET /v1/files/{id} answers it), read-only unless the caller may write its collection;
 * `message` (a notice) above its values. */
export function renderMetadataPanel(target, file, message = null) {
  readView(target, file, message);
}
