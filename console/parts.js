// An upload by parts from the browser (docs/files.md, "Upload sessions"): the parts of a session that are still to
// send, three PUTs at a time, each a slice of the File (never read whole) with its own byte progress summed into one
// bar, part URLs asked for twenty at a time as the parts come up (each lives 15 minutes), then the completion naming
// every part's ETag. Which parts those are after a reload is resume.js's.

import { id, post, putToStore } from "./api.js";
import { partSpan } from "./resume.js";

const PARTS_AT_ONCE = 3;
const URL_BATCH = 20;
const URL_MARGIN_MILLISECONDS = 60_000;
const PART_ATTEMPTS = 3;

async function sha256Of(blob) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await blob.arrayBuffer()));
  return btoa(String.fromCharCode(...digest));
}

/**
 * Send `send` (part numbers) of `session` from `file`, then complete it with those and the `kept` parts' ETags.
 * `onProgress(bytes, total)` counts the kept parts, the finished ones and the bytes of the parts in flight. A part
 * that fails three times stops the others and rejects.
 */
export async function sendParts(session, file, { kept, send, onProgress }) {
  const uploadId = id(session.uploadId);
  const etags = new Map(kept);
  const urls = new Map();
  let asking = Promise.resolve();
  const usable = (number) => {
    const url = urls.get(number);
    return url && Date.parse(url.expiresAt) - Date.now() > URL_MARGIN_MILLISECONDS ? url : null;
  };
  const urlOf = (number, checksum) => {
    const next = asking.then(async () => {
      const ready = usable(number);
      if (ready) return ready;
      const body = checksum
        ? { parts: [{ partNumber: number, checksumSha256: checksum }] }
        : {
            partNumbers: send
              .slice(send.indexOf(number))
              .filter((n) => !usable(n))
              .slice(0, URL_BATCH),
          };
      const answer = await post(`/v1/uploads/${uploadId}/parts`, body);
      for (const url of answer.parts) urls.set(url.partNumber, url);
      return urls.get(number);
    });
    asking = next.catch(() => undefined);
    return next;
  };

  let done = [...kept.keys()].reduce(
    (sum, number) => sum + partSpan(session, number)[1] - partSpan(session, number)[0],
    0,
  );
  const loading = new Map();
  const report = () => onProgress(done + [...loading.values()].reduce((sum, bytes) => sum + bytes, 0), file.size);
  report();

  const sendPart = async (number) => {
    const [start, end] = partSpan(session, number);
    const piece = file.slice(start, end);
    const checksum = session.checksums ? await sha256Of(piece) : null;
    for (let attempt = 1; ; attempt += 1) {
      const url = await urlOf(number, checksum);
      try {
        const etag = await putToStore(url.url, url.headers, piece, (loaded) => {
          loading.set(number, loaded);
          report();
        });
        loading.delete(number);
        done += end - start;
        etags.set(number, etag);
        report();
        return;
      } catch (error) {
        loading.delete(number);
        report();
        if (error.expired) urls.delete(number);
        if (!error.retryable || attempt >= PART_ATTEMPTS) throw new Error(`part ${number}: ${error.message}`);
        if (!error.expired) await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** (attempt - 1)));
      }
    }
  };

  const queue = [...send];
  let failure = null;
  const worker = async () => {
    for (let number = queue.shift(); number !== undefined && !failure; number = queue.shift()) {
      try {
        await sendPart(number);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: PARTS_AT_ONCE }, worker));
  if (failure) throw failure;
  const parts = Array.from({ length: session.partCount }, (_, i) => ({ partNumber: i + 1, etag: etags.get(i + 1) }));
  return post(`/v1/uploads/${uploadId}/complete`, { parts });
}
