// The metadata helpers: values by type, the editor's PATCH body, the field a 400 names, and the facet chips' filter.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  MAX_FACET_KEYS,
  compactText,
  conditionFor,
  conditionLabel,
  conditionsFromParam,
  conditionsOf,
  displayOf,
  editText,
  facetKeysOf,
  filterOf,
  filterParam,
  isDateText,
  keyOfError,
  metadataChange,
  parseTyped,
  typeOfValue,
  withCondition,
  withoutCondition,
} from "../../console/metadata.js";

test("a value's type is read as the API reads it: a string that is an ISO day or zoned instant is a date", () => {
  assert.equal(typeOfValue(["nda"]), "list");
  assert.equal(typeOfValue(true), "boolean");
  assert.equal(typeOfValue(12.5), "number");
  assert.equal(typeOfValue("2026-12-06"), "date");
  assert.equal(typeOfValue("2026-12-06T09:30:00Z"), "date");
  assert.equal(typeOfValue("2026-12-06T09:30:00+02:00"), "date");
  // An instant without its zone names no instant, and a day that does not exist is no date.
  assert.equal(typeOfValue("2026-12-06T09:30:00"), "string");
  assert.equal(isDateText("2026-13-45"), false);
  assert.equal(typeOfValue("acme"), "string");
});

test("a value shows by its type: a list as items, a date as a date, a boolean in words", () => {
  assert.deepEqual(displayOf(["nda", "renewal"]), { kind: "list", items: ["nda", "renewal"] });
  assert.deepEqual(displayOf("2026-12-06"), { kind: "date", text: "2026-12-06", day: true });
  assert.deepEqual(displayOf("2026-12-06T09:30:00Z"), { kind: "date", text: "2026-12-06T09:30:00Z", day: false });
  assert.deepEqual(displayOf(false), { kind: "text", text: "no" });
  // Markup is a value like any other: the view puts this text in as text.
  assert.deepEqual(displayOf("<img src=x onerror=alert(1)>"), { kind: "text", text: "<img src=x onerror=alert(1)>" });
  assert.equal(compactText(["a", "b"]), "a, b");
  assert.equal(compactText("x".repeat(100), 10), `${"x".repeat(9)}…`);
});

test("what the user typed is read as the type chosen, or says what that type takes", () => {
  assert.deepEqual(parseTyped("number", " 42.5 "), { value: 42.5 });
  assert.match(parseTyped("number", "forty").error, /a number/);
  assert.match(parseTyped("number", "").error, /a number/);
  assert.deepEqual(parseTyped("boolean", "false"), { value: false });
  assert.deepEqual(parseTyped("date", "2026-12-06"), { value: "2026-12-06" });
  assert.match(parseTyped("date", "06/12/2026").error, /2026-12-06/);
  // A list is one item a line: an item cannot hold a line break, so nothing is lost by the rule.
  assert.deepEqual(parseTyped("list", "nda\n renewal \n\n"), { value: ["nda", "renewal"] });
  assert.deepEqual(parseTyped("string", "12"), { value: "12" });
  assert.match(parseTyped("string", "").error, /remove the key/);
  assert.equal(editText("list", ["a", "b"]), "a\nb");
  assert.equal(editText("boolean", undefined), "true");
});

test("the PATCH body sends only what changed: set for new or changed values, remove for removed keys", () => {
  const current = { customer: "acme", amount: 12, tags: ["nda"], region: "emea" };
  const change = metadataChange(current, [
    { key: "customer", type: "string", text: "acme", original: true },
    { key: "amount", type: "number", text: "13", original: true },
    { key: "tags", type: "list", text: "nda\nrenewal", original: true },
    { key: "region", type: "string", text: "emea", original: true, removed: true },
    { key: "effective", type: "date", text: "2026-12-06", original: false },
    { key: "", type: "string", text: "", original: false },
  ]);
  assert.deepEqual(change, {
    set: { amount: 13, tags: ["nda", "renewal"], effective: "2026-12-06" },
    remove: ["region"],
  });
  // A type changed with the same text is a change (12 the number is not "12" the string).
  assert.deepEqual(metadataChange(current, [{ key: "amount", type: "string", text: "12", original: true }]), {
    set: { amount: "12" },
    remove: [],
  });
});

test("rows that cannot be sent are named, and nothing is sent", () => {
  const change = metadataChange({}, [
    { key: "amount", type: "number", text: "lots", original: false },
    { key: "region", type: "string", text: "emea", original: false },
    { key: "region", type: "string", text: "apac", original: false },
    { key: "", type: "string", text: "orphan", original: false },
  ]);
  assert.deepEqual(Object.keys(change.errors).sort(), ["", "amount", "region"]);
  assert.equal(change.set, undefined);
});

