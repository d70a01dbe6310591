// What the console knows about the caller (GET /v1/me) and the API (GET /v1/meta: the accepted upload types),
// and how a version's processing state reads.

import { get } from "./api.js";

export const caller = { me: null };
// The API's own vocabularies, fetched with the caller (never copied here: a copy drifts).
export const server = { acceptedTypes: [] };

export async function loadCaller() {
  const [me, meta] = await Promise.all([get("/v1/me"), get("/v1/meta")]);
  server.acceptedTypes = meta.acceptedTypes;
  caller.me = me;
  return caller.me;
}

const RANK = { read: 1, write: 2, admin: 3 };

export function mayIn(collection, role) {
  const held = caller.me?.roles?.[collection];
  return Boolean(held) && RANK[held] >= RANK[role];
}

export function collectionsWith(role) {
  return (caller.me?.collections || []).filter((collection) => mayIn(collection, role));
}

// queued → extracting → OCR → indexed, in the words of the console.
const STAGES = {
  not_started: "waiting for its upload",
  queued: "queued",
  extracting: "extracting",
  recognizing: "OCR",
  extracted: "indexing",
  indexing: "indexing",
  indexed: "indexed",
  failed: "failed",
  interrupted: "interrupted (will be retried)",
  skipped: "ready (rendered by Quire)",
};

/** {label, done, failed, sentence} for a version as GET /v1/files/{id} shows it. */
export function stageOf(version) {
  if (!version) return { label: "unknown", done: false, failed: false, sentence: "" };
  if (version.state === "rejected")
    return {
      label: "rejected",
      done: true,
      failed: true,
      sentence: version.rejectionReason || "the upload was rejected",
    };
  if (version.state === "deleting" || version.state === "deleted")
    return { label: version.state, done: true, failed: false, sentence: "" };
  if (version.state === "pending") return { label: "waiting for its upload", done: false, failed: false, sentence: "" };
  const processing = version.processingState;
  if (processing === "failed") {
    const failure = version.failure || {};
    return { label: "failed", done: true, failed: true, sentence: failure.message || "processing failed" };
  }
  return {
    label: STAGES[processing] || processing,
    done: processing === "indexed" || processing === "skipped",
    failed: false,
    sentence: processing === "interrupted" ? version.interruption || "" : "",
  };
}
