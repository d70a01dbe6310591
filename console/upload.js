// Upload: drag and drop or the picker, several files at once. Each file gets its ticket (POST /v1/uploads),
// goes straight to the object store by the presigned POST with a real byte progress bar, or, when the ticket is an
// upload session (a file past the single POST, or from config.json's `uploads.byPartsFrom`), by parts (parts.js),
// resumable after a reload: the session is noted in localStorage and the same file chosen again sends only the parts
// the store lacks (resume.js). Then it shows its processing state live (queued → extracting → OCR → indexed, or the
// failure sentence) until it ends: the end arrives from the event stream (live.js) the moment it is published; the
// stages between, which no event tells, are read again every few seconds. Without the stream (GET /v1/events not
// answering) it is read every second.

import { ApiError, abortUploads, get, id, post, postToStore } from "./api.js";
import { el, fill, formatBytes, notice } from "./dom.js";
import { fileChangeOf } from "./events.js";
import { follow, streaming } from "./live.js";
import { sendParts } from "./parts.js";
import { ResumeNotes, noteKey, partsRequest, partsToSend } from "./resume.js";
import { caller, collectionsWith, server, stageOf } from "./state.js";
import { mediaTypeOf } from "./types.js";

const notes = () => new ResumeNotes(localStorage);

const POLL_MILLISECONDS = 1000;
// With the event stream the end arrives as an event; this only refreshes the stage shown on the way.
const STAGE_REFRESH_MILLISECONDS = 5000;
const WATCH_MILLISECONDS = 15 * 60 * 1000; // then the Files view goes on showing the state
// Presigned POSTs at once; the rest wait their turn (a folder of 500 files must not open 500 connections).
const MAX_CONCURRENT_UPLOADS = 3;
let running = 0;
const waiting = [];

async function inTurn(work) {
  if (running >= MAX_CONCURRENT_UPLOADS) await new Promise((resolve) => waiting.push(resolve));
  running += 1;
  try {
    return await work();
  } finally {
    running -= 1;
    waiting.shift()?.();
  }
}

// The uploads of this tab: kept when the person looks at another view meanwhile, shown again on return.
// Made on first use, so that the module loads without a DOM (node's unit tests import the route table).
let uploads = null;
const uploadList = () => (uploads ??= el("ul", { class: "uploads", "aria-label": "Uploads" }));
// Raised when the caller signs out: what the last caller started stops, and their files leave the page.
let epoch = 0;

export function forgetUploads() {
  epoch += 1;
  abortUploads();
  uploads?.replaceChildren();
}

class SignedOut extends Error {}

/** The row's state, and the states it went through (data-history), as the person watching saw them. */
function showState(row, label) {
  if (row.state.textContent === label) return;
  row.state.textContent = label;
  row.item.dataset.state = label;
  row.item.dataset.history = row.item.dataset.history ? `${row.item.dataset.history} > ${label}` : label;
}

/** Watch a file until its processing ends: by its events while the stream answers, else by polling. The row says
 * which told it the end (data-told-by: "event" or "poll"). */
async function watch(fileId, row, started) {
  let finished = false;
  let wake = () => {};
  const show = (stage, toldBy) => {
    if (finished) return;
    showState(row, stage.label);
    if (stage.sentence) fill(row.sentence, stage.sentence);
    if (!stage.done) return;
    finished = true;
    row.item.dataset.toldBy = toldBy;
    row.item.classList.add(stage.failed ? "failed" : "done");
    if (!stage.failed && stage.label !== "deleted")
      fill(row.sentence, el("a", { href: `#/files/${fileId}` }, "Open in the reader"));
    wake();
  };
  const unsubscribe = follow(
    {
      onEvent: (event) => {
        const change = fileChangeOf(event);
        if (change?.fileId !== fileId) return;
        if (change.stage) show(change.stage, "event");
      },
      // Caught up: read it once more, as what happened before is not told; from here on, each end is.
      onReady: () => wake(),
      onUnavailable: () => wake(), // poll at once, then every second
    },
    { view: false },
  );
  try {
    const deadline = Date.now() + WATCH_MILLISECONDS;
    while (!finished && started === epoch && Date.now() < deadline) {
      const file = await get(`/v1/files/${fileId}`);
      if (started !== epoch) return;
      show(stageOf(file.current), "poll");
      if (finished) return;
      await new Promise((resolve) => {
        wake = resolve;
        setTimeout(resolve, streaming() ? STAGE_REFRESH_MILLISECONDS : POLL_MILLISECONDS);
      });
    }
  } finally {
    unsubscribe();
  }
}

/** An earlier session of this file, noted before a reload: still open (its parts to send), or gone, said in the row. */
async function earlierSession(key, file, row) {
  const note = notes().find(key);
  if (!note) return null;
  let session = null;
  try {
    session = await get(`/v1/uploads/${id(note.uploadId)}`);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
  }
  if (session?.state === "open" || session?.state === "completed") return session;
  notes().forget(key);
  const how = session ? `was ${session.state}` : "is no longer known";
  fill(row.note, `The earlier upload of ${file.name} ${how}: it starts again from the first byte.`);
  row.item.dataset.restarted = session ? session.state : "unknown";
  return null;
}

