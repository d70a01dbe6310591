// A citation, and the cited spot in its source: the page image with the cited box drawn over it (PDFs and
// images), the cited cells in the sheet's grid (spreadsheets), the cited blocks lit up in the reader (slides,
// documents, text), the recording played from the cited second to its end beside its transcript (audio, video).
// A citation is a stored snapshot: when its source is gone, its excerpt still shows.

import { ApiError, get, id, query } from "./api.js";
import { renderBlocks, cellRange } from "./blocks.js";
import { citationFromHref } from "./citations.js";
import { el, fill, notice, shortId } from "./dom.js";

const PAGE_TYPES = /^(application\/pdf|image\/)/;
const RECORDING_TYPES = /^(audio|video)\//;
const MAX_WINDOWS = 40; // how far the reader looks for the cited blocks (40 windows of at most 50 blocks)

/** A moment of a recording as people read it: mm:ss, or h:mm:ss past the first hour (whole seconds begun). */
export function moment(seconds) {
  const whole = Math.max(0, Math.floor(seconds));
  const [hours, minutes, rest] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const two = (value) => String(value).padStart(2, "0");
  return hours ? `${hours}:${two(minutes)}:${two(rest)}` : `${two(minutes)}:${two(rest)}`;
}

export const timeSpan = (start, end) => `${moment(start)}–${moment(end ?? start)}`;

const spoken = (value) => value !== null && value !== undefined;

export function citationPlace(citation) {
  const parts = [];
  if (spoken(citation.startSeconds))
    parts.push(
      `${timeSpan(citation.startSeconds, citation.endSeconds)}${citation.speaker ? ` ${citation.speaker}` : ""}`,
    );
  if (citation.page)
    parts.push(
      citation.pageEnd && citation.pageEnd !== citation.page
        ? `pages ${citation.page}–${citation.pageEnd}`
        : `page ${citation.page}`,
    );
  if (citation.sheet) parts.push(`sheet ${citation.sheet}${citation.cells ? ` ${citation.cells}` : ""}`);
  if (citation.slide) parts.push(`slide ${citation.slide}`);
  if (!citation.page && !citation.sheet && !citation.slide) {
    if (citation.paragraphStart !== null && citation.paragraphStart !== undefined) {
      parts.push(
        citation.paragraphEnd && citation.paragraphEnd !== citation.paragraphStart
          ? `paragraphs ${citation.paragraphStart}–${citation.paragraphEnd}`
          : `paragraph ${citation.paragraphStart}`,
      );
    } else if (citation.lineStart) {
      parts.push(
        citation.lineEnd && citation.lineEnd !== citation.lineStart
          ? `lines ${citation.lineStart}–${citation.lineEnd}`
          : `line ${citation.lineStart}`,
      );
    }
  }
  return parts.join(", ");
}

/** A citation chip: file, version, where, heading path, kind; a link to the cited spot. */
export function citationChip(citation, href, label = null) {
  const heading = (citation.headingPath || []).join(" › ");
  return el(
    "a",
    { class: `chip kind-${citation.kind || "quote"}`, href, "data-testid": "citation" },
    label ? el("span", { class: "chip-number" }, label) : null,
    el("span", { class: "chip-file" }, citation.filename),
    el("span", { class: "chip-meta" }, `v ${shortId(citation.versionId)}`),
    citationPlace(citation) ? el("span", { class: "chip-meta" }, citationPlace(citation)) : null,
    heading ? el("span", { class: "chip-meta" }, heading) : null,
    el("span", { class: "badge" }, citation.kind || "quote"),
  );
}

/** Does the citation's location include this block? The most specific field decides (as the API checks it). */
export function covers(citation, location = {}) {
  const within = (value, first, last) =>
    value !== null && value !== undefined && value >= first && value <= (last ?? first);
  if (spoken(citation.startSeconds))
    // A segment is cited when it is spoken within the cited span.
    return (
      spoken(location.startSeconds) &&
      location.startSeconds < (citation.endSeconds ?? citation.startSeconds) + 0.01 &&
      (location.endSeconds ?? location.startSeconds) > citation.startSeconds - 0.01
    );
  if (citation.page) return within(location.page, citation.page, citation.pageEnd);
  if (citation.sheet || citation.slide) {
    if ((location.sheet ?? null) !== (citation.sheet ?? null)) return false;
    if ((location.slide ?? null) !== (citation.slide ?? null)) return false;
    if (citation.sheet && citation.cells && location.cellRange) {
      const cited = cellRange(citation.cells);
      const block = cellRange(location.cellRange);
      if (cited && block)
        return (
          cited.left <= block.right &&
          cited.right >= block.left &&
          cited.top <= block.bottom &&
          cited.bottom >= block.top
        );
    }
    return true;
  }
  if (citation.tableIndex !== null && citation.tableIndex !== undefined)
    return location.tableIndex === citation.tableIndex;
  if (citation.paragraphStart !== null && citation.paragraphStart !== undefined)
    return within(location.paragraphIndex, citation.paragraphStart, citation.paragraphEnd);
  if (citation.lineStart) {
    const last = citation.lineEnd || citation.lineStart;
    return (
      location.lineStart !== undefined &&
      location.lineStart !== null &&
      location.lineStart <= last &&
      (location.lineEnd || location.lineStart) >= citation.lineStart
    );
  }
  return false;
}

