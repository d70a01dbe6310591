// The event stream as the console reads it (GET /v1/events, docs/api.md): the event types, what a file event
// means for a file's row, and the follower that reads the stream with its cursor. Pure: no DOM, and the fetch and
// the wait are given to the follower, so that node's test runner checks it (tests/console/events.test.js).

import { stageOf } from "./state.js";

/** Every event type the API sends, in its order (tests/unit/test_console_event_vocabulary.py checks the list
 * against the server's; a webhook's form offers these, and "all" is "*"). */
export const EVENT_TYPES = [
  "file.version.indexed",
  "file.version.failed",
  "file.version.rejected",
  "file.deleted",
  "file.moved",
  "file.metadata.changed",
  "export.rendered",
  "export.failed",
  "replacement.pending",
  "replacement.approved",
  "reindex.finished",
  "webhook.disabled",
];

/** The events that change what a file's row shows: the follower asks for these alone. */
export const FILE_EVENT_TYPES = [
  "file.version.indexed",
  "file.version.failed",
  "file.version.rejected",
  "file.deleted",
  "file.moved",
  "file.metadata.changed",
];

/**
 * What a file event means for the file's row: `{fileId, versionId, kind, stage, metadataRevision}`, or null for an
 * event about no file. `kind` is "version" (the version's processing ended: `stage` is what stageOf says of it,
 * with the API's failure or rejection sentence), "deleted", "moved" or "metadata" (re-read the file to show it).
 */
export function fileChangeOf(event) {
  const data = event?.data || {};
  if (typeof data.fileId !== "string" || !data.fileId) return null;
  const change = { fileId: data.fileId, versionId: data.versionId || null, stage: null, metadataRevision: null };
  switch (event.type) {
    case "file.version.indexed":
      return { ...change, kind: "version", stage: stageOf({ state: "stored", processingState: "indexed" }) };
    case "file.version.failed":
      return {
        ...change,
        kind: "version",
        stage: stageOf({
          state: "stored",
          processingState: "failed",
          failure: { message: data.failureSentence || undefined },
        }),
      };
    case "file.version.rejected":
      return {
        ...change,
        kind: "version",
        stage: stageOf({ state: "rejected", rejectionReason: data.rejectionReason || undefined }),
      };
    case "file.deleted":
      return { ...change, kind: "deleted", stage: stageOf({ state: "deleted" }) };
    case "file.moved":
      return { ...change, kind: "moved" };
    case "file.metadata.changed":
      return { ...change, kind: "metadata", metadataRevision: data.metadataRevision ?? null };
    default:
      return null;
  }
}

// A caught-up follower asks again after this long; one with events waiting asks at once.
export const IDLE_MILLISECONDS = 1000;
// Pages while catching up are the API's largest (what happened before the follower started is skipped); pages
// once caught up are small, as few events come at a time.
export const CATCH_UP_PAGE = 500;
export const FOLLOW_PAGE = 100;

const defaultSleep = (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/**
 * Reads GET /v1/events after its cursor for its subscribers, one request at a time.
 *
 * Started (by a first subscriber) it catches up first, skipping what happened before: a subscriber reads the state
 * it shows after `onReady`, so that every change after that read arrives as an event. Caught up (an empty page), it
 * asks again every IDLE_MILLISECONDS. Paused (the tab hidden), it stops asking and keeps its cursor: resumed, it
 * delivers what happened meanwhile. With no subscriber left it stops; started again, it skips what it missed.
 * A failed request (the API answering anything but 200, or no answer) makes it unavailable: its subscribers are told
 * (`onUnavailable`), to poll as the console did before, and a later start tries the stream again.
 *
 * `fetchPage({after, limit, types})` answers `{events, nextCursor}`; `sleep(ms)` waits.
 */
export class EventFollower {
  constructor({ fetchPage, sleep = defaultSleep, types = FILE_EVENT_TYPES, onState = () => {} }) {
    this.fetchPage = fetchPage;
    this.onState = onState; // "catching-up", "following", "paused", "stopped", "unavailable": the page shows it
    this.sleep = sleep;
    this.types = types;
    this.cursor = null;
    this.ready = false;
    this.running = false;
    this.paused = false;
    this.unavailable = null;
    this.generation = 0;
    this.subscribers = new Set();
  }

  /** Adds `{onEvent, onReady, onUnavailable}` (each optional); returns the function that removes it. */
  subscribe(subscriber) {
    this.subscribers.add(subscriber);
    if (this.running && this.ready) subscriber.onReady?.();
    this.start();
    return () => {
      this.subscribers.delete(subscriber);
      if (!this.subscribers.size) this.stop();
    };
  }

  get available() {
    return this.unavailable === null;
  }

  start() {
    if (this.running || this.paused || !this.subscribers.size) return;
    this.running = true;
    this.unavailable = null;
    this.generation += 1;
    this.onState(this.ready ? "following" : "catching-up");
    this.loop(this.generation);
  }

  stop() {
    this.running = false;
    this.ready = false;
    this.generation += 1; // an answer still on its way is dropped
    if (!this.unavailable) this.onState("stopped");
  }

  pause() {
    this.paused = true;
    this.running = false;
    this.generation += 1;
    this.onState("paused");
  }

  resume() {
    if (!this.paused) return;
    this.paused = false;
    this.start();
  }

  /** Forget everything (signing out: the next caller's stream starts afresh). */
  reset() {
    this.stop();
    this.subscribers.clear();
    this.cursor = null;
    this.paused = false;
    this.unavailable = null;
  }

  async loop(generation) {
    while (this.generation === generation) {
      const limit = this.ready ? FOLLOW_PAGE : CATCH_UP_PAGE;
      let page;
      try {
        page = await this.fetchPage({ after: this.cursor, limit, types: this.types });
      } catch (error) {
        if (this.generation !== generation) return;
        this.fail(error);
        return;
      }
      if (this.generation !== generation) return;
      if (!page || !Array.isArray(page.events) || typeof page.nextCursor !== "string") {
        this.fail(new Error("the event list answered something that is not an event page"));
        return;
      }
      this.cursor = page.nextCursor;
      if (this.ready) {
        for (const event of page.events) this.tell("onEvent", event);
      }
      if (!page.events.length) {
        if (!this.ready) {
          this.ready = true;
          this.onState("following");
          this.tell("onReady");
        }
        await this.sleep(IDLE_MILLISECONDS);
      }
    }
  }

  fail(error) {
    this.running = false;
    this.ready = false;
    this.unavailable = error;
    this.generation += 1;
    this.onState("unavailable");
    this.tell("onUnavailable", error);
  }

  tell(name, argument) {
    for (const subscriber of [...this.subscribers]) {
      try {
        subscriber[name]?.(argument);
      } catch (error) {
        // One view's handler failing must not stop the others' updates.
        console.error(error);
      }
    }
  }
}

/** The query of GET /v1/events for a follower's page. */
export function eventsPath({ after, limit, types }) {
  const params = new URLSearchParams();
  if (after) params.set("after", after);
  params.set("limit", String(limit));
  if (types?.length) params.set("type", types.join(","));
  return `/v1/events?${params.toString()}`;
}
