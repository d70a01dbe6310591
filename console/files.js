// Files: the caller's files with state, pages, OCR flags; a file's versions; delete for an admin of its
// collection; and the reader (the extracted document, window by window).

import { ApiError, del, get, query } from "./api.js";
import { renderBlocks } from "./blocks.js";
import { el, fill, formatBytes, formatTime, moreButton, notice, shortId } from "./dom.js";
import { compactMetadata, facetBar, listFacets, showFacetProblem } from "./facets.js";
import { fileChangeOf } from "./events.js";
import { follow } from "./live.js";
import { conditionsFromParam, facetKeysOf, filterParam } from "./metadata.js";
import { renderMetadataPanel } from "./metadata_panel.js";
import { caller, mayIn, stageOf } from "./state.js";

function ocrFlag(file) {
  const version = file.current || {};
  if (file.lowConfidence)
    return el(
      "span",
      { class: "badge badge-warning", title: "OCR read these pages with low confidence: words may be wrong" },
      `OCR low confidence (pages ${file.ocrPages.join(", ")})`,
    );
  if (file.ocrPages?.length) return el("span", { class: "badge" }, `OCR pages ${file.ocrPages.join(", ")}`);
  if (version.ocr?.state && version.ocr.state !== "not_needed")
    return el("span", { class: "badge" }, `OCR ${version.ocr.state}`);
  return "—";
}

/** A version's OCR in a cell: "done · 87% · low confidence", or "—" when OCR never ran. */
function ocrSummary(ocr) {
  if (!ocr) return "—";
  const parts = [ocr.state];
  if (ocr.confidence !== null && ocr.confidence !== undefined) parts.push(`${Math.round(ocr.confidence * 100)}%`);
  if (ocr.lowConfidence) parts.push("low confidence");
  return parts.join(" · ");
}

function stateCell(version) {
  return stageCell(stageOf(version));
}

function stageCell(stage) {
  return el(
    "td",
    { class: stage.failed ? "failed" : null, "data-state": stage.label },
    stage.label,
    stage.sentence ? el("div", { class: "sentence" }, stage.sentence) : null,
  );
}

async function remove(file, row) {
  if (!confirm(`Delete ${file.filename} and every version of it? Search stops finding it at once.`)) return;
  try {
    await del(`/v1/files/${file.fileId}`);
    row.remove();
  } catch (error) {
    alert(error.message);
  }
}

/** A file's row in the list; its Delete removes it. */
function fileRow(file) {
  const version = file.current || {};
  const row = el(
    "tr",
    { "data-file-id": file.fileId, "data-version-id": version.versionId || null, "data-done": stageOf(version).done },
    el("td", {}, el("a", { href: `#/files/${file.fileId}` }, file.filename)),
    el("td", {}, file.collectionId),
    stateCell(version),
    el("td", {}, version.extraction?.pageCount ?? "—"),
    el("td", {}, ocrFlag(file)),
    el("td", {}, String(file.versionCount ?? 1)),
    el("td", {}, formatBytes(version.byteSize)),
    el("td", {}, formatTime(version.createdAt)),
    el("td", {}, compactMetadata(file.metadata)),
    el(
      "td",
      {},
      mayIn(file.collectionId, "admin")
        ? el(
            "button",
            {
              type: "button",
              class: "danger",
              "aria-label": `Delete ${file.filename}`,
              onclick: () => remove(file, row),
            },
            "Delete",
          )
        : null,
    ),
  );
  return row;
}

/**
 * Keep the listed files' rows current from the event stream while the list is shown: a version's end shows at once
 * (from the event), then the row is read again for what else changed (pages, OCR, metadata, collection); a deleted
 * file's row goes. Without the stream the list stays as it was read (Refresh reads it again).
 */
function followRows(body) {
  const rowOf = (fileId) => body.querySelector(`tr[data-file-id="${CSS.escape(fileId)}"]`);
  const asked = new Map(); // a file's latest read: an earlier one answering late must not show an older state
  const reread = async (fileId) => {
    const mine = (asked.get(fileId) || 0) + 1;
    asked.set(fileId, mine);
    try {
      const fresh = await get(`/v1/files/${fileId}`);
      if (asked.get(fileId) !== mine) return;
      const row = rowOf(fileId);
      if (row) {
        const replaced = fileRow(fresh);
        replaced.dataset.toldBy = row.dataset.toldBy || "";
        row.replaceWith(replaced);
      }
    } catch (error) {
      // Gone, or no longer readable (moved to a collection the caller does not read): no row to show.
      if (error instanceof ApiError && error.status === 404) rowOf(fileId)?.remove();
    }
  };
  follow({
    // Caught up: the rows still processing are read once more (an end before now is not told); later ends are.
    onReady: () => {
      for (const row of body.querySelectorAll("tr[data-file-id]:not([data-done])")) reread(row.dataset.fileId);
    },
    onEvent: (event) => {
      const change = fileChangeOf(event);
      const row = change && rowOf(change.fileId);
      if (!row) return;
      if (change.kind === "deleted") {
        row.remove();
        return;
      }
      if (change.stage && change.versionId === row.dataset.versionId) {
        row.children[2].replaceWith(stageCell(change.stage));
        row.dataset.toldBy = "event";
        row.toggleAttribute("data-done", change.stage.done);
      }
      reread(change.fileId);
    },
  });
}