test("a 400's message names the editor's key it is about, the longest key first (keys may hold dots)", () => {
  const keys = ["customer", "tags", "a", "a.b"];
  assert.equal(keyOfError("metadata.set.customer: is 1025 characters; at most 1024 are allowed", keys), "customer");
  assert.equal(keyOfError("metadata.set.tags[3]: a list holds strings only", keys), "tags");
  assert.equal(
    keyOfError("metadata.customer: is a number, but customer is a string in this collection", keys),
    "customer",
  );
  assert.equal(keyOfError("metadata.set.a.b: must be a finite number", keys), "a.b");
  assert.equal(
    keyOfError("metadata.remove[1]: region is also set in the same change", keys, ["x", "region"]),
    "region",
  );
  assert.equal(keyOfError("metadata: has 65 keys; at most 64 are allowed", keys), null);
  assert.equal(keyOfError("metadata.set.unknown: is required by the collection's schema", keys), null);
});

test("a chip is equals, or listContains for a list key; conditions gather in an andAll", () => {
  const acme = conditionFor("customer", "acme", false);
  const nda = conditionFor("tags", "nda", true);
  assert.deepEqual(acme, { equals: { key: "customer", value: "acme" } });
  assert.deepEqual(nda, { listContains: { key: "tags", value: "nda" } });
  assert.equal(filterOf([]), undefined);
  assert.deepEqual(filterOf([acme]), acme);
  assert.deepEqual(filterOf([acme, nda]), { andAll: [acme, nda] });
  // The same chip twice is one condition; removing takes out that one only.
  const both = withCondition(withCondition(withCondition([], acme), nda), {
    equals: { key: "customer", value: "acme" },
  });
  assert.deepEqual(both, [acme, nda]);
  assert.deepEqual(withoutCondition(both, acme), [nda]);
});

test("the address keeps the filter as the API's JSON, and reads it back into the same chips", () => {
  const conditions = [conditionFor("customer", "acme", false), conditionFor("amount", 12, false)];
  const param = filterParam(conditions);
  assert.deepEqual(JSON.parse(param), { andAll: conditions });
  assert.deepEqual(conditionsFromParam(param), { conditions, problem: null });
  assert.equal(filterParam([]), "");
  assert.deepEqual(conditionsFromParam(null), { conditions: [], problem: null });
  assert.match(conditionsFromParam("{not json").problem, /not JSON/);
  assert.match(conditionsFromParam("[1]").problem, /not a filter/);
  // A filter written by hand (a Bedrock one, an orAll) stays whole, as one condition.
  const either = { orAll: [conditionFor("a", "x", false), conditionFor("b", "y", false)] };
  assert.deepEqual(conditionsOf(either), [either]);
});

test("a condition reads in words on its chip", () => {
  assert.equal(conditionLabel(conditionFor("customer", "acme", false)), "customer = acme");
  assert.equal(conditionLabel(conditionFor("tags", "nda", true)), "tags has nda");
  assert.equal(conditionLabel({ greaterThan: { key: "amount", value: 10 } }), "amount > 10");
  assert.equal(conditionLabel({ notExists: { key: "region" } }), "region does not exist");
  assert.equal(conditionLabel({ orAll: [] }), '{"orAll":[]}');
});

test("facet keys: the filter's keys first, then those most files hold, at most ten; list keys known", () => {
  const files = [
    { metadata: { customer: "acme", tags: ["nda"], amount: 1 } },
    { metadata: { customer: "globex", amount: 2 } },
    { metadata: { customer: "initech" } },
    { metadata: {} },
    {},
  ];
  const { keys, listKeys } = facetKeysOf(files, [{ equals: { key: "region", value: "emea" } }]);
  assert.deepEqual(keys, ["region", "customer", "amount", "tags"]);
  assert.deepEqual([...listKeys], ["tags"]);
  // Built-in keys in the filter are not asked for: their values are not the product's.
  assert.deepEqual(facetKeysOf(files, [{ equals: { key: "quire.collection", value: "default" } }]).keys, [
    "customer",
    "amount",
    "tags",
  ]);
  const many = [
    { metadata: Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${String(i).padStart(2, "0")}`, i])) },
  ];
  assert.equal(facetKeysOf(many).keys.length, MAX_FACET_KEYS);
});
