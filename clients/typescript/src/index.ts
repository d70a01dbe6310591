// Quire's API from TypeScript: openapi-fetch typed by the paths openapi-typescript wrote from the API's OpenAPI
// document (src/schema.d.ts, `make clients`), and an upload that does the presigned POST, or goes by parts (parts.ts:
// resumable), and waits.
import createClient, { type Client } from "openapi-fetch";

import { type PartsOptions, type PartsSent, sendEveryPart } from "./parts.js";
import type { components, paths } from "./schema.js";

export type { components, paths };
export {
  PART_CONCURRENCY,
  type PartsOptions,
  type PartsSent,
  resumeUpload,
  UploadInterrupted,
  UploadSessionEnded,
} from "./parts.js";
export { Md5 } from "./md5.js";
export type FileView = components["schemas"]["FileView"];
export type UploadResponse = components["schemas"]["UploadResponse"];
export type QuireClient = Client<paths>;
export type Outcome = "indexed" | "failed" | "rejected";

/** A client of one Quire API, calling with a bearer token. */
export function createQuireClient(baseUrl: string, token: string): QuireClient {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
}

/** An API refusal: the HTTP status, the API's code (such as `not_found`) and its sentence. */
export class QuireError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
  ) {
    super(`HTTP ${status}: ${message}`);
  }
}

function refusal(response: Response, body: unknown): QuireError {
  const fields = (typeof body === "object" && body !== null ? body : {}) as { error?: string; message?: string };
  return new QuireError(response.status, fields.error, fields.message ?? response.statusText);
}

/** How a file's version settled, or undefined while it is still being processed. */
export function outcomeOf(file: FileView, versionId: string): Outcome | undefined {
  const version = file.versions.find((candidate) => candidate.versionId === versionId) ?? file.current;
  if (version.state === "rejected") return "rejected";
  if (version.processingState === "indexed" || version.processingState === "failed") return version.processingState;
  return undefined;
}

export interface UploadOptions extends PartsOptions {
  collectionId: string;
  filename: string;
  mediaType: string;
  metadata?: Record<string, unknown>;
  /** The document's language (ISO 639-1, "de"), declared instead of detected per chunk. */
  language?: string;
  /** By parts (resumable) even below the single POST's limit; `partSize` in bytes (whole MiB, at least 5 MiB);
   * `checksums`: each part signed with its SHA-256. A file past the single POST goes by parts in any case. */
  multipart?: boolean;
  partSize?: number;
  checksums?: boolean;
  /** The file's SHA-256 (hex): storage then refuses other bytes, and the ticket's `duplicateOf` names an earlier
   * version in the collection with these bytes (the upload goes ahead all the same). */
  sha256?: string;
  /** Seconds to wait for the version to settle (default 600). */
  timeoutSeconds?: number;
}

/** Upload `content`: a ticket from POST /v1/uploads, then the presigned POST (the ticket's fields, then the file), or,
 * when the ticket is an upload session, its parts (three PUTs at a time) and completion. Does not wait. */
export async function upload(
  client: QuireClient,
  content: Blob,
  options: UploadOptions,
): Promise<{ ticket: UploadResponse; parts?: PartsSent }> {
  const asked = await client.POST("/v1/uploads", {
    body: {
      collectionId: options.collectionId,
      filename: options.filename,
      mediaType: options.mediaType,
      byteSize: content.size,
      metadata: options.metadata ?? null,
      ...(options.language !== undefined ? { language: options.language } : {}),
      ...(options.multipart ? { multipart: true } : {}),
      ...(options.partSize !== undefined ? { partSize: options.partSize } : {}),
      ...(options.checksums ? { checksums: true } : {}),
      ...(options.sha256 !== undefined ? { sha256: options.sha256 } : {}),
    },
  });
  if (asked.error !== undefined || asked.data === undefined) throw refusal(asked.response, asked.error);
  const ticket = asked.data;
  if (ticket.uploadId) {
    options.onSession?.(ticket);
    return { ticket, parts: await sendEveryPart(client, ticket, content, options) };
  }
  if (ticket.upload == null) throw new Error(`${options.filename}: the ticket has neither a POST nor a session`);
  const form = new FormData();
  for (const [name, value] of Object.entries(ticket.upload.fields)) form.append(name, value);
  form.append("file", content, options.filename);
  const stored = await fetch(ticket.upload.url, { method: "POST", body: form });
  if (!stored.ok) throw new QuireError(stored.status, undefined, `storage refused the upload: ${await stored.text()}`);
  options.onProgress?.(content.size, content.size);
  return { ticket };
}

/** `upload`, then GET /v1/files/{id} with backoff until the version is indexed, failed or rejected. */
export async function uploadAndWait(
  client: QuireClient,
  content: Blob,
  options: UploadOptions,
): Promise<{ ticket: UploadResponse; file: FileView; outcome: Outcome; parts?: PartsSent }> {
  const { ticket, parts } = await upload(client, content, options);
  const deadline = Date.now() + (options.timeoutSeconds ?? 600) * 1000;
  let delay = 200;
  for (;;) {
    const read = await client.GET("/v1/files/{file_id}", { params: { path: { file_id: ticket.fileId } } });
    if (read.error !== undefined || read.data === undefined) throw refusal(read.response, read.error);
    const outcome = outcomeOf(read.data, ticket.versionId);
    if (outcome !== undefined) return { ticket, file: read.data, outcome, ...(parts ? { parts } : {}) };
    if (Date.now() > deadline) throw new Error(`file ${ticket.fileId}: still processing after the timeout`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 1.5, 1000);
  }
}