export async function renderFiles(container, params) {
  const readable = caller.me?.collections || [];
  const chosen = params.get("collection") || "";
  // The facet chips' filter lives in the address (`filter`, the API's JSON), so a reload or a shared link keeps it.
  const { conditions, problem } = conditionsFromParam(params.get("filter"));
  const filter = filterParam(conditions);
  const select = el(
    "select",
    { id: "files-collection" },
    el("option", { value: "" }, "every collection I read"),
    readable.map((name) => el("option", { value: name, selected: name === chosen }, name)),
  );
  // A button, not the select's change: choosing with the arrow keys must not navigate (WCAG 3.2.2).
  const show = () => {
    location.hash = `#/files${query({ collection: select.value, filter })}`;
  };
  const filterBy = (next) => {
    location.hash = `#/files${query({ collection: chosen, filter: filterParam(next) })}`;
  };
  const body = el("tbody");
  const more = el("div");
  const facetArea = el("div");
  fill(
    container,
    el("h2", {}, "Files"),
    el(
      "form",
      {
        class: "inline",
        onsubmit: (event) => {
          event.preventDefault();
          show();
        },
      },
      el("label", { for: "files-collection" }, "Collection "),
      select,
      " ",
      el("button", { type: "submit" }, "Show"),
      " ",
      el("button", { type: "button", onclick: () => renderFiles(container, params) }, "Refresh"),
    ),
    problem ? notice(`${problem}: every file is shown.`, "warning") : null,
    facetArea,
    el(
      "table",
      { class: "files", "aria-label": "Files" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["Name", "Collection", "State", "Pages", "OCR", "Versions", "Size", "Uploaded", "Metadata", ""].map((title) =>
            el("th", { scope: "col" }, title),
          ),
        ),
      ),
      body,
    ),
    more,
  );
  const load = async (cursor) => {
    const page = await get(`/v1/files${query({ collectionId: chosen, limit: 50, cursor, filter })}`);
    if (!page.files.length && !cursor)
      body.append(
        el("tr", {}, el("td", { colspan: 10 }, filter ? "No file matches the filter." : "No files yet: upload some.")),
      );
    for (const file of page.files) body.append(fileRow(file));
    fill(more, page.nextCursor ? moreButton("More files", () => load(page.nextCursor)) : null);
    return page;
  };
  let first;
  try {
    first = await load(null);
    followRows(body);
  } catch (error) {
    // A filter the API refuses (an edited address) is said with the API's sentence, and the way out offered.
    if (!(error instanceof ApiError && error.status === 400 && filter)) throw error;
    fill(facetArea, notice(error.message, "error"), el("p", {}, el("a", { href: "#/files" }, "Show every file")));
    return;
  }
  // Chips for the keys the listed files hold, counted over every file the filter keeps.
  const { keys, listKeys } = facetKeysOf(first.files, conditions);
  try {
    fill(facetArea, facetBar(await listFacets(chosen, conditions, keys), listKeys, conditions, filterBy));
  } catch (error) {
    showFacetProblem(facetArea, error);
  }
}

function versionsTable(file) {
  return el(
    "table",
    { class: "versions", "aria-label": "Versions" },
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ["Version", "File name", "State", "Pages", "OCR", "Malware scan", "Uploaded", ""].map((title) =>
          el("th", { scope: "col" }, title),
        ),
      ),
    ),
    el(
      "tbody",
      {},
      file.versions.map((version) =>
        el(
          "tr",
          {},
          el(
            "td",
            {},
            el("code", { title: version.versionId }, shortId(version.versionId)),
            version.versionId === file.current.versionId ? " (current)" : "",
          ),
          el("td", {}, version.filename),
          stateCell(version),
          el("td", {}, version.extraction?.pageCount ?? "—"),
          el("td", {}, ocrSummary(version.ocr)),
          el("td", {}, version.malwareScan),
          el("td", {}, formatTime(version.createdAt)),
          el(
            "td",
            {},
            stageOf(version).done && !stageOf(version).failed
              ? el("a", { href: `#/files/${file.fileId}?version=${version.versionId}` }, "Read")
              : null,
          ),
        ),
      ),
    ),
  );
}

