// Metadata on screen: a value shown by its type (a list as chips, a date as a date), a file's metadata in one
// line, and the facet chips that filter the file list and search. Metadata is the product's own text: every key
// and value goes in as text (dom.js), never as markup.

import { get, query } from "./api.js";
import { el, fill, notice } from "./dom.js";
import {
  compactText,
  conditionFor,
  conditionLabel,
  displayOf,
  facetKeysOf,
  filterParam,
  withCondition,
  withoutCondition,
} from "./metadata.js";

const COMPACT_KEYS = 4;

function dateText(shown) {
  const instant = new Date(shown.day ? `${shown.text}T00:00:00Z` : shown.text);
  if (Number.isNaN(instant.getTime())) return shown.text;
  // A day is a day wherever the reader is: shown in UTC, the zone it was written in.
  return shown.day
    ? instant.toLocaleDateString(undefined, { timeZone: "UTC", dateStyle: "medium" })
    : instant.toLocaleString();
}

/** A value as elements: a list's items as chips, a date in the reader's words (the value as written in its
 * datetime and title), anything else as its text. */
export function valueElement(value) {
  const shown = displayOf(value);
  if (shown.kind === "list")
    return el(
      "span",
      { class: "value-list" },
      shown.items.length ? shown.items.map((item) => el("span", { class: "value-item" }, item)) : "(empty list)",
    );
  if (shown.kind === "date")
    return el("time", { datetime: shown.text, title: shown.text, class: "value-date" }, dateText(shown));
  return el("span", { class: "value-text" }, shown.text);
}

/** A file's metadata in one line (a file row, a search hit): the first keys as `key: value`, then how many more. */
export function compactMetadata(metadata) {
  const entries = Object.entries(metadata || {}).sort(([a], [b]) => a.localeCompare(b));
  if (!entries.length) return null;
  const shown = entries.slice(0, COMPACT_KEYS);
  return el(
    "span",
    { class: "metadata-compact", "data-testid": "metadata-compact" },
    shown.map(([key, value]) =>
      el(
        "span",
        { class: "badge meta-pair", title: `${key}: ${compactText(value, 1024)}` },
        `${key}: ${compactText(value, 40)}`,
      ),
    ),
    entries.length > shown.length ? el("span", { class: "badge" }, `+${entries.length - shown.length} more`) : null,
  );
}

/**
 * The facet chips and the active filter's removable chips. `facets` is the API's `{key: [{value, count}]}`;
 * `change(conditions)` applies a new set of conditions (the view keeps them in its address).
 */
export function facetBar(facets, listKeys, conditions, change) {
  const active = conditions.length
    ? el(
        "p",
        { class: "active-filters" },
        "Filtered by ",
        conditions.map((condition) =>
          el(
            "button",
            {
              type: "button",
              class: "filter-chip",
              "data-testid": "active-filter",
              "aria-label": `Remove the filter ${conditionLabel(condition)}`,
              onclick: () => change(withoutCondition(conditions, condition)),
            },
            conditionLabel(condition),
            el("span", { "aria-hidden": "true" }, " ×"),
          ),
        ),
        " ",
        el("button", { type: "button", class: "link", onclick: () => change([]) }, "Clear"),
      )
    : null;
  const groups = Object.entries(facets || {})
    .filter(([, values]) => values.length)
    .map(([key, values]) =>
      el(
        "div",
        { class: "facet", role: "group", "aria-label": `Filter by ${key}` },
        el("span", { class: "facet-key" }, key),
        values.map(({ value, count }) => {
          const condition = conditionFor(key, value, listKeys.has(key));
          const on = conditions.some((held) => JSON.stringify(held) === JSON.stringify(condition));
          return el(
            "button",
            {
              type: "button",
              class: "facet-chip",
              "data-testid": "facet-chip",
              "data-key": key,
              "data-value": String(value),
              "aria-pressed": String(on),
              onclick: () =>
                change(on ? withoutCondition(conditions, condition) : withCondition(conditions, condition)),
            },
            compactText(value, 40),
            el("span", { class: "count" }, String(count)),
          );
        }),
      ),
    );
  if (!active && !groups.length) return null;
  return el(
    "section",
    { class: "facets", "aria-label": "Filter by metadata", "data-testid": "facets" },
    active,
    groups,
  );
}

/**
 * Which keys to offer in a scope: those the first files the filter keeps hold (GET /v1/files, one page), with the
 * keys the filter names, at most 10; and which of them hold lists.
 */
export async function discoverFacetKeys(collectionId, conditions) {
  const page = await get(`/v1/files${query({ collectionId, limit: 50, filter: filterParam(conditions) })}`);
  return facetKeysOf(page.files, conditions);
}

/** The facets of `keys` over the files the filter keeps, from the file list (one file asked for, facets beside). */
export async function listFacets(collectionId, conditions, keys) {
  if (!keys.length) return {};
  const page = await get(
    `/v1/files${query({ collectionId, limit: 1, filter: filterParam(conditions), facets: keys.join(",") })}`,
  );
  return page.facets || {};
}

/** Fill `target` with the facet bar, or with the reason it cannot be shown. */
export function showFacets(target, facets, listKeys, conditions, change) {
  fill(target, facetBar(facets, listKeys, conditions, change));
}

export function showFacetProblem(target, error) {
  fill(target, notice(`Facets could not be counted: ${error.message}`, "warning"));
}
