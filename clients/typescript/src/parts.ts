// Uploads by parts (an upload session, docs/files.md "Upload sessions"): each part a slice of the Blob (never read
// whole), three PUT at once with fetch to the URLs the API presigns, progress counted as parts complete, each part's
// SHA-256 when the session checks checksums; and resuming: the parts storage holds are checked against the Blob (the
// size, then the SHA-256 storage recorded or the MD5 a plain ETag is) and only the others are sent before completing.
import type { Client } from "openapi-fetch";

import { Md5 } from "./md5.js";
import type { components, paths } from "./schema.js";

type UploadResponse = components["schemas"]["UploadResponse"];
type UploadSessionView = components["schemas"]["UploadSessionView"];
type PartUrlView = components["schemas"]["PartUrlView"];
type StoredPartView = components["schemas"]["StoredPartView"];

export const PART_CONCURRENCY = 3;
const URL_BATCH = 20; // part URLs asked for at once (the API signs at most 100 a call)
const URL_MARGIN_MILLISECONDS = 60_000; // a URL closer than this to its end is asked for again
const PART_ATTEMPTS = 3; // a PUT tried this often when it gets no answer or a 5xx
const READ_BYTES = 1024 * 1024;

export interface PartsOptions {
  /** Called with (bytes sent, bytes in all) as each part completes, across every part. */
  onProgress?: (sent: number, total: number) => void;
  /** Called as a new session opens, before any byte: its `uploadId` is what resumeUpload takes. */
  onSession?: (ticket: UploadResponse) => void;
  /** The fetch the parts' PUTs go through (the API's calls go through the client's). */
  fetch?: typeof fetch;
  concurrency?: number;
}

/** What an upload by parts did: the parts it sent, the held parts it kept, the held parts it sent again. */
export interface PartsSent {
  uploadId: string;
  partCount: number;
  sent: number[];
  kept: number[];
  replaced: number[];
}

/** An upload by parts that stopped before it was complete; `uploadId` stays open for a day (resumeUpload). */
export class UploadInterrupted extends Error {
  constructor(
    readonly uploadId: string,
    readonly held: number,
    readonly partCount: number,
    readonly cause: unknown,
  ) {
    super(
      `the upload stopped with ${held} of ${partCount} parts confirmed stored (${cause instanceof Error ? cause.message : String(cause)}); ` +
        `its session ${uploadId} stays open for a day: resume it to send the rest`,
    );
  }
}

/** The session cannot take parts any more (aborted or expired): upload the file again. */
export class UploadSessionEnded extends Error {
  constructor(
    readonly uploadId: string,
    readonly state: string,
  ) {
    super(`upload session ${uploadId} is ${state}: its parts are gone; upload the file again`);
  }
}

interface Plan {
  uploadId: string;
  byteSize: number;
  partSize: number;
  partCount: number;
  checksums: boolean;
}

function span(plan: Plan, part: number): [number, number] {
  const start = (part - 1) * plan.partSize;
  return [start, Math.min(start + plan.partSize, plan.byteSize)];
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

async function sha256Of(piece: Blob): Promise<string> {
  return base64(new Uint8Array(await crypto.subtle.digest("SHA-256", await piece.arrayBuffer())));
}

async function md5Of(piece: Blob): Promise<string> {
  const md5 = new Md5();
  const reader = piece.stream().getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return md5.hex();
    for (let i = 0; i < value.length; i += READ_BYTES) md5.update(value.subarray(i, i + READ_BYTES));
  }
}

/** Which held parts are this Blob's: the planned size, then the SHA-256 storage recorded or the MD5 a plain ETag is.
 * A part nothing proves the same (an ETag that is no MD5, as with SSE-KMS) is sent again, replacing it. */
export async function checkHeld(
  plan: Plan,
  held: StoredPartView[],
  content: Blob,
): Promise<{ kept: Map<number, string>; replace: number[] }> {
  const kept = new Map<number, string>();
  const replace: number[] = [];
  for (const part of held) {
    if (part.partNumber < 1 || part.partNumber > plan.partCount) continue;
    const [start, end] = span(plan, part.partNumber);
    const piece = content.slice(start, end);
    const etag = part.etag.trim().replace(/^"|"$/g, "");
    let same = false;
    if (part.size === end - start) {
      if (part.checksumSha256) same = (await sha256Of(piece)) === part.checksumSha256;
      else if (/^[0-9a-f]{32}$/i.test(etag)) same = (await md5Of(piece)) === etag.toLowerCase();
    }
    if (same) kept.set(part.partNumber, part.etag);
    else replace.push(part.partNumber);
  }
  return { kept, replace };
}

function apiError(response: Response, body: unknown): Error {
  const fields = (typeof body === "object" && body !== null ? body : {}) as { message?: string };
  return new Error(`HTTP ${response.status}: ${fields.message ?? response.statusText}`);
}

