// citationPlace and covers: where a citation points, in words, and which blocks it lights up.
import assert from "node:assert/strict";
import { test } from "node:test";

import { citationPlace, covers, moment, timeSpan } from "../../console/source.js";

test("citationPlace names pages, sheets and cells, slides, paragraphs or lines", () => {
  assert.equal(citationPlace({ page: 2 }), "page 2");
  assert.equal(citationPlace({ page: 2, pageEnd: 4 }), "pages 2–4");
  assert.equal(citationPlace({ page: 3, pageEnd: 3 }), "page 3");
  assert.equal(citationPlace({ sheet: "Pantry", cells: "A1:C7" }), "sheet Pantry A1:C7");
  assert.equal(citationPlace({ slide: 5 }), "slide 5");
  assert.equal(citationPlace({ paragraphStart: 0 }), "paragraph 0");
  assert.equal(citationPlace({ paragraphStart: 3, paragraphEnd: 6 }), "paragraphs 3–6");
  assert.equal(citationPlace({ lineStart: 4, lineEnd: 9 }), "lines 4–9");
  assert.equal(citationPlace({ page: 1, lineStart: 4 }), "page 1"); // a page says it all
  assert.equal(citationPlace({}), "");
});

test("covers: a page citation covers the blocks on its pages", () => {
  const citation = { page: 2, pageEnd: 3 };
  assert.equal(covers(citation, { page: 2 }), true);
  assert.equal(covers(citation, { page: 3 }), true);
  assert.equal(covers(citation, { page: 4 }), false);
  assert.equal(covers(citation, {}), false);
});

test("covers: a sheet citation covers the blocks whose cells meet its range, in its sheet only", () => {
  const citation = { sheet: "Pantry", cells: "C7" };
  assert.equal(covers(citation, { sheet: "Pantry", cellRange: "A2:C11" }), true);
  assert.equal(covers(citation, { sheet: "Pantry", cellRange: "A12:C20" }), false);
  assert.equal(covers(citation, { sheet: "Other", cellRange: "A2:C11" }), false);
  assert.equal(covers({ slide: 2 }, { slide: 2 }), true);
  assert.equal(covers({ slide: 2 }, { slide: 3 }), false);
});

test("covers: tables, paragraphs and lines, by the most specific field", () => {
  assert.equal(covers({ tableIndex: 1 }, { tableIndex: 1 }), true);
  assert.equal(covers({ tableIndex: 1 }, { tableIndex: 2 }), false);
  assert.equal(covers({ paragraphStart: 0, paragraphEnd: 2 }, { paragraphIndex: 2 }), true);
  assert.equal(covers({ paragraphStart: 0, paragraphEnd: 2 }, { paragraphIndex: 3 }), false);
  assert.equal(covers({ lineStart: 3, lineEnd: 5 }, { lineStart: 5, lineEnd: 8 }), true);
  assert.equal(covers({ lineStart: 3, lineEnd: 5 }, { lineStart: 6, lineEnd: 8 }), false);
  assert.equal(covers({}, { page: 1 }), false);
});

test("a recording's moment is minutes and seconds, then hours", () => {
  assert.equal(moment(0), "00:00");
  assert.equal(moment(59.99), "00:59");
  assert.equal(moment(3725.9), "1:02:05");
  assert.equal(timeSpan(6.45, 10.25), "00:06–00:10");
  assert.equal(citationPlace({ startSeconds: 6.45, endSeconds: 10.25, speaker: "spk_1" }), "00:06–00:10 spk_1");
});

test("a segment is cited when it is spoken within the cited span, and only then", () => {
  const cited = { startSeconds: 6.45, endSeconds: 10.25 };
  assert.equal(covers(cited, { startSeconds: 6.45, endSeconds: 10.25 }), true);
  assert.equal(covers(cited, { startSeconds: 9.0, endSeconds: 12.0 }), true);
  assert.equal(covers(cited, { startSeconds: 10.3, endSeconds: 12.0 }), false);
  assert.equal(covers(cited, { startSeconds: 1.0, endSeconds: 6.4 }), false);
  assert.equal(covers(cited, { page: 1 }), false);
});
