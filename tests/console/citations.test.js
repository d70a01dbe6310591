// The tab's kept citations: an address per snapshot, in sessionStorage (a stand-in here), the oldest dropped
// when the tab's quota is reached.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { citationFromHref, citationHref, forgetCitations } from "../../console/citations.js";

class MemoryStorage {
  constructor(quota = Infinity) {
    this.items = new Map();
    this.quota = quota;
  }
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    if (String(value).length > this.quota) throw new Error("QuotaExceededError");
    this.items.set(key, String(value));
  }
  removeItem(key) {
    this.items.delete(key);
  }
}

const kept = (href) => citationFromHref(href.replace("#/cite/", ""));

beforeEach(() => {
  globalThis.sessionStorage = new MemoryStorage();
  forgetCitations();
});

test("a snapshot gets one address, which names it without carrying it", () => {
  const citation = { fileId: "f", excerpt: "The quokka census", page: 2 };
  const href = citationHref(citation);
  assert.match(href, /^#\/cite\/[0-9a-f-]{36}$/);
  assert.equal(citationHref({ ...citation }), href);
  assert.deepEqual(kept(href), citation);
  assert.notEqual(citationHref({ ...citation, page: 3 }), href);
});

test("an address this tab never kept, or forgotten at sign-out, names nothing", () => {
  const href = citationHref({ excerpt: "kept" });
  assert.equal(citationFromHref("00000000-0000-4000-8000-000000000000"), null);
  forgetCitations();
  assert.equal(kept(href), null);
});

test("damaged storage is dropped rather than breaking search", () => {
  sessionStorage.setItem("quire.cited", "{not json");
  assert.equal(citationFromHref("anything"), null);
  sessionStorage.setItem("quire.cited", JSON.stringify([["id", "not an object"], 7]));
  assert.equal(citationFromHref("id"), null);
  assert.deepEqual(kept(citationHref({ excerpt: "fresh" })), { excerpt: "fresh" });
});

test("over the quota, the oldest snapshots go first and the newest stays", () => {
  globalThis.sessionStorage = new MemoryStorage(4000);
  forgetCitations();
  const hrefs = Array.from({ length: 60 }, (_, n) => citationHref({ excerpt: `snapshot ${n} ${"x".repeat(40)}` }));
  assert.equal(kept(hrefs[0]), null);
  assert.deepEqual(kept(hrefs[59]), { excerpt: `snapshot 59 ${"x".repeat(40)}` });
  // Its address is found again after the map was rebuilt from what is kept.
  assert.equal(citationHref({ excerpt: `snapshot 59 ${"x".repeat(40)}` }), hrefs[59]);
});
