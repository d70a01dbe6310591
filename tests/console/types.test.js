// mediaTypeOf: the media type an upload is declared with, from the API's accepted types (GET /v1/meta).
import assert from "node:assert/strict";
import { test } from "node:test";

import { mediaTypeOf } from "../../console/types.js";

// As GET /v1/meta lists them (a part of shared/domain/uploads.py's ACCEPTED_TYPES).
const ACCEPTED = [
  { mediaType: "application/pdf", extensions: [".pdf"], kind: "pdf" },
  { mediaType: "text/plain", extensions: [".txt", ".text", ".log"], kind: "text" },
  { mediaType: "text/markdown", extensions: [".md", ".markdown"], kind: "markdown" },
];

test("an untyped .markdown file is declared text/markdown, the bug of the hand-copied list", () => {
  assert.equal(mediaTypeOf({ name: "notes.markdown", type: "" }, ACCEPTED), "text/markdown");
  assert.equal(mediaTypeOf({ name: "NOTES.MARKDOWN", type: "" }, ACCEPTED), "text/markdown");
  assert.equal(mediaTypeOf({ name: "server.log", type: "" }, ACCEPTED), "text/plain");
});

test("the browser's own type wins over the extension (the API checks both against the bytes)", () => {
  assert.equal(mediaTypeOf({ name: "report.pdf", type: "application/pdf" }, ACCEPTED), "application/pdf");
  assert.equal(mediaTypeOf({ name: "report.md", type: "text/x-markdown" }, ACCEPTED), "text/x-markdown");
});

test("an extension the API does not list, or none, is octet-stream (the API refuses it, naming the list)", () => {
  assert.equal(mediaTypeOf({ name: "photo.webp", type: "" }, ACCEPTED), "application/octet-stream");
  assert.equal(mediaTypeOf({ name: "README", type: "" }, ACCEPTED), "application/octet-stream");
  assert.equal(mediaTypeOf({ name: "notes.", type: "" }, ACCEPTED), "application/octet-stream");
  assert.equal(mediaTypeOf({ name: "notes.md", type: "" }), "application/octet-stream"); // before GET /v1/meta answered
});
