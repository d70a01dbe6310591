// The API, called with the signed-in caller's bearer token. Errors come back as ApiError with the API's own
// sentence (every 4xx of Quire's names the limit or the fix), so a view can show it as it is.

import { session } from "./auth.js";

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `the API answered ${status}`);
    this.status = status;
    this.body = body || {};
    this.code = this.body.error || (status === 401 ? "unauthorized" : null);
  }
}

let apiBase = "";

export function configureApi(base) {
  apiBase = (base || "").replace(/\/+$/, "");
}

function headers(extra = {}) {
  const token = session.token();
  return token ? { Authorization: `Bearer ${token}`, ...extra } : extra;
}

async function parse(response) {
  const type = response.headers.get("content-type") || "";
  if (response.ok && type.startsWith("image/png")) {
    // A store that cannot sign: the API answers the drawing itself (the console shows it from a blob: URL).
    return { blob: await response.blob() };
  }
  const body = type.includes("application/json") ? await response.json().catch(() => null) : null;
  if (!response.ok) {
    if (response.status === 401) session.expired();
    throw new ApiError(response.status, body);
  }
  return body;
}

export async function call(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(`${apiBase}${path}`, init);
  return parse(response);
}

export const get = (path) => call("GET", path);
export const post = (path, body = {}) => call("POST", path, body);
export const patch = (path, body = {}) => call("PATCH", path, body);
export const del = (path) => call("DELETE", path);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An id for a path segment: a UUID, or an error (an id from an address or a stored snapshot never reaches
 * another route of the API by carrying "/" or ".."). */
export function id(value) {
  if (!UUID.test(String(value))) throw new ApiError(404, { error: "not_found", message: "Not found" });
  return String(value);
}

/** A query string from an object, leaving out empty values. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

const UPLOAD_TIMEOUT_MILLISECONDS = 60 * 60 * 1000;
const uploading = new Set();

/** Stop every upload in flight (signing out). */
export function abortUploads() {
  for (const request of uploading) request.abort();
  uploading.clear();
}

/**
 * The browser's presigned POST straight to the object store, with real byte progress: fetch has no upload
 * progress, XMLHttpRequest.upload.onprogress does. Resolves when the store accepted the object.
 */
export function postToStore(upload, file, onProgress) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(upload.fields)) form.append(name, value);
    form.append("file", file); // the policy's fields first: S3 ignores every field after the file
    const request = new XMLHttpRequest();
    request.open("POST", upload.url);
    request.timeout = UPLOAD_TIMEOUT_MILLISECONDS; // a stalled connection must not hold its turn for ever
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    };
    request.onload = () => {
      if (request.status >= 200 && request.status < 300) {
        resolve();
      } else {
        reject(new Error(storeRefusal(request.status, request.responseText)));
      }
    };
    request.onerror = () => reject(new Error("the upload could not reach the object store (network or CORS)"));
    request.onabort = () => reject(new Error("the upload was cancelled"));
    request.ontimeout = () => reject(new Error("the upload took longer than an hour and was stopped: try again"));
    request.onloadend = () => uploading.delete(request);
    uploading.add(request);
    request.send(form);
  });
}

/**
 * One part of an upload by parts: an HTTP PUT of exactly `blob` to its presigned URL, with the headers it was signed
 * with, and byte progress (XMLHttpRequest again). Resolves with the part's ETag, which the bucket's CORS rule exposes;
 * rejects with `retryable` set when trying again may help (no answer, a 5xx, a URL that expired).
 */
export function putToStore(url, headers, blob, onProgress) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("PUT", url);
    for (const [name, value] of Object.entries(headers || {})) request.setRequestHeader(name, value);
    request.timeout = UPLOAD_TIMEOUT_MILLISECONDS;
    request.upload.onprogress = (event) => onProgress(event.loaded);
    const failed = (message, retryable, expired = false) =>
      reject(Object.assign(new Error(message), { retryable, expired }));
    request.onload = () => {
      const etag = request.getResponseHeader("ETag");
      if (request.status >= 200 && request.status < 300 && etag) resolve(etag);
      else if (request.status >= 200 && request.status < 300)
        failed("the object store did not show the part's ETag (its CORS rule must expose it)", false);
      else {
        const expired = request.status === 403 && /expired/i.test(request.responseText || "");
        failed(storeRefusal(request.status, request.responseText), request.status >= 500 || expired, expired);
      }
    };
    request.onerror = () => failed("the upload could not reach the object store (network or CORS)", true);
    request.onabort = () => failed("the upload was cancelled", false);
    request.ontimeout = () => failed("a part took longer than an hour and was stopped", true);
    request.onloadend = () => uploading.delete(request);
    uploading.add(request);
    request.send(blob);
  });
}

function storeRefusal(status, text) {
  // S3 answers XML: <Error><Code>EntityTooLarge</Code><Message>…</Message></Error>.
  const doc = new DOMParser().parseFromString(text || "", "application/xml");
  const code = doc.querySelector("Code")?.textContent;
  const message = doc.querySelector("Message")?.textContent;
  return `the object store refused the upload (${status}${code ? ` ${code}` : ""})${message ? `: ${message}` : ""}`;
}
