// Artifacts: the caller's artifacts, one read window by window with its numbered citations, its history
// (each version's provenance), and exports of any version to PDF, DOCX, HTML or Markdown, downloaded by their
// signed link.

import { get, post, query } from "./api.js";
import { renderBlocks } from "./blocks.js";
import { el, fill, formatBytes, formatTime, moreButton, notice } from "./dom.js";
import { citationHref } from "./citations.js";
import { citationChip } from "./source.js";

const FORMATS = [
  ["pdf", "PDF"],
  ["docx", "DOCX"],
  ["html", "HTML"],
  ["md", "Markdown"],
];
const POLL_MILLISECONDS = 500;
const MAX_POLLS = 600;

function artifactRow(artifact) {
  return el(
    "tr",
    {},
    el("td", {}, el("a", { href: `#/artifacts/${artifact.artifactId}` }, artifact.name)),
    el("td", {}, artifact.collectionId),
    el("td", {}, `v${artifact.latestVersion}`),
    el("td", {}, formatTime(artifact.updatedAt)),
  );
}

export async function renderArtifacts(container) {
  const body = el("tbody");
  const more = el("div");
  const load = async (cursor) => {
    const page = await get(`/v1/artifacts${query({ cursor })}`);
    if (!page.artifacts.length && !cursor)
      body.append(
        el("tr", {}, el("td", { colspan: 4 }, "No artifacts yet: ask a question and open its answer as an artifact.")),
      );
    body.append(...page.artifacts.map(artifactRow));
    fill(more, page.nextCursor ? moreButton("More artifacts", () => load(page.nextCursor)) : null);
  };
  fill(
    container,
    el("h2", {}, "Artifacts"),
    el(
      "table",
      { "aria-label": "Artifacts" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["Name", "Collection", "Latest version", "Updated"].map((title) => el("th", { scope: "col" }, title)),
        ),
      ),
      body,
    ),
    more,
  );
  await load(null);
}

const sleep = (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds));

async function exportVersion(artifactId, version, format, target) {
  fill(target, notice(`Rendering ${format}…`));
  let exported = await post(`/v1/artifacts/${artifactId}/versions/${version}/exports`, { format });
  for (let polls = 0; exported.state === "pending" && polls < MAX_POLLS; polls += 1) {
    await sleep(POLL_MILLISECONDS);
    exported = await get(`/v1/exports/${exported.exportId}`);
  }
  if (exported.state !== "rendered" || !exported.url) {
    fill(target, notice(exported.failure || `the ${format} export is not ready yet: try again in a moment`, "error"));
    return;
  }
  const details = [
    formatBytes(exported.byteSize),
    exported.pageCount ? `${exported.pageCount} page${exported.pageCount === 1 ? "" : "s"}` : null,
  ]
    .filter(Boolean)
    .join(", ");
  fill(
    target,
    el(
      "a",
      { href: exported.url, class: "button", download: "", "data-testid": `download-${format}`, rel: "noopener" },
      `Download ${format.toUpperCase()} (${details})`,
    ),
    exported.unsupportedCharacters?.length
      ? notice(
          `Characters the ${format} fonts cannot draw were replaced: ${exported.unsupportedCharacters.join(" ")}`,
          "warning",
        )
      : null,
    el("span", { class: "hint" }, ` link valid until ${formatTime(exported.expiresAt)}`),
  );
}

function historyRows(artifactId, versions, shown) {
  return versions.map((version) =>
    el(
      "tr",
      { "aria-current": version.version === shown ? "true" : null },
      el("td", {}, el("a", { href: `#/artifacts/${artifactId}?version=${version.version}` }, `v${version.version}`)),
      el("td", {}, version.createdBy),
      el(
        "td",
        {},
        `${version.provenance.producer}${version.provenance.restoredFrom ? ` (restored v${version.provenance.restoredFrom})` : ""}`,
      ),
      el("td", {}, String(version.provenance.sources.length)),
      el("td", {}, String(version.blockCount)),
      el("td", {}, formatTime(version.createdAt)),
    ),
  );
}

function history(artifactId, first, shown) {
  const body = el("tbody", {}, historyRows(artifactId, first.versions, shown));
  const more = el("div");
  const offer = (cursor) =>
    fill(
      more,
      cursor
        ? moreButton("Older versions", async () => {
            const page = await get(`/v1/artifacts/${artifactId}/versions${query({ cursor })}`);
            body.append(...historyRows(artifactId, page.versions, shown));
            offer(page.nextCursor);
          })
        : null,
    );
  offer(first.nextCursor);
  return el(
    "div",
    {},
    el(
      "table",
      { class: "history", "aria-label": "History" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["Version", "Made by", "How", "Sources", "Blocks", "When"].map((title) => el("th", { scope: "col" }, title)),
        ),
      ),
      body,
    ),
    more,
  );
}

export async function renderArtifact(container, artifactId, params) {
  const wanted = params.get("version");
  const artifact = await get(`/v1/artifacts/${artifactId}${query({ version: wanted })}`);
  const versions = await get(`/v1/artifacts/${artifactId}/versions`);
  const version = artifact.version.version;
  const exportArea = el("div", { class: "export-result", "aria-live": "polite" });
  const body = el("div", { class: "reader" });
  const citations = el("ol", { class: "citations" });
  const more = el("div");
  fill(
    container,
    el("h2", {}, artifact.name),
    el(
      "p",
      {},
      el("a", { href: "#/artifacts" }, "← Artifacts"),
      ` · collection ${artifact.collectionId} · version ${version} of ${artifact.latestVersion}`,
    ),
    el("h3", {}, "Export this version"),
    el(
      "div",
      { class: "exports", role: "group", "aria-label": "Export formats" },
      FORMATS.map(([format, label]) =>
        el(
          "button",
          {
            type: "button",
            "data-format": format,
            onclick: () =>
              exportVersion(artifactId, version, format, exportArea).catch((error) =>
                fill(exportArea, notice(error.message, "error")),
              ),
          },
          `Export ${label}`,
        ),
      ),
    ),
    exportArea,
    el("h3", {}, "Content"),
    body,
    more,
    el("h3", {}, "Citations"),
    citations,
    el("h3", {}, "History"),
    history(artifactId, versions, version),
  );
  const show = (window) => {
    body.append(renderBlocks(window.blocks, { start: window.start }));
    for (const cited of window.citations) {
      if (citations.querySelector(`[value="${cited.number}"]`)) continue;
      citations.append(
        el(
          "li",
          { value: cited.number },
          citationChip(cited.citation, citationHref(cited.citation), `[${cited.number}]`),
        ),
      );
    }
    fill(
      more,
      window.nextCursor
        ? moreButton("Read on", async () =>
            show((await get(`/v1/artifacts/${artifactId}${query({ version, cursor: window.nextCursor })}`)).content),
          )
        : null,
    );
  };
  show(artifact.content);
}
