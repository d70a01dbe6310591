// stageOf: how a version's processing state reads in the console.
import assert from "node:assert/strict";
import { test } from "node:test";

import { stageOf } from "../../console/state.js";

test("a version being processed is not done, in the console's words", () => {
  assert.deepEqual(stageOf({ state: "stored", processingState: "recognizing" }), {
    label: "OCR",
    done: false,
    failed: false,
    sentence: "",
  });
  assert.equal(stageOf({ state: "stored", processingState: "extracted" }).label, "indexing");
  assert.equal(stageOf({ state: "pending" }).label, "waiting for its upload");
});

test("indexed and skipped are done; a state the console does not know shows as it is", () => {
  assert.deepEqual(stageOf({ state: "stored", processingState: "indexed" }), {
    label: "indexed",
    done: true,
    failed: false,
    sentence: "",
  });
  assert.equal(stageOf({ state: "stored", processingState: "skipped" }).done, true);
  assert.equal(stageOf({ state: "stored", processingState: "someday" }).label, "someday");
});

test("a failure, a rejection and an interruption carry the API's sentence", () => {
  const failed = stageOf({ state: "stored", processingState: "failed", failure: { message: "the PDF is encrypted" } });
  assert.deepEqual(failed, { label: "failed", done: true, failed: true, sentence: "the PDF is encrypted" });
  assert.equal(stageOf({ state: "stored", processingState: "failed" }).sentence, "processing failed");
  const rejected = stageOf({ state: "rejected", rejectionReason: "malware found" });
  assert.deepEqual(rejected, { label: "rejected", done: true, failed: true, sentence: "malware found" });
  const interrupted = stageOf({ state: "stored", processingState: "interrupted", interruption: "retried soon" });
  assert.deepEqual(interrupted, {
    label: "interrupted (will be retried)",
    done: false,
    failed: false,
    sentence: "retried soon",
  });
});

test("a deleted version is done without failing; no version is unknown", () => {
  assert.deepEqual(stageOf({ state: "deleted" }), { label: "deleted", done: true, failed: false, sentence: "" });
  assert.equal(stageOf(null).label, "unknown");
});
