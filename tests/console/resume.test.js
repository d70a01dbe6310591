// resume.js: when a file goes by parts, which held parts stay after a reload, and the notes that find a session again.
import assert from "node:assert/strict";
import { test } from "node:test";

import { NOTES_KEY, ResumeNotes, noteKey, partSpan, partsRequest, partsToSend } from "../../console/resume.js";

const MIB = 1024 * 1024;
const ME = { tenantId: "acme", subject: "ann" };

class MemoryStorage {
  constructor() {
    this.items = new Map();
  }
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    this.items.set(key, String(value));
  }
}

test("a file goes by parts from the configured size, with the configured part size", () => {
  const policy = { byPartsFrom: 8 * MIB, partSize: 5 * MIB };
  assert.deepEqual(partsRequest(8 * MIB - 1, policy), {});
  assert.deepEqual(partsRequest(8 * MIB, policy), { multipart: true, partSize: 5 * MIB });
  assert.deepEqual(partsRequest(9 * MIB, { byPartsFrom: 8 * MIB, partSize: null }), { multipart: true });
});

test("the held parts of the planned size stay; the rest, and a part cut short, are sent", () => {
  const session = {
    byteSize: 11 * MIB + 3,
    partSize: 5 * MIB,
    partCount: 3,
    parts: [
      { partNumber: 1, size: 5 * MIB, etag: '"a"' },
      { partNumber: 3, size: MIB, etag: '"c"' }, // the last part holds MiB + 3
      { partNumber: 7, size: 5 * MIB, etag: '"x"' }, // not in the plan
    ],
  };
  assert.deepEqual(partSpan(session, 3), [10 * MIB, 11 * MIB + 3]);
  const { kept, send } = partsToSend(session);
  assert.deepEqual([...kept], [[1, '"a"']]);
  assert.deepEqual(send, [2, 3]);
});

test("a note is found again for the same caller, collection and file only", () => {
  const notes = new ResumeNotes(new MemoryStorage());
  const file = { name: "big.md", size: 11 * MIB, lastModified: 1700000000000 };
  notes.remember(noteKey(ME, "docs", file), { uploadId: "u-1", fileId: "f-1", name: file.name, size: file.size });
  assert.equal(notes.find(noteKey(ME, "docs", file)).uploadId, "u-1");
  assert.equal(notes.find(noteKey(ME, "docs", { ...file, lastModified: file.lastModified + 1 })), null);
  assert.equal(notes.find(noteKey(ME, "docs", { ...file, size: file.size + 1 })), null);
  assert.equal(notes.find(noteKey(ME, "legal", file)), null);
  assert.equal(notes.find(noteKey({ tenantId: "acme", subject: "bob" }, "docs", file)), null);
  assert.deepEqual(
    notes.of(ME).map((note) => note.uploadId),
    ["u-1"],
  );
  assert.deepEqual(notes.of({ tenantId: "other", subject: "ann" }), []);
  notes.forget(noteKey(ME, "docs", file));
  assert.equal(notes.find(noteKey(ME, "docs", file)), null);
});

test("unreadable notes read as none, and only the newest twenty are kept", () => {
  const storage = new MemoryStorage();
  storage.setItem(NOTES_KEY, "{not json");
  const notes = new ResumeNotes(storage);
  assert.deepEqual(notes.all(), {});
  for (let n = 0; n < 25; n += 1)
    notes.remember(noteKey(ME, "docs", { name: `f${n}`, size: n, lastModified: n }), { uploadId: `u-${n}` });
  assert.equal(Object.keys(notes.all()).length, 20);
});
