// Extracted blocks (GET /v1/files/{id}/document, artifacts) as the page they would render to as Markdown:
// headings, paragraphs, lists, tables, code, quotes. Built from the located blocks rather than by parsing the
// Markdown, so that each element knows where it came from (a citation can light it up) and no text is ever
// parsed as HTML.

import { el } from "./dom.js";

/** "B12" → {column: 1, row: 11} (both from 0); null for anything else. */
export function cellAddress(text) {
  const match = /^([A-Z]{1,3})([0-9]{1,7})$/.exec(
    String(text || "")
      .trim()
      .toUpperCase(),
  );
  if (!match) return null;
  let column = 0;
  for (const letter of match[1]) column = column * 26 + (letter.charCodeAt(0) - 64);
  return { column: column - 1, row: Number(match[2]) - 1 };
}

/** "A1:C4" (or one cell) → the rectangle it covers, from 0; null when it is not a cell range. */
export function cellRange(text) {
  const [first, last = first] = String(text || "").split(":");
  const start = cellAddress(first);
  const end = cellAddress(last);
  if (!start || !end) return null;
  return {
    top: Math.min(start.row, end.row),
    bottom: Math.max(start.row, end.row),
    left: Math.min(start.column, end.column),
    right: Math.max(start.column, end.column),
  };
}

export function columnName(index) {
  let name = "";
  for (let value = index + 1; value > 0; value = Math.floor((value - 1) / 26)) {
    name = String.fromCharCode(65 + ((value - 1) % 26)) + name;
  }
  return name;
}

function table(block, highlightCells) {
  const rows = block.table?.rows || [];
  const headerRows = block.table?.headerRows || 0;
  const range = cellRange(block.location?.cellRange);
  // A sheet block's cell range spans its data rows (its header row is repeated above them). Blank rows are
  // left out of a block, so the addresses are known only when its rows fill the range: otherwise the grid
  // shows no addresses, and a citation lights up the whole block.
  const origin = range && range.bottom - range.top + 1 === rows.length - headerRows ? range : null;
  const cited = highlightCells && origin ? cellRange(highlightCells) : null;
  const grid = el("table", { class: origin ? "grid" : null });
  if (origin) {
    // A sheet's grid: column letters and row numbers, as the spreadsheet shows them.
    const width = Math.max(0, ...rows.map((row) => row.length));
    grid.append(
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          el("th", { scope: "col" }, ""),
          ...Array.from({ length: width }, (_, i) => el("th", { scope: "col" }, columnName(origin.left + i))),
        ),
      ),
    );
  }
  const body = el("tbody");
  rows.forEach((row, rowIndex) => {
    const header = rowIndex < headerRows;
    const line = el("tr", { class: header ? "header-row" : null });
    if (origin) line.append(el("th", { scope: "row" }, header ? "" : String(origin.top + rowIndex - headerRows + 1)));
    row.forEach((cell, columnIndex) => {
      const node = el(header ? "th" : "td", header ? { scope: "col" } : {}, cell);
      if (origin && !header) {
        const address = { row: origin.top + rowIndex - headerRows, column: origin.left + columnIndex };
        node.dataset.cell = `${columnName(address.column)}${address.row + 1}`;
        if (
          cited &&
          address.row >= cited.top &&
          address.row <= cited.bottom &&
          address.column >= cited.left &&
          address.column <= cited.right
        ) {
          node.classList.add("cited");
        }
      }
      line.append(node);
    });
    body.append(line);
  });
  grid.append(body);
  return el("div", { class: "table-wrap" }, grid);
}

function element(block, highlightCells) {
  switch (block.kind) {
    case "heading":
      // The page has its own h1 and the view its h2: a document heading of level n is shown one step below.
      return el(`h${Math.min(Math.max(block.level || 1, 1) + 2, 6)}`, { class: "doc-heading" }, block.text);
    case "list_item":
      return el(
        "li",
        { style: { marginInlineStart: `${(block.depth || 0) * 1.5}em` }, class: block.ordered ? "ordered" : null },
        block.text,
      );
    case "table":
      return table(block, highlightCells);
    case "code":
      return el("pre", {}, el("code", {}, block.text));
    case "quote":
      return el("blockquote", {}, block.text);
    case "image":
      return el("p", { class: "doc-image" }, `[image${block.text ? `: ${block.text}` : ""}]`);
    case "description":
      return el("p", { class: "doc-description" }, el("span", { class: "badge" }, "description"), " ", block.text);
    case "page_break":
      return el("hr", { "aria-label": block.location?.page ? `page ${block.location.page}` : "break" });
    default:
      return el("p", {}, block.text);
  }
}

/** Where a block is, in words: "page 2", "Sheet1 A1:D9", "slide 3", "paragraph 14", "lines 3–9". */
export function placeOf(location = {}) {
  const parts = [];
  if (location.page) parts.push(`page ${location.page}`);
  if (location.sheet) parts.push(`${location.sheet}${location.cellRange ? ` ${location.cellRange}` : ""}`);
  if (location.slide) parts.push(`slide ${location.slide}`);
  if (location.paragraphIndex !== undefined && location.paragraphIndex !== null)
    parts.push(`paragraph ${location.paragraphIndex}`);
  if (location.lineStart)
    parts.push(
      location.lineEnd && location.lineEnd !== location.lineStart
        ? `lines ${location.lineStart}–${location.lineEnd}`
        : `line ${location.lineStart}`,
    );
  return parts.join(", ");
}

/**
 * The blocks as a document. `isCited(block)` marks the blocks a citation covers (class "cited", and
 * aria-current so a screen reader says so); `cells` is the cited cell range of a spreadsheet citation.
 */
export function renderBlocks(blocks, { start = 0, isCited = () => false, cells = null } = {}) {
  const container = el("div", { class: "document" });
  let list = null;
  blocks.forEach((block, offset) => {
    const cited = isCited(block);
    const node = element(block, cited ? cells : null);
    node.dataset.block = String(start + offset);
    const place = placeOf(block.location);
    if (place) node.title = place;
    if (block.confidence !== undefined && block.confidence !== null && block.confidence < 0.8) {
      node.classList.add("low-confidence");
      node.title = `${place ? `${place}; ` : ""}OCR confidence ${Math.round(block.confidence * 100)}%`;
    }
    if (cited) {
      node.classList.add("cited");
      node.setAttribute("aria-current", "true");
    }
    if (block.kind === "list_item") {
      const tag = block.ordered ? "ol" : "ul";
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = el(tag);
        container.append(list);
      }
      list.append(node);
    } else {
      list = null;
      container.append(node);
    }
  });
  return container;
}
