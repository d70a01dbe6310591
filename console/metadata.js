// A file's metadata (issue 33) as the console reads, edits and filters it: pure helpers, no DOM, so that node's
// test runner checks them (tests/console/metadata.test.js). The API owns the rules (docs/api.md#metadata); these
// only shape what the user typed into what the API takes, and say what the API answered in the user's words.

export const TYPES = ["string", "number", "boolean", "date", "list"];
// The facet keys a view asks for: the API counts at most 10 keys a call.
export const MAX_FACET_KEYS = 10;

const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/;
// An instant with its zone, as the API reads a date (a day is its midnight UTC; an instant needs Z or ±hh:mm).
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/** Does this text name a date the API would read as one (an ISO 8601 day, or an instant with its zone)? */
export function isDateText(text) {
  if (typeof text !== "string") return false;
  if (ISO_DAY.test(text)) return !Number.isNaN(Date.parse(`${text}T00:00:00Z`));
  return ISO_INSTANT.test(text) && !Number.isNaN(Date.parse(text));
}

/** A value's type as the API reads it from JSON: a string that is a date is a date. */
export function typeOfValue(value) {
  if (Array.isArray(value)) return "list";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return "number";
  return isDateText(value) ? "date" : "string";
}

/** What a value shows as: `{kind: "list", items}`, `{kind: "date", text, day}` (day: no time of day), or
 * `{kind: "text", text}`. The view turns it into elements, every text as text. */
export function displayOf(value) {
  const type = typeOfValue(value);
  if (type === "list") return { kind: "list", items: value.map(String) };
  if (type === "date") return { kind: "date", text: value, day: ISO_DAY.test(value) };
  if (type === "boolean") return { kind: "text", text: value ? "yes" : "no" };
  return { kind: "text", text: String(value) };
}