/** Send `numbers` (three at a time), then complete the session; every part's ETag by number. */
async function sendAndComplete(
  client: Client<paths>,
  plan: Plan,
  content: Blob,
  numbers: number[],
  kept: Map<number, string>,
  options: PartsOptions,
): Promise<void> {
  const put = options.fetch ?? fetch;
  const etags = new Map(kept);
  const urls = new Map<number, PartUrlView>();
  let asking: Promise<unknown> = Promise.resolve();
  const usable = (part: number) => {
    const url = urls.get(part);
    return url && Date.parse(url.expiresAt) - Date.now() > URL_MARGIN_MILLISECONDS ? url : undefined;
  };
  // One request for URLs at a time: a batch of the parts coming up, or with checksums the part alone.
  const urlOf = (part: number, checksum: string | undefined): Promise<PartUrlView> => {
    const next = asking.then(async () => {
      const ready = usable(part);
      if (ready) return ready;
      const start = numbers.indexOf(part);
      const body = checksum
        ? { parts: [{ partNumber: part, checksumSha256: checksum }] }
        : {
            partNumbers: numbers
              .slice(start)
              .filter((n) => !usable(n))
              .slice(0, URL_BATCH),
          };
      const asked = await client.POST("/v1/uploads/{upload_id}/parts", {
        params: { path: { upload_id: plan.uploadId } },
        body,
      });
      if (asked.error !== undefined || asked.data === undefined) throw apiError(asked.response, asked.error);
      for (const url of asked.data.parts) urls.set(url.partNumber, url);
      return urls.get(part)!;
    });
    asking = next.catch(() => undefined);
    return next;
  };
  let sent = [...kept.keys()].reduce((total, part) => total + span(plan, part)[1] - span(plan, part)[0], 0);
  options.onProgress?.(sent, plan.byteSize);
  const stop = new AbortController();

  const sendPart = async (part: number): Promise<void> => {
    const [start, end] = span(plan, part);
    const piece = content.slice(start, end);
    const checksum = plan.checksums ? await sha256Of(piece) : undefined;
    let failure: unknown;
    for (let attempt = 1; attempt <= PART_ATTEMPTS; attempt += 1) {
      const url = await urlOf(part, checksum);
      let response: Response;
      try {
        response = await put(url.url, { method: "PUT", body: piece, headers: url.headers, signal: stop.signal });
      } catch (error) {
        if (stop.signal.aborted) throw error;
        failure = error; // no answer: the network; tried again after a pause
        await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** (attempt - 1)));
        continue;
      }
      const text = response.ok ? "" : await response.text();
      if (response.ok) {
        const etag = response.headers.get("etag");
        if (!etag) throw new Error(`part ${part}: storage sent no ETag (its CORS rule must expose it)`);
        etags.set(part, etag);
        sent += end - start;
        options.onProgress?.(sent, plan.byteSize);
        return;
      }
      failure = new Error(`part ${part}: storage refused it (${response.status}): ${text.slice(0, 300)}`);
      if (response.status === 403 && /expired/i.test(text)) {
        urls.delete(part); // signed long ago: a fresh URL at once
        continue;
      }
      if (response.status < 500) throw failure;
      await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** (attempt - 1)));
    }
    throw failure;
  };

  const queue = [...numbers];
  let first: unknown;
  const worker = async () => {
    for (let part = queue.shift(); part !== undefined && first === undefined; part = queue.shift()) {
      try {
        await sendPart(part);
      } catch (error) {
        first ??= error;
        stop.abort(); // the other PUTs in flight stop: resuming sends them
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? PART_CONCURRENCY }, worker));
  if (first !== undefined) throw new UploadInterrupted(plan.uploadId, etags.size, plan.partCount, first);

  const parts = Array.from({ length: plan.partCount }, (_, i) => ({ partNumber: i + 1, etag: etags.get(i + 1)! }));
  const done = await client.POST("/v1/uploads/{upload_id}/complete", {
    params: { path: { upload_id: plan.uploadId } },
    body: { parts },
  });
  if (done.error !== undefined || done.data === undefined) throw apiError(done.response, done.error);
}

/** A new session's parts: every part, then completion. */
export async function sendEveryPart(
  client: Client<paths>,
  ticket: UploadResponse,
  content: Blob,
  options: PartsOptions = {},
): Promise<PartsSent> {
  const plan: Plan = {
    uploadId: ticket.uploadId!,
    byteSize: content.size,
    partSize: ticket.partSize!,
    partCount: ticket.partCount!,
    checksums: Boolean(ticket.checksums),
  };
  const numbers = Array.from({ length: plan.partCount }, (_, i) => i + 1);
  await sendAndComplete(client, plan, content, numbers, new Map(), options);
  return { uploadId: plan.uploadId, partCount: plan.partCount, sent: numbers, kept: [], replaced: [] };
}

/** Finish an upload by parts that stopped (a crash, a reload): GET /v1/uploads/{id} lists the parts storage holds,
 * each is checked against `content`, the others are sent, and the session is completed. */
export async function resumeUpload(
  client: Client<paths>,
  uploadId: string,
  content: Blob,
  options: PartsOptions = {},
): Promise<{ session: UploadSessionView; parts: PartsSent }> {
  const read = await client.GET("/v1/uploads/{upload_id}", { params: { path: { upload_id: uploadId } } });
  if (read.error !== undefined || read.data === undefined) throw apiError(read.response, read.error);
  const session = read.data;
  if (session.state === "aborted" || session.state === "expired") throw new UploadSessionEnded(uploadId, session.state);
  if (session.byteSize !== content.size)
    throw new Error(`upload session ${uploadId} is for ${session.byteSize} bytes, but this file has ${content.size}`);
  const plan: Plan = { ...session, checksums: session.checksums };
  if (session.state !== "open")
    return { session, parts: { uploadId, partCount: plan.partCount, sent: [], kept: [], replaced: [] } };
  const { kept, replace } = await checkHeld(plan, session.parts, content);
  const missing = Array.from({ length: plan.partCount }, (_, i) => i + 1).filter((part) => !kept.has(part));
  await sendAndComplete(client, plan, content, missing, kept, options);
  return {
    session,
    parts: {
      uploadId,
      partCount: plan.partCount,
      sent: missing,
      kept: [...kept.keys()].sort((a, b) => a - b),
      replaced: replace,
    },
  };
}
