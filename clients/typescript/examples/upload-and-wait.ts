// Upload a text file to Quire and wait until it is indexed, then search it.
//   QUIRE_API=http://127.0.0.1:8000 QUIRE_TOKEN=... node upload-and-wait.js
import { createQuireClient, uploadAndWait } from "../src/index.js";

// Node's environment, declared here rather than pulling in @types/node for one object.
declare const process: { env: Record<string, string | undefined> };

const api = process.env.QUIRE_API ?? "http://127.0.0.1:8000";
const token = process.env.QUIRE_TOKEN ?? "";
const collectionId = process.env.QUIRE_COLLECTION ?? "default";

const client = createQuireClient(api, token);
const content = new Blob(["# Greeting\n\nQuire says hello from TypeScript.\n"], { type: "text/markdown" });
const { ticket, outcome, file } = await uploadAndWait(client, content, {
  collectionId,
  filename: "hello.md",
  mediaType: "text/markdown",
});
console.log(`${ticket.fileId} ${outcome} (${file.current.indexing?.chunkCount ?? 0} chunks)`);

const found = await client.POST("/v1/search", { body: { query: "hello from TypeScript", mode: "keyword" } });
if (found.data && "hits" in found.data) console.log(`search: ${found.data.hits.length} hit(s)`);