async function send(file, collectionId, row) {
  const started = epoch;
  try {
    showState(row, "waiting for its turn");
    let events = 0;
    const shown = (loaded, total) => {
      row.progress.max = total;
      row.progress.value = loaded;
      row.progress.setAttribute("aria-valuetext", `${formatBytes(loaded)} of ${formatBytes(total)}`);
      row.bytes.textContent = `${formatBytes(loaded)} of ${formatBytes(total)}`;
    };
    const counted = (loaded, total) => {
      events += 1;
      row.progress.dataset.events = String(events); // how many progress events the browser reported
      shown(loaded, total);
    };
    const key = noteKey(caller.me, collectionId, file);
    // The ticket is asked for in its turn too: a presigned POST lives 15 minutes.
    const fileId = await inTurn(async () => {
      if (started !== epoch) throw new SignedOut();
      showState(row, "asking for an upload");
      const earlier = await earlierSession(key, file, row);
      if (earlier?.state === "completed") {
        notes().forget(key);
        return earlier.fileId;
      }
      if (earlier) {
        const { kept, send: missing } = partsToSend(earlier);
        row.item.dataset.fileId = earlier.fileId;
        row.item.dataset.uploadId = earlier.uploadId;
        row.item.dataset.resumedParts = String(kept.size);
        fill(row.note, `Resumed: ${kept.size} of ${earlier.partCount} parts were already uploaded.`);
        showState(row, "uploading by parts");
        await sendParts(earlier, file, { kept, send: missing, onProgress: counted });
        notes().forget(key);
        return earlier.fileId;
      }
      const issued = await post("/v1/uploads", {
        collectionId,
        filename: file.name,
        mediaType: mediaTypeOf(file, server.acceptedTypes),
        byteSize: file.size,
        ...partsRequest(file.size),
      });
      row.item.dataset.fileId = issued.fileId;
      if (issued.uploadId) {
        // Noted first, so that a reload from here on resumes it: the same file chosen again.
        notes().remember(key, {
          uploadId: issued.uploadId,
          fileId: issued.fileId,
          name: file.name,
          size: file.size,
          lastModified: file.lastModified,
          collectionId,
        });
        row.item.dataset.uploadId = issued.uploadId;
        showState(row, "uploading by parts");
        const session = { ...issued, byteSize: file.size, parts: [] };
        const all = Array.from({ length: issued.partCount }, (_, i) => i + 1);
        await sendParts(session, file, { kept: new Map(), send: all, onProgress: counted });
        notes().forget(key);
      } else {
        showState(row, "uploading");
        await postToStore(issued.upload, file, counted);
      }
      return issued.fileId;
    });
    shown(file.size, file.size);
    showState(row, "uploaded");
    await watch(fileId, row, started);
  } catch (error) {
    if (error instanceof SignedOut || started !== epoch) return;
    row.item.classList.add("failed");
    showState(row, "failed");
    const resumable = row.item.dataset.uploadId && notes().find(noteKey(caller.me, collectionId, file));
    fill(row.sentence, resumable ? `${error.message}. Choose the same file again to resume.` : error.message);
  }
}

function rowFor(file) {
  const progress = el("progress", { max: Math.max(file.size, 1), value: 0, "aria-label": `Upload of ${file.name}` });
  const state = el("span", { class: "state", "data-testid": "upload-state" }, "waiting");
  const bytes = el("span", { class: "bytes" }, `0 B of ${formatBytes(file.size)}`);
  const sentence = el("span", { class: "sentence", role: "status" });
  const note = el("span", { class: "note", "data-testid": "upload-note" });
  const item = el(
    "li",
    { class: "upload", "data-filename": file.name },
    el("span", { class: "name" }, file.name),
    progress,
    bytes,
    state,
    sentence,
    note,
  );
  return { item, progress, state, bytes, sentence, note };
}

export function renderUpload(container) {
  const writable = collectionsWith("write");
  if (!writable.length) {
    fill(
      container,
      el("h2", {}, "Upload"),
      notice("You may not upload here: your token grants no collection the write role.", "warning"),
    );
    return;
  }
  const collection = el(
    "select",
    { id: "upload-collection" },
    writable.map((name) => el("option", { value: name }, name)),
  );
  // Out of the tab order: its label is the one control (Enter or Space opens the picker).
  const picker = el("input", {
    id: "upload-picker",
    type: "file",
    multiple: true,
    class: "visually-hidden",
    tabindex: "-1",
  });
  const list = uploadList();
  const start = (files) => {
    for (const file of files) {
      const row = rowFor(file);
      list.append(row.item);
      send(file, collection.value, row);
    }
  };
  picker.addEventListener("change", () => {
    start([...picker.files]);
    picker.value = "";
  });
  const zone = el(
    "div",
    { class: "dropzone", "data-testid": "dropzone" },
    el("p", {}, "Drop files here, or "),
    el("label", { for: "upload-picker", class: "button" }, "choose files"),
    picker,
  );
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    start([...event.dataTransfer.files]);
  });
  // The label opens the picker from the keyboard too (Enter or Space on it).
  zone.querySelector("label").tabIndex = 0;
  zone.querySelector("label").addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      picker.click();
    }
  });
  fill(
    container,
    el("h2", {}, "Upload"),
    el("p", {}, el("label", { for: "upload-collection" }, "Collection "), collection),
    zone,
    unfinished(),
    list,
  );
}

/** The uploads by parts this browser began for this caller and did not finish (a reload, a closed tab): choosing the
 * same file again resumes each. */
function unfinished() {
  const open = notes().of(caller.me);
  if (!open.length) return null;
  return el(
    "section",
    { class: "unfinished", "data-testid": "unfinished-uploads" },
    el("h3", {}, "Interrupted, to resume"),
    el("p", {}, "Choose the same file again to send only what is missing (each stays resumable for a day)."),
    el(
      "ul",
      {},
      open.map((note) =>
        el("li", { "data-filename": note.name }, `${note.name} (${formatBytes(note.size)}) into ${note.collectionId}`),
      ),
    ),
  );
}
