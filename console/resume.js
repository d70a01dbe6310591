// Uploads by parts without the DOM or the network: when a file goes by parts, how a session cuts it, which held parts
// can stay, and the notes that let an upload resume after a reload (localStorage: the same caller choosing the same
// file again, by name, size and modification time, finds its session). Tested under node (tests/console).

export const NOTES_KEY = "quire.uploadSessions";
const MIB = 1024 * 1024;
const KEPT_NOTES = 20; // the newest; an older session has likely ended (a session lasts a day)

/** How uploads go by parts (config.json's `uploads`): from `byPartsFrom` bytes a file is asked for as an upload
 * session (resumable) with parts of `partSize` bytes (the API's default when absent); a file past the single POST's
 * limit is answered with a session anyway. */
export const partsPolicy = { byPartsFrom: 64 * MIB, partSize: null };

export function configureParts(uploads) {
  if (Number.isFinite(uploads?.byPartsFrom)) partsPolicy.byPartsFrom = uploads.byPartsFrom;
  if (Number.isFinite(uploads?.partSize)) partsPolicy.partSize = uploads.partSize;
}

/** The fields POST /v1/uploads takes, beyond the file's, for a file of `size` bytes. */
export function partsRequest(size, policy = partsPolicy) {
  if (size < policy.byPartsFrom) return {};
  return policy.partSize ? { multipart: true, partSize: policy.partSize } : { multipart: true };
}

/** Part `number`'s bytes in the file: [start, end). */
export function partSpan(session, number) {
  const start = (number - 1) * session.partSize;
  return [start, Math.min(start + session.partSize, session.byteSize)];
}

/** The held parts that can stay (the size the plan gives them: a part cut short is sent again) and the parts to send,
 * from GET /v1/uploads/{id}. The file is the same one by its name, size and modification time. */
export function partsToSend(session) {
  const kept = new Map();
  for (const part of session.parts || []) {
    if (part.partNumber < 1 || part.partNumber > session.partCount) continue;
    const [start, end] = partSpan(session, part.partNumber);
    if (part.size === end - start) kept.set(part.partNumber, part.etag);
  }
  const send = [];
  for (let number = 1; number <= session.partCount; number += 1) if (!kept.has(number)) send.push(number);
  return { kept, send };
}

/** What names a file's upload for one caller in one collection. */
export function noteKey(me, collectionId, file) {
  return JSON.stringify([me?.tenantId, me?.subject, collectionId, file.name, file.size, file.lastModified]);
}

/** The sessions this browser opened and has not finished, each under its `noteKey`. */
export class ResumeNotes {
  constructor(storage) {
    this.storage = storage;
  }

  all() {
    try {
      const notes = JSON.parse(this.storage.getItem(NOTES_KEY) || "{}");
      return notes && typeof notes === "object" && !Array.isArray(notes) ? notes : {};
    } catch {
      return {}; // unreadable: as if none
    }
  }

  find(key) {
    const note = this.all()[key];
    return note && typeof note.uploadId === "string" ? note : null;
  }

  /** Notes of this caller (their tenant and subject), newest first. */
  of(me) {
    return Object.entries(this.all())
      .filter(([key]) => {
        const [tenant, subject] = JSON.parse(key);
        return tenant === me?.tenantId && subject === me?.subject;
      })
      .map(([, note]) => note)
      .sort((a, b) => String(b.savedAt).localeCompare(String(a.savedAt)));
  }

  remember(key, note) {
    const notes = { ...this.all(), [key]: { ...note, savedAt: new Date().toISOString() } };
    const newest = Object.entries(notes)
      .sort(([, a], [, b]) => String(b.savedAt).localeCompare(String(a.savedAt)))
      .slice(0, KEPT_NOTES);
    this.write(Object.fromEntries(newest));
  }

  forget(key) {
    const notes = this.all();
    delete notes[key];
    this.write(notes);
  }

  write(notes) {
    try {
      this.storage.setItem(NOTES_KEY, JSON.stringify(notes));
    } catch {
      // Storage full or refused: the upload goes on, only a reload could not resume it.
    }
  }
}
