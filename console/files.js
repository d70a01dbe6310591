// Files: the caller's files with state, pages, OCR flags; a file's versions; delete for an admin of its
// collection; and the reader (the extracted document, window by window).

import { ApiError, del, get, query } from "./api.js";
import { renderBlocks } from "./blocks.js";
import { el, fill, formatBytes, formatTime, moreButton, notice, shortId } from "./dom.js";
import { compactMetadata, facetBar, listFacets, showFacetProblem } from "./facets.js";
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
  const stage = stageOf(version);
  return el(
    "td",
    { class: stage.failed ? "failed" : null },
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
    for (const file of page.files) {
      const version = file.current || {};
      const row = el(
        "tr",
        { "data-file-id": file.fileId },
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
      body.append(row);
    }
    fill(more, page.nextCursor ? moreButton("More files", () => load(page.nextCursor)) : null);
    return page;
  };
  let first;
  try {
    first = await load(null);
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
    metadataArea,
    el("h3", {}, "Versions"),
    versionsTable(file),
    el("h3", {}, `Document (version ${shortId(shown.versionId)})`),
    readerArea,
  );
  const stage = stageOf(shown);
  if (stage.failed) fill(readerArea, notice(stage.sentence, "error"));
  else await reader(readerArea, fileId, versionId);
}
