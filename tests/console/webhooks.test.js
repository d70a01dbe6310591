// The webhook form's payload and checks, the field a 400 names, and how a webhook and a delivery read.
import assert from "node:assert/strict";
import { test } from "node:test";

import { EVENT_TYPES } from "../../console/events.js";
import {
  ALL_EVENTS,
  MAX_DESCRIPTION_CHARACTERS,
  MAX_URL_CHARACTERS,
  bodyText,
  deliveryOutcome,
  eventsLabel,
  fieldOfError,
  webhookPayload,
  webhookStanding,
  withDelivery,
} from "../../console/webhooks.js";

const form = (fields = {}) => ({
  url: "https://hooks.example.com/quire",
  all: false,
  events: ["file.version.indexed"],
  collections: ["default"],
  description: "",
  ...fields,
});

test("the form becomes the API's body: the URL trimmed, the types and collections once each, sorted", () => {
  const made = webhookPayload(
    form({
      url: "  https://hooks.example.com/quire?x=1 ",
      events: ["file.deleted", "file.version.indexed", "file.deleted"],
      collections: ["legal", "default", "legal"],
      description: "ready files\tfor the CRM\n",
    }),
  );
  assert.deepEqual(made, {
    body: {
      url: "https://hooks.example.com/quire?x=1",
      events: ["file.deleted", "file.version.indexed"],
      collectionIds: ["default", "legal"],
      description: "ready files\tfor the CRM\n",
    },
  });
});

test('"all events" is "*" and wins over the types also ticked', () => {
  assert.deepEqual(webhookPayload(form({ all: true, events: ["file.deleted"] })).body.events, [ALL_EVENTS]);
  assert.deepEqual(webhookPayload(form({ all: true, events: [] })).body.events, ["*"]);
});

test("plain http is left to the API (it allows loopback locally), any other scheme is refused before sending", () => {
  assert.ok(webhookPayload(form({ url: "http://127.0.0.1:8999/hook" })).body);
  assert.deepEqual(webhookPayload(form({ url: "ftp://example.com/x" })).errors, {
    url: "the URL must start with https://",
  });
  assert.match(webhookPayload(form({ url: "javascript:alert(1)" })).errors.url, /https:\/\//);
});

test("each field the API would refuse is named, all at once", () => {
  const made = webhookPayload({
    url: "",
    all: false,
    events: ["file.exploded"],
    collections: [],
    description: "x".repeat(MAX_DESCRIPTION_CHARACTERS + 1),
  });
  assert.deepEqual(Object.keys(made.errors).sort(), ["collectionIds", "description", "events", "url"]);
  assert.equal(made.body, undefined);
  assert.match(made.errors.events, /at least one event type/);
  assert.match(made.errors.description, /at most 500 characters \(501 now\)/);
});

test("a URL that cannot be sent is said before sending", () => {
  const errorOf = (url) => webhookPayload(form({ url })).errors?.url;
  assert.equal(errorOf("not a url"), "the URL holds a space or a control character");
  assert.equal(errorOf("hooks.example.com/quire"), "not a URL: https://host/path");
  assert.equal(errorOf("https://user:pw@hooks.example.com/"), "the URL must not hold a user name or password");
  assert.equal(errorOf(`https://example.com/${"a".repeat(MAX_URL_CHARACTERS)}`), "at most 2048 characters");
  assert.equal(errorOf("https://hooks.example.com/quire"), undefined);
});

test("a description may hold tabs and line breaks, not other control characters", () => {
  assert.equal(webhookPayload(form({ description: "a\u0007b" })).errors.description, "holds a control character");
  assert.ok(webhookPayload(form({ description: "line one\nline two" })).body);
});

test("every event type can be chosen; a type the console does not know is not sent", () => {
  assert.deepEqual(webhookPayload(form({ events: [...EVENT_TYPES] })).body.events, [...EVENT_TYPES].sort());
  assert.deepEqual(webhookPayload(form({ events: ["file.deleted", "nope"] })).body.events, ["file.deleted"]);
});

test("the API's 400 is placed beside the field its message names", () => {
  assert.equal(fieldOfError("url: refused by the rule 'scheme': the URL must start with https://"), "url");
  assert.equal(fieldOfError("events: unknown event type 'x'; the types are …"), "events");
  assert.equal(fieldOfError("collectionIds: 'a b' is not a collection id"), "collectionIds");
  assert.equal(fieldOfError("description: holds a control character"), "description");
  assert.equal(fieldOfError("a tenant may have at most 50 webhooks: delete one before adding another"), null);
  assert.equal(fieldOfError("limit: too big"), null);
  assert.equal(fieldOfError(undefined), null);
});

test("a webhook's standing: active, failing since a time, or disabled with the API's reason", () => {
  assert.deepEqual(webhookStanding({ state: "active", failingSince: null }), {
    label: "active",
    kind: "ok",
    sentence: "",
  });
  const failing = webhookStanding({ state: "active", failingSince: "2026-01-01T00:00:00Z" }, (t) => `at ${t}`);
  assert.equal(failing.label, "failing");
  assert.equal(failing.kind, "warning");
  assert.match(failing.sentence, /since at 2026-01-01T00:00:00Z/);
  const disabled = webhookStanding({ state: "disabled", disabledReason: "every delivery failed since …" });
  assert.deepEqual(disabled, { label: "disabled", kind: "error", sentence: "every delivery failed since …" });
  assert.match(webhookStanding({ state: "disabled", disabledReason: null }).sentence, /enable it/);
});

test("events, a delivery's outcome and its body read as words", () => {
  assert.equal(eventsLabel(["*"]), "all events");
  assert.equal(eventsLabel(["file.deleted", "file.moved"]), "file.deleted, file.moved");
  assert.equal(eventsLabel([]), "none");
  assert.equal(deliveryOutcome({ lastStatus: 200, lastError: null }), "200");
  assert.equal(
    deliveryOutcome({ lastStatus: 503, lastError: "the endpoint answered 503" }),
    "503 · the endpoint answered 503",
  );
  assert.equal(deliveryOutcome({ lastStatus: null, lastError: "timed out after 10 s" }), "timed out after 10 s");
  assert.equal(deliveryOutcome({ lastStatus: null, lastError: null }), "—");
  assert.equal(
    bodyText({ type: "webhook.test", data: { a: 1 } }),
    '{\n  "type": "webhook.test",\n  "data": {\n    "a": 1\n  }\n}',
  );
});

test("a test or replay answered by the API goes to the top, replacing its older self", () => {
  const older = [
    { deliveryId: "b", state: "failed" },
    { deliveryId: "a", state: "delivered" },
  ];
  assert.deepEqual(
    withDelivery(older, { deliveryId: "a", state: "pending" }).map((d) => [d.deliveryId, d.state]),
    [
      ["a", "pending"],
      ["b", "failed"],
    ],
  );
  assert.deepEqual(
    withDelivery(older, { deliveryId: "c", state: "pending" }).map((d) => d.deliveryId),
    ["c", "b", "a"],
  );
});
