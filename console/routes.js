// Every view's address: a pattern over the hash's path (without "#/" and empty segments), the navigation link
// it belongs to, and the view that renders it into its container. app.js only dispatches.

import { id } from "./api.js";
import { renderAnswerCitation, renderStoredAnswer } from "./answer.js";
import { renderArtifact, renderArtifacts } from "./artifacts.js";
import { renderFile, renderFiles } from "./files.js";
import { renderSearch } from "./search.js";
import { renderKeptCitation } from "./source.js";
import { renderUpload } from "./upload.js";
import { renderWebhook, renderWebhooks } from "./webhooks_view.js";

/** The views by address, first match wins: `pattern` over the path, the `navigation` link marked current,
 * `render(container, captured, params)`. */
export const ROUTES = [
  { name: "upload", pattern: /^(?:upload)?$/, navigation: "upload", render: (container) => renderUpload(container) },
  {
    name: "files",
    pattern: /^files$/,
    navigation: "files",
    render: (container, _, params) => renderFiles(container, params),
  },
  {
    name: "file",
    pattern: /^files\/([^/]+)$/,
    navigation: "files",
    render: (container, [fileId], params) => renderFile(container, id(fileId), params),
  },
  {
    name: "search",
    pattern: /^search$/,
    navigation: "search",
    render: (container, _, params) => renderSearch(container, params),
  },
  {
    name: "answer",
    pattern: /^answers\/([^/]+)$/,
    navigation: "search",
    render: (container, [answerId]) => renderStoredAnswer(container, id(answerId)),
  },
  {
    name: "answer citation",
    pattern: /^answers\/([^/]+)\/citations\/([^/]+)$/,
    navigation: "search",
    render: (container, [answerId, number]) => renderAnswerCitation(container, id(answerId), number),
  },
  {
    name: "kept citation",
    pattern: /^cite\/([^/]+)$/,
    navigation: "search",
    render: (container, [keptId]) => renderKeptCitation(container, keptId),
  },
  {
    name: "artifacts",
    pattern: /^artifacts$/,
    navigation: "artifacts",
    render: (container) => renderArtifacts(container),
  },
  {
    name: "artifact",
    pattern: /^artifacts\/([^/]+)$/,
    navigation: "artifacts",
    render: (container, [artifactId], params) => renderArtifact(container, id(artifactId), params),
  },
  {
    name: "webhooks",
    pattern: /^webhooks$/,
    navigation: "webhooks",
    render: (container) => renderWebhooks(container),
  },
  {
    name: "webhook",
    pattern: /^webhooks\/([^/]+)$/,
    navigation: "webhooks",
    render: (container, [webhookId]) => renderWebhook(container, id(webhookId)),
  },
];

/** The route an address names, with what its pattern captured and the query's params; null when no view has it.
 * Empty segments do not count ("#/files/" is "#/files"). */
export function routeOf(hash) {
  const [path, search = ""] = hash.replace(/^#/, "").split("?");
  const normalized = path.split("/").filter(Boolean).join("/");
  for (const route of ROUTES) {
    const match = route.pattern.exec(normalized);
    if (match) return { ...route, captured: match.slice(1), params: new URLSearchParams(search) };
  }
  return null;
}