/** A value in one short line (a search hit's metadata, a file row): lists joined, long text cut. */
export function compactText(value, limit = 60) {
  const text = Array.isArray(value)
    ? value.join(", ")
    : typeof value === "boolean"
      ? value
        ? "yes"
        : "no"
      : String(value);
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

/** The text an editor field starts with for a value of a type: a list one item a line (an item cannot hold a
 * line break: the API refuses control characters), everything else as written. */
export function editText(type, value) {
  if (value === undefined || value === null) return type === "boolean" ? "true" : "";
  if (type === "list") return (Array.isArray(value) ? value : [value]).join("\n");
  return String(value);
}

/** What the user typed, as the type chosen: `{value}` or `{error}` (a sentence for beside the field). */
export function parseTyped(type, text) {
  const raw = String(text ?? "");
  switch (type) {
    case "number": {
      const trimmed = raw.trim();
      const number = trimmed === "" ? Number.NaN : Number(trimmed);
      return Number.isFinite(number) ? { value: number } : { error: "a number, such as 42 or 3.5" };
    }
    case "boolean":
      if (raw === "true" || raw === "false") return { value: raw === "true" };
      return { error: "true or false" };
    case "date": {
      const trimmed = raw.trim();
      return isDateText(trimmed)
        ? { value: trimmed }
        : { error: "a date: 2026-12-06, or an instant with its zone, 2026-12-06T09:30:00Z" };
    }
    case "list":
      return {
        value: raw
          .split(/\r?\n/)
          .map((item) => item.trim())
          .filter(Boolean),
      };
    case "string":
      return raw === "" ? { error: "a value (remove the key to drop it)" } : { value: raw };
    default:
      return { error: `one of ${TYPES.join(", ")}` };
  }
}

function same(left, right) {
  return JSON.stringify(left) === JSON.stringify(right);
}

/**
 * The PATCH body's `set` and `remove` from the editor's rows (`{key, type, text, removed, original}`: original
 * true for a key the file had) against the metadata as read, or `{errors: {key: sentence}}` for rows that cannot
 * be sent. A row whose value did not change is not sent.
 */
export function metadataChange(current, rows) {
  const set = {};
  const remove = [];
  const errors = {};
  const seen = new Set();
  for (const row of rows) {
    const key = String(row.key ?? "").trim();
    if (row.removed) {
      if (row.original && key in current) remove.push(key);
      continue;
    }
    if (!key) {
      if (String(row.text ?? "").trim()) errors[""] = "a key first";
      continue;
    }
    if (seen.has(key)) {
      errors[key] = `${key} is listed twice`;
      continue;
    }
    seen.add(key);
    const parsed = parseTyped(row.type, row.text);
    if (parsed.error) errors[key] = parsed.error;
    else if (!(key in current) || !same(current[key], parsed.value)) set[key] = parsed.value;
  }
  if (Object.keys(errors).length) return { errors };
  return { set, remove };
}

/**
 * The key a 400's message names (`metadata.set.customer: …`, `metadata.tags[3]: …`, `metadata.remove[0]: …`),
 * among `keys` (the editor's, in `remove` order for `remove[i]`), or null when it names the whole object.
 * Keys may hold dots, so the longest key the path starts with wins.
 */
export function keyOfError(message, keys, removed = []) {
  const path = String(message ?? "").split(":")[0];
  const removal = /^metadata\.remove\[(\d+)\]$/.exec(path);
  if (removal) return removed[Number(removal[1])] ?? null;
  const rest = path.replace(/^metadata\.(set\.)?/, "");
  if (rest === path) return null;
  let best = null;
  for (const key of keys) {
    if ((rest === key || rest.startsWith(`${key}[`)) && (!best || key.length > best.length)) best = key;
  }
  return best;
}

// Facets and the filter chips make.

/** A chip's condition: a list key's value is a member (`listContains`), any other is `equals`. */
export function conditionFor(key, value, listValued) {
  return listValued ? { listContains: { key, value } } : { equals: { key, value } };
}

/** The conditions a filter holds for the chips: an andAll's items, or the one condition it is. */
export function conditionsOf(filter) {
  if (!filter || typeof filter !== "object" || Array.isArray(filter)) return [];
  if (Array.isArray(filter.andAll)) return filter.andAll.filter((item) => item && typeof item === "object");
  return [filter];
}

/** The filter the API takes for the chips: none, the one condition, or andAll of them (one condition stands alone:
 * Bedrock's andAll takes two or more, and a filter copied from the address stays one Bedrock takes too). */
export function filterOf(conditions) {
  if (!conditions.length) return undefined;
  return conditions.length === 1 ? conditions[0] : { andAll: conditions };
}

export function withCondition(conditions, condition) {
  return conditions.some((held) => same(held, condition)) ? conditions : [...conditions, condition];
}

export function withoutCondition(conditions, condition) {
  return conditions.filter((held) => !same(held, condition));
}

/** The address's `filter` parameter: the filter's JSON, or "" for none (left out of the address). */
export function filterParam(conditions) {
  const filter = filterOf(conditions);
  return filter ? JSON.stringify(filter) : "";
}

/** The conditions an address's `filter` parameter holds; `{conditions, problem}` so a broken one is said, not lost. */
export function conditionsFromParam(text) {
  if (!text) return { conditions: [], problem: null };
  try {
    const filter = JSON.parse(text);
    const conditions = conditionsOf(filter);
    return conditions.length
      ? { conditions, problem: null }
      : { conditions: [], problem: "the address's filter is not a filter object" };
  } catch {
    return { conditions: [], problem: "the address's filter is not JSON" };
  }
}

const SIGNS = {
  equals: "=",
  notEquals: "≠",
  greaterThan: ">",
  greaterThanOrEquals: "≥",
  lessThan: "<",
  lessThanOrEquals: "≤",
  in: "in",
  notIn: "not in",
  startsWith: "starts with",
  listContains: "has",
  stringContains: "contains",
};

/** A condition in words for its chip: `customer = acme`, `tags has nda`, `region exists`; anything else as JSON. */
export function conditionLabel(condition) {
  const [operator, operand] = Object.entries(condition || {})[0] || [];
  if (operator === "exists" || operator === "notExists")
    return `${operand?.key} ${operator === "exists" ? "exists" : "does not exist"}`;
  if (SIGNS[operator] && operand && typeof operand === "object" && "key" in operand)
    return `${operand.key} ${SIGNS[operator]} ${compactText(operand.value)}`;
  return JSON.stringify(condition);
}

/**
 * The keys to ask facets of: the active conditions' keys first, then the keys the files hold, most files first
 * (then by name), at most MAX_FACET_KEYS; and which of them hold lists (their chips test membership).
 */
export function facetKeysOf(files, conditions = []) {
  const counts = new Map();
  const listKeys = new Set();
  for (const file of files) {
    for (const [key, value] of Object.entries(file.metadata || {})) {
      counts.set(key, (counts.get(key) || 0) + 1);
      if (Array.isArray(value)) listKeys.add(key);
    }
  }
  const filtered = conditions
    .map((condition) => Object.values(condition || {})[0]?.key)
    .filter((key) => typeof key === "string" && !key.startsWith("quire."));
  for (const condition of conditions) if (condition?.listContains?.key) listKeys.add(condition.listContains.key);
  const held = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || a.localeCompare(b));
  const keys = [...new Set([...filtered, ...held])].slice(0, MAX_FACET_KEYS);
  return { keys, listKeys };
}
