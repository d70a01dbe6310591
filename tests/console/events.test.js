// The event stream: what a file event means for its row, and the follower's cursor (catch up, follow, pause,
// fall back), driven by a scripted event list and a wait that returns at once.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  CATCH_UP_PAGE,
  EVENT_TYPES,
  EventFollower,
  FILE_EVENT_TYPES,
  FOLLOW_PAGE,
  IDLE_MILLISECONDS,
  eventsPath,
  fileChangeOf,
} from "../../console/events.js";

const FILE = "0b8e1c52-7d3f-4f5e-9a1b-2c3d4e5f6a7b";
const VERSION = "9a1b2c3d-7d3f-4f5e-9a1b-2c3d4e5f6a7b";

const event = (type, data = {}, eventId = `${type}-1`) => ({
  eventId,
  type,
  occurredAt: "2026-01-01T00:00:00Z",
  tenantId: "local",
  collectionId: "default",
  data: { fileId: FILE, versionId: VERSION, ...data },
});

test("a version's end is its stage in the console's words, with the API's sentence", () => {
  const indexed = fileChangeOf(event("file.version.indexed", { chunkCount: 4 }));
  assert.deepEqual(indexed, {
    fileId: FILE,
    versionId: VERSION,
    kind: "version",
    stage: { label: "indexed", done: true, failed: false, sentence: "" },
    metadataRevision: null,
  });
  const failed = fileChangeOf(
    event("file.version.failed", { failureReason: "encrypted", failureSentence: "the PDF is encrypted" }),
  );
  assert.deepEqual(failed.stage, { label: "failed", done: true, failed: true, sentence: "the PDF is encrypted" });
  // A failure without its sentence (a reason the API no longer names) still reads as a failure.
  assert.equal(
    fileChangeOf(event("file.version.failed", { failureSentence: null })).stage.sentence,
    "processing failed",
  );
  const rejected = fileChangeOf(event("file.version.rejected", { rejectionReason: "malware found" }));
  assert.deepEqual(rejected.stage, { label: "rejected", done: true, failed: true, sentence: "malware found" });
});

test("a deletion ends the file; a move and a metadata change ask for the file to be read again", () => {
  const deleted = fileChangeOf(event("file.deleted", { versionId: undefined }));
  assert.equal(deleted.kind, "deleted");
  assert.equal(deleted.versionId, null);
  assert.deepEqual(deleted.stage, { label: "deleted", done: true, failed: false, sentence: "" });
  assert.equal(fileChangeOf(event("file.moved", { direction: "in" })).kind, "moved");
  assert.equal(fileChangeOf(event("file.moved", { direction: "in" })).stage, null);
  const metadata = fileChangeOf(event("file.metadata.changed", { metadataRevision: 3 }));
  assert.deepEqual([metadata.kind, metadata.metadataRevision, metadata.stage], ["metadata", 3, null]);
});

test("an event about no file, or of a type that is no file's, changes no row", () => {
  assert.equal(fileChangeOf(event("export.rendered")), null);
  assert.equal(fileChangeOf({ type: "file.version.indexed", data: {} }), null);
  assert.equal(fileChangeOf({ type: "file.deleted" }), null);
  assert.equal(fileChangeOf(null), null);
});

test("the follower asks for file events only, and every file event type is an event type", () => {
  for (const type of FILE_EVENT_TYPES) assert.ok(EVENT_TYPES.includes(type), type);
  assert.equal(
    eventsPath({ after: "42", limit: 100, types: ["file.deleted", "file.moved"] }),
    "/v1/events?after=42&limit=100&type=file.deleted%2Cfile.moved",
  );
  assert.equal(eventsPath({ after: null, limit: 500, types: [] }), "/v1/events?limit=500");
});