const languageNames = new Intl.DisplayNames(["en"], { type: "language", fallback: "code" });

/** "German (de)": the language a citation's words are in, by name and ISO 639-1 code. */
export function languageName(code) {
  return `${languageNames.of(code)} (${code})`;
}

function facts(citation) {
  const rows = [
    ["File", citation.filename],
    ["Version", citation.versionId],
    ["Where", citationPlace(citation) || "the whole document"],
    ["Heading", (citation.headingPath || []).join(" › ") || "—"],
    ["Kind", citation.kind || "quote"],
  ];
  if (citation.ocrConfidence !== null && citation.ocrConfidence !== undefined)
    rows.push(["OCR confidence", `${Math.round(citation.ocrConfidence * 100)}%`]);
  if (spoken(citation.speechConfidence))
    rows.push(["Heard with confidence", `${Math.round(citation.speechConfidence * 100)}%`]);
  if (citation.language) rows.push(["Language", languageName(citation.language)]);
  return el(
    "dl",
    { class: "facts" },
    rows.map(([term, value]) => [el("dt", {}, term), el("dd", {}, value)]),
  );
}

function boxesOn(citation, page) {
  const boxes = (citation.regions || [])
    .filter((region) => region.page === page && region.box)
    .map((region) => region.box);
  if (boxes.length) return boxes;
  return citation.box && citation.page === page ? [citation.box] : [];
}

async function pageImage(citation, page, target) {
  const image = await get(
    `/v1/files/${id(citation.fileId)}/pages/${Number(page)}${query({ versionId: id(citation.versionId) })}`,
  );
  const picture = el("img", {
    src: image.blob ? URL.createObjectURL(image.blob) : image.url,
    alt: `Page ${page} of ${citation.filename}`,
    width: image.width,
    height: image.height,
    "data-testid": "page-image",
  });
  const frame = el("div", { class: "page-frame" }, picture);
  const boxes = boxesOn(citation, page);
  boxes.forEach((box, index) =>
    frame.append(
      el("div", {
        class: "highlight",
        "data-testid": "highlight",
        role: "img",
        "aria-label": `cited region ${index + 1} of ${boxes.length}`,
        dataset: { left: box.left, top: box.top, width: box.width, height: box.height },
        style: {
          left: `${box.left * 100}%`,
          top: `${box.top * 100}%`,
          width: `${box.width * 100}%`,
          height: `${box.height * 100}%`,
        },
      }),
    ),
  );
  const pages = image.pageCount || page;
  const first = citation.page;
  const last = citation.pageEnd || citation.page;
  const navigation = el(
    "div",
    { class: "page-nav" },
    el(
      "button",
      {
        type: "button",
        disabled: page <= 1,
        onclick: () =>
          pageImage(citation, page - 1, target).catch((error) => target.append(notice(error.message, "error"))),
      },
      "Previous page",
    ),
    el("span", { "aria-live": "polite" }, `Page ${page} of ${pages}${page >= first && page <= last ? " (cited)" : ""}`),
    el(
      "button",
      {
        type: "button",
        disabled: page >= pages,
        onclick: () =>
          pageImage(citation, page + 1, target).catch((error) => target.append(notice(error.message, "error"))),
      },
      "Next page",
    ),
  );
  fill(
    target,
    navigation,
    boxes.length
      ? null
      : notice(
          page >= first && page <= last ? "This citation names the page, not a box on it." : "This page is not cited.",
        ),
    frame,
  );
  await picture.decode().catch(() => {});
  frame.querySelector(".highlight")?.scrollIntoView({ block: "center" });
}

/** The recording, positioned at the cited second and stopping at the cited end, with its transcript beside it (the
 * cited segments lit; a segment clicked plays from its start). The signed read is the content route's, ≤ 15 min. */