async function reader(target, fileId, versionId) {
  let cursor = null;
  const document = el("div", { class: "reader", "data-testid": "reader" });
  const markdown = el("pre", { class: "markdown-source", hidden: true });
  const toggle = el("button", { type: "button", "aria-pressed": "false" }, "Show Markdown");
  toggle.addEventListener("click", () => {
    const showing = markdown.hidden;
    markdown.hidden = !showing;
    document.hidden = showing;
    toggle.setAttribute("aria-pressed", String(showing));
    toggle.textContent = showing ? "Show the document" : "Show Markdown";
  });
  const more = el("div");
  fill(target, el("p", {}, toggle), document, markdown, more);
  const load = async () => {
    try {
      const window = await get(`/v1/files/${fileId}/document${query({ versionId, cursor })}`);
      document.append(renderBlocks(window.blocks, { start: window.start }));
      markdown.append(window.markdown);
      if (window.lowConfidence)
        document.prepend(notice("OCR read parts of this document with low confidence: words may be wrong.", "warning"));
      cursor = window.nextCursor;
      fill(
        more,
        cursor
          ? el(
              "button",
              { type: "button", onclick: load },
              `Read on (${window.start + window.blocks.length} of ${window.totalBlocks} blocks)`,
            )
          : null,
      );
    } catch (error) {
      fill(
        more,
        notice(
          error instanceof ApiError && error.status === 409 ? `Nothing to read yet: ${error.message}` : error.message,
          "warning",
        ),
      );
    }
  };
  await load();
}

/** The note a version gets when the collection held its bytes already (`duplicateOf`): which file, a link to it. */
function sameBytesNote(version) {
  const same = version?.duplicateOf;
  if (!same) return null;
  return el(
    "p",
    { class: "notice notice-info", role: "status", "data-testid": "duplicate-of" },
    "The same bytes were already in this collection as ",
    el("a", { href: `#/files/${same.fileId}?version=${same.versionId}` }, same.filename),
    ". Both are kept; search shows each text once.",
  );
}

export async function renderFile(container, fileId, params) {
  const file = await get(`/v1/files/${fileId}`);
  const versionId = params.get("version") || null;
  const shown = file.versions.find((version) => version.versionId === versionId) || file.current;
  const readerArea = el("section", { "aria-label": "Reader" });
  const metadataArea = el("section", {
    class: "metadata",
    "aria-labelledby": "metadata-heading",
    "data-testid": "metadata",
  });
  const news = el("div", { "data-testid": "file-news" });
  const sameBytes = el("div", {}, sameBytesNote(shown));
  const versions = versionsTable(file);
  renderMetadataPanel(metadataArea, file);
  fill(
    container,
    el("h2", {}, file.filename),
    el(
      "p",
      {},
      el("a", { href: "#/files" }, "← Files"),
      ` · collection ${file.collectionId} · ${file.versions.length} version${file.versions.length === 1 ? "" : "s"}`,
    ),
    news,
    sameBytes,
    metadataArea,
    el("h3", {}, "Versions"),
    versions,
    el("h3", {}, `Document (version ${shortId(shown.versionId)})`),
    readerArea,
  );
  let readable = stageOf(shown).done;
  const showReader = async (version) => {
    const stage = stageOf(version);
    if (stage.failed) fill(readerArea, notice(stage.sentence, "error"));
    else await reader(readerArea, fileId, versionId);
  };
  followFile(fileId, {
    shownDone: () => readable,
    news,
    metadataArea,
    versions: () => container.querySelector("table.versions"),
    changed: async (fresh) => {
      const now = fresh.versions.find((version) => version.versionId === shown.versionId);
      fill(sameBytes, sameBytesNote(now)); // known once the bytes are read
      if (!readable && now && stageOf(now).done) {
        readable = true;
        await showReader(now);
      }
    },
  });
  await showReader(shown);
}

/** The file view kept current from the event stream: the versions' states, the reader once the shown version is
 * done, the metadata panel (unless it is being edited), and a deletion said. */
function followFile(fileId, { shownDone, news, metadataArea, versions, changed }) {
  const reread = async () => {
    try {
      const fresh = await get(`/v1/files/${fileId}`);
      const table = versionsTable(fresh);
      table.dataset.toldBy = "event";
      versions()?.replaceWith(table);
      await changed(fresh);
      return fresh;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        fill(news, notice("This file was deleted, or you may no longer read it.", "warning"));
      return null;
    }
  };
  follow({
    onReady: () => {
      if (!shownDone()) reread();
    },
    onEvent: async (event) => {
      const change = fileChangeOf(event);
      if (change?.fileId !== fileId) return;
      if (change.kind === "deleted") {
        fill(news, notice("This file was deleted: search no longer finds it.", "warning"));
        return;
      }
      if (change.kind === "metadata") {
        const editing = metadataArea.querySelector("[data-testid=metadata-editor]");
        if (editing || change.metadataRevision <= Number(metadataArea.dataset.revision)) return;
        const fresh = await reread();
        if (fresh && !metadataArea.querySelector("[data-testid=metadata-editor]"))
          renderMetadataPanel(
            metadataArea,
            fresh,
            notice(`The metadata changed: revision ${fresh.metadataRevision} is shown.`),
          );
        return;
      }
      await reread();
    },
  });
}