/** A scripted GET /v1/events: the events published so far (each with its position), answered after a cursor. */
function scriptedStream() {
  const published = [];
  const requests = [];
  let failWith = null;
  return {
    published,
    requests,
    publish(...events) {
      for (const each of events) published.push({ position: published.length + 1, event: each });
    },
    fail(error) {
      failWith = error;
    },
    async fetchPage({ after, limit, types }) {
      requests.push({ after, limit, types });
      if (failWith) throw failWith;
      const from = after ? Number(after) : 0;
      const page = published.filter((each) => each.position > from).slice(0, limit);
      const last = page.length ? page[page.length - 1].position : from;
      return { events: page.map((each) => each.event), nextCursor: String(last) };
    },
  };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A follower whose waits are counted and last one turn of the event loop; `until` stops it after that many. */
function followerOn(stream, { until = 3, onWait = () => {} } = {}) {
  const waits = [];
  let follower;
  const sleep = async (milliseconds) => {
    waits.push(milliseconds);
    onWait(waits.length, follower);
    if (waits.length >= until) follower.stop();
    await settled();
  };
  follower = new EventFollower({ fetchPage: (request) => stream.fetchPage(request), sleep });
  return { follower, waits };
}

async function runUntilStopped(follower) {
  for (let turns = 0; turns < 100 && follower.running; turns += 1) await settled();
}

test("started, it skips what happened before, says it is ready, then tells each new event once, in order", async () => {
  const stream = scriptedStream();
  stream.publish(event("file.version.indexed", {}, "old-1"), event("file.deleted", {}, "old-2"));
  const told = [];
  const readies = [];
  const { follower, waits } = followerOn(stream, {
    until: 2,
    onWait: (count) => {
      if (count === 1) stream.publish(event("file.version.failed", {}, "new-1"), event("file.deleted", {}, "new-2"));
    },
  });
  follower.subscribe({ onEvent: (e) => told.push(e.eventId), onReady: () => readies.push(told.length) });
  await runUntilStopped(follower);
  assert.deepEqual(readies, [0]); // ready before any event: the subscriber reads its state then
  assert.deepEqual(told, ["new-1", "new-2"]);
  // Catching up asks big pages from the start; following asks small ones after the cursor it was given.
  assert.deepEqual(
    stream.requests.map((r) => [r.after, r.limit]),
    [
      [null, CATCH_UP_PAGE],
      ["2", CATCH_UP_PAGE],
      ["2", FOLLOW_PAGE],
      ["4", FOLLOW_PAGE],
    ],
  );
  assert.deepEqual(stream.requests[0].types, FILE_EVENT_TYPES);
  // It waits only when caught up (an empty page), a second each time.
  assert.deepEqual(waits, [IDLE_MILLISECONDS, IDLE_MILLISECONDS]);
  assert.equal(follower.cursor, "4");
});

test("a full page is followed at once by the next, without waiting", async () => {
  const stream = scriptedStream();
  const { follower, waits } = followerOn(stream, {
    until: 2,
    onWait: (count) => {
      if (count === 1) for (let n = 0; n < FOLLOW_PAGE + 5; n += 1) stream.publish(event("file.deleted", {}, `e${n}`));
    },
  });
  const told = [];
  follower.subscribe({ onEvent: (e) => told.push(e.eventId) });
  await runUntilStopped(follower);
  assert.equal(told.length, FOLLOW_PAGE + 5);
  assert.equal(waits.length, 2); // one wait before the events, one after both pages: none between them
});

test("paused (the tab hidden), it keeps its cursor and, resumed, tells what happened meanwhile", async () => {
  const stream = scriptedStream();
  const { follower } = followerOn(stream, { until: 100, onWait: (count, f) => count === 1 && f.pause() });
  const told = [];
  follower.subscribe({ onEvent: (e) => told.push(e.eventId) });
  await runUntilStopped(follower);
  assert.equal(follower.running, false);
  const asked = stream.requests.length;
  stream.publish(event("file.version.indexed", {}, "while-hidden"));
  await settled();
  assert.equal(stream.requests.length, asked); // no request while hidden
  follower.resume();
  await settled();
  await settled();
  follower.stop();
  assert.deepEqual(told, ["while-hidden"]);
});

test("with no subscriber left it stops; started again it skips what it missed", async () => {
  const stream = scriptedStream();
  const { follower } = followerOn(stream, { until: 100 });
  const told = [];
  const unsubscribe = follower.subscribe({ onEvent: (e) => told.push(e.eventId) });
  await settled();
  unsubscribe();
  assert.equal(follower.running, false);
  stream.publish(event("file.deleted", {}, "missed"));
  const readies = [];
  follower.subscribe({ onEvent: (e) => told.push(e.eventId), onReady: () => readies.push("ready") });
  await settled();
  await settled();
  follower.stop();
  assert.deepEqual(told, []);
  assert.deepEqual(readies, ["ready"]);
});

test("a subscriber joining a follower already caught up is ready at once", async () => {
  const stream = scriptedStream();
  const { follower } = followerOn(stream, { until: 100 });
  follower.subscribe({});
  await settled();
  const readies = [];
  follower.subscribe({ onReady: () => readies.push("ready") });
  assert.deepEqual(readies, ["ready"]);
  follower.stop();
});

test("a refused request makes the stream unavailable: subscribers are told, and a later start tries again", async () => {
  const stream = scriptedStream();
  const refusal = Object.assign(new Error("Not found"), { status: 404 });
  stream.fail(refusal);
  const { follower } = followerOn(stream, { until: 100 });
  const unavailable = [];
  follower.subscribe({ onUnavailable: (error) => unavailable.push(error) });
  await settled();
  assert.deepEqual(unavailable, [refusal]);
  assert.equal(follower.available, false);
  assert.equal(follower.running, false);
  stream.fail(null);
  follower.subscribe({});
  assert.equal(follower.available, true);
  await settled();
  assert.equal(follower.ready, true);
  follower.stop();
});

test("an answer that is not an event page is no stream either", async () => {
  const follower = new EventFollower({ fetchPage: async () => ({ events: "nope" }), sleep: async () => {} });
  const unavailable = [];
  follower.subscribe({ onUnavailable: (error) => unavailable.push(error.message) });
  await settled();
  assert.equal(unavailable.length, 1);
  assert.match(unavailable[0], /not an event page/);
});

test("an answer arriving after the follower stopped is dropped, and one subscriber's error spares the others", async () => {
  let release;
  const answered = new Promise((resolve) => (release = resolve));
  const follower = new EventFollower({ fetchPage: () => answered, sleep: async () => {} });
  const told = [];
  follower.subscribe({ onEvent: (e) => told.push(e.eventId) });
  follower.stop();
  release({ events: [event("file.deleted")], nextCursor: "9" });
  await settled();
  assert.equal(follower.cursor, null);

  const stream = scriptedStream();
  const { follower: second } = followerOn(stream, {
    until: 2,
    onWait: (count) => count === 1 && stream.publish(event("file.deleted", {}, "x")),
  });
  const original = console.error;
  console.error = () => {};
  try {
    second.subscribe({
      onEvent: () => {
        throw new Error("a broken view");
      },
    });
    second.subscribe({ onEvent: (e) => told.push(e.eventId) });
    await runUntilStopped(second);
  } finally {
    console.error = original;
  }
  assert.deepEqual(told, ["x"]);
});

test("reset forgets the cursor and the subscribers (signing out)", async () => {
  const stream = scriptedStream();
  stream.publish(event("file.deleted"));
  const { follower } = followerOn(stream, { until: 100 });
  follower.subscribe({});
  await settled();
  assert.equal(follower.cursor, "1");
  follower.reset();
  assert.equal(follower.cursor, null);
  assert.equal(follower.subscribers.size, 0);
  assert.equal(follower.running, false);
});

test("the follower says its state: catching up, following, paused, stopped, unavailable", async () => {
  const stream = scriptedStream();
  const states = [];
  const follower = new EventFollower({
    fetchPage: (request) => stream.fetchPage(request),
    sleep: settled,
    onState: (state) => states.push(state),
  });
  const unsubscribe = follower.subscribe({});
  await settled();
  follower.pause();
  follower.resume();
  await settled();
  unsubscribe();
  stream.fail(new Error("503"));
  follower.subscribe({});
  await settled();
  assert.deepEqual(states, [
    "catching-up",
    "following",
    "paused",
    "following",
    "stopped",
    "catching-up",
    "unavailable",
  ]);
});