async function recording(citation, target) {
  const read = await get(`/v1/files/${id(citation.fileId)}/content${query({ versionId: id(citation.versionId) })}`);
  const start = citation.startSeconds;
  const end = citation.endSeconds ?? start;
  const kind = citation.mediaType.startsWith("video/") ? "video" : "audio";
  const player = el(kind, {
    controls: true,
    preload: "auto",
    // The media fragment positions it and stops it at the cited end; the fragment never reaches storage.
    src: `${read.blob ? URL.createObjectURL(read.blob) : read.url}#t=${start},${end}`,
    "aria-label": `${citation.filename}, from ${moment(start)} to ${moment(end)}`,
    "data-testid": "player",
    dataset: { start, end },
  });
  let stopAt = end;
  player.addEventListener("timeupdate", () => {
    if (stopAt !== null && player.currentTime >= stopAt) {
      player.pause();
      stopAt = null;
    }
  });
  const segments = el("ol", { class: "transcript", "aria-label": "Transcript", "data-testid": "transcript" });
  fill(target, el("div", { class: "recording" }, player, segments));
  let cursor = null;
  for (let windows = 0; windows < MAX_WINDOWS; windows += 1) {
    const window = await get(
      `/v1/files/${id(citation.fileId)}/document${query({ versionId: id(citation.versionId), cursor })}`,
    );
    for (const block of window.blocks) {
      const where = block.location || {};
      if (!spoken(where.startSeconds)) continue;
      const cited = covers(citation, where);
      segments.append(
        el(
          "li",
          { class: cited ? "segment cited" : "segment", dataset: { start: where.startSeconds } },
          el(
            "button",
            {
              type: "button",
              class: "segment-time",
              onclick: () => {
                stopAt = null;
                player.currentTime = where.startSeconds;
                player.play().catch(() => {});
              },
            },
            timeSpan(where.startSeconds, where.endSeconds),
          ),
          where.speaker ? el("span", { class: "speaker" }, `${where.speaker}: `) : null,
          el("span", {}, block.text),
        ),
      );
    }
    if (!window.nextCursor) break;
    cursor = window.nextCursor;
  }
  segments.querySelector(".cited")?.scrollIntoView({ block: "center" });
}

async function citedBlocks(citation, target) {
  let cursor = null;
  for (let windows = 0; windows < MAX_WINDOWS; windows += 1) {
    const window = await get(
      `/v1/files/${id(citation.fileId)}/document${query({ versionId: id(citation.versionId), cursor })}`,
    );
    const cited = window.blocks.some((block) => covers(citation, block.location));
    if (cited || !window.nextCursor) {
      const rendered = renderBlocks(window.blocks, {
        start: window.start,
        isCited: (block) => covers(citation, block.location),
        cells: citation.cells,
      });
      fill(
        target,
        cited
          ? null
          : notice(
              "The cited blocks were not found in this version's document; the excerpt above is what was cited.",
              "warning",
            ),
        rendered,
      );
      rendered.querySelector(".cited")?.scrollIntoView({ block: "center" });
      return;
    }
    cursor = window.nextCursor;
  }
  fill(target, notice("The cited blocks are further into the document than the reader looks.", "warning"));
}

function gone(target, error) {
  const sentence =
    error.status === 404
      ? "The source is gone: this file or version was deleted, or you can no longer read it. The excerpt above is what was cited, as it was stored."
      : `The source could not be shown: ${error.message}. The excerpt above is what was cited.`;
  fill(
    target,
    el("p", { class: "notice notice-warning source-gone", role: "status", "data-testid": "source-gone" }, sentence),
  );
}

/** The cited-spot view of one citation, into `container`. */
export async function showCitation(container, citation, { backHref = null, heading = "Cited source" } = {}) {
  const source = el("div", { class: "source", "aria-busy": "true" }, notice("Loading the source…"));
  fill(
    container,
    el("h2", {}, heading),
    backHref ? el("p", {}, el("a", { href: backHref }, "← Back")) : null,
    facts(citation),
    el("h3", {}, "Excerpt"),
    el("blockquote", { class: "excerpt", "data-testid": "excerpt" }, citation.excerpt),
    el("h3", {}, "In the source"),
    source,
  );
  try {
    const file = await get(`/v1/files/${id(citation.fileId)}`);
    const version = (file.versions || []).find((candidate) => candidate.versionId === citation.versionId);
    if (!version || ["deleting", "deleted"].includes(version.state)) {
      gone(source, new ApiError(404, { message: "that version was deleted" }));
      return;
    }
    if (citation.page && PAGE_TYPES.test(citation.mediaType)) await pageImage(citation, citation.page, source);
    else if (spoken(citation.startSeconds) && RECORDING_TYPES.test(citation.mediaType))
      await recording(citation, source);
    else await citedBlocks(citation, source);
  } catch (error) {
    if (error instanceof ApiError) gone(source, error);
    else fill(source, notice(error.message, "error"));
  } finally {
    source.removeAttribute("aria-busy");
  }
}

/** #/cite/{id}: the cited spot of a search hit's citation, the snapshot this tab kept under that id. */
export async function renderKeptCitation(container, keptId) {
  const citation = citationFromHref(keptId);
  if (citation) await showCitation(container, citation, { backHref: "#/search" });
  else
    fill(
      container,
      el("h2", {}, "Citation"),
      notice(
        "This citation's address works in the tab whose search found it: search again to open it here.",
        "warning",
      ),
    );
}
