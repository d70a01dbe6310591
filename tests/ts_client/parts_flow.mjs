// The TypeScript client's uploads by parts (clients/typescript/src/parts.ts, compiled by tsc) under node, for
// tests/integration/test_client_parts.py. The first argument chooses:
//   md5       its MD5 against node's, over lengths around the block edges and in uneven pieces;
//   full      a file uploaded by parts with checksums (the PUTs in flight counted);
//   interrupt a file whose parts 2 and up storage refuses once part 1 is stored (UploadInterrupted), then resumed.
// Environment: QUIRE_TS_CLIENT (the compiled index.js), QUIRE_API, QUIRE_TOKEN, QUIRE_FILE. The last line of stdout
// is what happened, as JSON.

import { createHash } from "node:crypto";
import { openAsBlob } from "node:fs";
import { pathToFileURL } from "node:url";

const quire = await import(pathToFileURL(process.env.QUIRE_TS_CLIENT).href);
const MIB = 1024 * 1024;

function partOf(url) {
  return Number(new URL(url).searchParams.get("partNumber"));
}

/** fetch, counting each part's PUTs and how many were in flight at once; `answer(part, forward)` may stand in for
 * storage (`forward()` sends the PUT on). With `gather`, the first PUTs wait (up to 5 s) until that many are in flight,
 * so that a client sending fewer at once shows it. */
function counting(answer = (_, forward) => forward(), gather = 0) {
  const seen = { puts: [], inFlight: 0, mostInFlight: 0 };
  const send = async (url, init) => {
    seen.puts.push(partOf(url));
    seen.inFlight += 1;
    seen.mostInFlight = Math.max(seen.mostInFlight, seen.inFlight);
    for (const until = Date.now() + 5000; seen.puts.length <= gather && seen.inFlight < gather && Date.now() < until; )
      await new Promise((resolve) => setTimeout(resolve, 10));
    try {
      return await answer(partOf(url), () => fetch(url, init));
    } finally {
      seen.inFlight -= 1;
    }
  };
  return { seen, send };
}

const mode = process.argv[2];
if (mode === "md5") {
  const lengths = [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, MIB + 3];
  let checked = 0;
  for (const length of lengths) {
    const data = new Uint8Array(length).map((_, i) => (i * 131 + length) & 0xff);
    const expected = createHash("md5").update(data).digest("hex");
    const whole = new quire.Md5().update(data).hex();
    const pieces = new quire.Md5();
    for (let at = 0; at < length; at += 37) pieces.update(data.subarray(at, at + 37));
    if (whole !== expected || pieces.hex() !== expected) throw new Error(`md5 of ${length} bytes: ${whole}`);
    checked += 1;
  }
  console.log(JSON.stringify({ checked }));
} else {
  const client = quire.createQuireClient(process.env.QUIRE_API, process.env.QUIRE_TOKEN);
  const content = await openAsBlob(process.env.QUIRE_FILE, { type: "text/plain" });
  const options = { collectionId: "docs", filename: "ts-parts.txt", mediaType: "text/plain", partSize: 5 * MIB };
  if (mode === "full") {
    const { seen, send } = counting(undefined, 3);
    const progress = [];
    const { ticket, parts } = await quire.upload(client, content, {
      ...options,
      checksums: true,
      fetch: send,
      onProgress: (sent, total) => progress.push([sent, total]),
    });
    console.log(JSON.stringify({ fileId: ticket.fileId, parts, ...seen, progress }));
  } else if (mode === "interrupt") {
    let stored;
    const partOne = new Promise((resolve) => (stored = resolve));
    const refusing = counting(async (part, forward) => {
      if (part === 1) {
        try {
          return await forward(); // the real storage
        } finally {
          stored();
        }
      }
      await partOne; // the others refused once part 1 is stored
      return new Response("<Error><Code>InvalidRequest</Code></Error>", { status: 400 });
    });
    let sessions = 0;
    let stopped;
    try {
      await quire.upload(client, content, { ...options, multipart: true, fetch: refusing.send, onSession: () => sessions++ });
    } catch (error) {
      stopped = error;
    }
    if (!(stopped instanceof quire.UploadInterrupted)) throw new Error(`not interrupted: ${stopped}`);
    const resumed = counting();
    const { session, parts } = await quire.resumeUpload(client, stopped.uploadId, content, { fetch: resumed.send });
    console.log(
      JSON.stringify({
        sessions,
        message: stopped.message,
        held: stopped.held,
        firstPuts: refusing.seen.puts,
        fileId: session.fileId,
        parts,
        resumedPuts: resumed.seen.puts,
      }),
    );
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
}
