// Webhooks (issue 34) as the console shows and registers them: pure helpers, no DOM, so that node's test runner
// checks them (tests/console/webhooks.test.js). The API owns the rules (docs/api.md): these say before sending what
// it would refuse anyway, in the same words, and place its refusal beside the field it names.

import { EVENT_TYPES } from "./events.js";

export const ALL_EVENTS = "*";
export const MAX_URL_CHARACTERS = 2048;
export const MAX_DESCRIPTION_CHARACTERS = 500;
export const MAX_COLLECTIONS = 100;
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/; // a tab and a line break are allowed in a description

/**
 * The POST /v1/webhooks body from what the form holds (`{url, all, events, collections, description}`), or
 * `{errors: {field: sentence}}` naming each field the API would refuse (url, events, collectionIds, description).
 * "All events" is "*", and wins over any type also ticked.
 */
export function webhookPayload({ url, all, events, collections, description }) {
  const errors = {};
  const address = String(url ?? "").trim();
  if (!address) errors.url = "the endpoint's URL, https://…";
  else if (address.length > MAX_URL_CHARACTERS) errors.url = `at most ${MAX_URL_CHARACTERS} characters`;
  else if (/[\s\u0000-\u001f\u007f]/.test(address)) errors.url = "the URL holds a space or a control character";
  else {
    let parsed = null;
    try {
      parsed = new URL(address);
    } catch {
      errors.url = "not a URL: https://host/path";
    }
    if (parsed && parsed.protocol !== "https:" && parsed.protocol !== "http:")
      errors.url = "the URL must start with https://";
    else if (parsed && (parsed.username || parsed.password))
      errors.url = "the URL must not hold a user name or password";
  }
  const known = new Set(EVENT_TYPES);
  const chosen = all ? [ALL_EVENTS] : [...new Set(events || [])].filter((type) => known.has(type)).sort();
  if (!chosen.length) errors.events = 'choose at least one event type, or "all events"';
  const collectionIds = [...new Set(collections || [])].sort();
  if (!collectionIds.length) errors.collectionIds = "choose at least one collection";
  else if (collectionIds.length > MAX_COLLECTIONS) errors.collectionIds = `at most ${MAX_COLLECTIONS} collections`;
  const text = String(description ?? "");
  if (text.length > MAX_DESCRIPTION_CHARACTERS)
    errors.description = `at most ${MAX_DESCRIPTION_CHARACTERS} characters (${text.length} now)`;
  else if (CONTROL.test(text)) errors.description = "holds a control character";
  if (Object.keys(errors).length) return { errors };
  return { body: { url: address, events: chosen, collectionIds, description: text } };
}

const FIELDS = ["url", "events", "collectionIds", "description"];

/** The form field a 400's message names (`url: refused by the rule …` → "url"), or null. */
export function fieldOfError(message) {
  const match = /^(\w+)(?:\[\d+\])?\s*:/.exec(String(message || ""));
  return match && FIELDS.includes(match[1]) ? match[1] : null;
}

/** A webhook's events in a few words: "all events", or the types. */
export function eventsLabel(events) {
  if (!events?.length) return "none";
  return events.includes(ALL_EVENTS) ? "all events" : events.join(", ");
}

/** How a webhook stands: `{label, sentence, kind}`, kind "ok", "warning" (failing) or "error" (disabled). */
export function webhookStanding(webhook, formatTime = String) {
  if (webhook.state === "disabled")
    return {
      label: "disabled",
      kind: "error",
      sentence: webhook.disabledReason || "disabled: enable it to resume deliveries",
    };
  if (webhook.failingSince)
    return {
      label: "failing",
      kind: "warning",
      sentence: `every delivery has failed since ${formatTime(webhook.failingSince)}; it is disabled after 3 days of this`,
    };
  return { label: webhook.state || "active", kind: "ok", sentence: "" };
}

/** A delivery's last outcome in a cell: "200", "503 · the endpoint answered 503", "timed out", or "—". */
export function deliveryOutcome(delivery) {
  const parts = [];
  if (delivery.lastStatus !== null && delivery.lastStatus !== undefined) parts.push(String(delivery.lastStatus));
  if (delivery.lastError) parts.push(delivery.lastError);
  return parts.length ? parts.join(" · ") : "—";
}

/** A delivery's body, as sent, for reading: indented JSON. */
export function bodyText(body) {
  return JSON.stringify(body ?? null, null, 2);
}

/** Put a delivery the API just answered (a test, a replay) at the top of the list, in place of its older self. */
export function withDelivery(deliveries, delivery) {
  return [delivery, ...deliveries.filter((each) => each.deliveryId !== delivery.deliveryId)];
}
