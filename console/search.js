// Search and ask: hybrid search with cited hits, and grounded answers (claims, numbered citations, the
// confidence factors, or the refusal sentence). An answer is stored: its address (#/answers/{id}) and its
// citations' addresses survive a refresh, and its citations are re-checked against what the caller reads now.

import { get, post } from "./api.js";
import { el, fill, notice, formatTime } from "./dom.js";
import { citationChip } from "./source.js";
import { caller, collectionsWith } from "./state.js";

const CITED_KEY = "quire.cited";
const MAX_KEPT_CITATIONS = 300;
let addresses = null; // serialized snapshot → its id, for the snapshots kept in this tab

/**
 * A search hit's citation as an address that survives a reload: the snapshot the API returned is kept in this
 * tab (sessionStorage) and the address names it. The address never carries the snapshot itself, so a crafted
 * link cannot put invented words or boxes beside a real page as "what was cited".
 */
export function citationHref(citation) {
  const kept = keptCitations();
  const serialized = JSON.stringify(citation);
  // One map from snapshot to id per storage state, not a serialization of every kept snapshot per hit.
  if (!addresses) addresses = new Map(kept.map(([id, stored]) => [JSON.stringify(stored), id]));
  const found = addresses.get(serialized);
  if (found) return `#/cite/${found}`;
  const id = crypto.randomUUID();
  kept.push([id, citation]);
  // Over the tab's storage quota: the oldest go first (their addresses then say to search again).
  for (let keep = MAX_KEPT_CITATIONS; keep > 0; keep = Math.floor(keep / 2)) {
    try {
      sessionStorage.setItem(CITED_KEY, JSON.stringify(kept.slice(-keep)));
      if (keep < kept.length) addresses = null; // the oldest were dropped: built again from what is kept
      else addresses.set(serialized, id);
      break;
    } catch {
      // try again with fewer
    }
  }
  return `#/cite/${id}`;
}

/** The citation an address names, or null when this tab did not find it. */
export function citationFromHref(id) {
  const found = keptCitations().find(([stored]) => stored === id);
  return found ? found[1] : null;
}

/** The tab's kept citations; anything else found under the key (damaged, or written by another version of the
 * console) is dropped rather than breaking search. */
function keptCitations() {
  try {
    const kept = JSON.parse(sessionStorage.getItem(CITED_KEY) || "[]");
    if (Array.isArray(kept)) {
      return kept.filter((entry) => Array.isArray(entry) && typeof entry[0] === "string" && entry[1] && typeof entry[1] === "object");
    }
  } catch {
    // damaged: start again
  }
  sessionStorage.removeItem(CITED_KEY);
  addresses = null;
  return [];
}

export function forgetCitations() {
  sessionStorage.removeItem(CITED_KEY);
  addresses = null;
}

function hitItem(hit) {
  const scores = [`score ${hit.score.toFixed(3)}`];
  if (hit.lexicalScore !== null && hit.lexicalScore !== undefined) scores.push(`keyword ${hit.lexicalScore.toFixed(3)}`);
  if (hit.vectorScore !== null && hit.vectorScore !== undefined) scores.push(`semantic ${hit.vectorScore.toFixed(3)}`);
  return el(
    "li",
    { class: "hit", "data-testid": "hit" },
    el("p", { class: "excerpt" }, hit.excerpt),
    el("p", { class: "hit-meta" }, citationChip(hit.citation, citationHref(hit.citation)), " ", el("span", { class: "scores" }, scores.join(" · ")), hit.directSubject ? el("span", { class: "badge" }, "names this document") : null),
  );
}

function renderResults(target, result) {
  if (result.outcome !== "found") {
    fill(target, el("p", { class: "notice notice-info outcome", role: "status", "data-testid": "outcome", "data-outcome": result.outcome }, result.message));
    return;
  }
  fill(
    target,
    el("p", { role: "status" }, `${result.hits.length} hit${result.hits.length === 1 ? "" : "s"}${result.vectorAvailable ? "" : " (keyword only: the semantic lane is unavailable)"}`),
    el("ol", { class: "hits" }, result.hits.map(hitItem)),
  );
}

const FACTOR_NAMES = {
  topRetrievalScore: "top retrieval score",
  directClaimCoverage: "claims quoting their evidence",
  citationCoverage: "claims with a citation",
  independentDocuments: "independent documents",
  unsupportedClaimPenalty: "unsupported-claim penalty",
  ambiguousEvidencePenalty: "ambiguous-evidence penalty",
  degradedIndexPenalty: "degraded-index penalty",
};

function confidence(answer) {
  const factors = answer.confidence.factors || {};
  return el(
    "section",
    { class: "confidence", "aria-label": "Confidence", "data-testid": "confidence" },
    el("h3", {}, `Confidence: ${answer.confidence.band} (${answer.confidence.score.toFixed(2)})`),
    el("table", {}, el("tbody", {}, Object.entries(factors).map(([name, value]) => el("tr", {}, el("th", { scope: "row" }, FACTOR_NAMES[name] || name), el("td", {}, typeof value === "number" && !Number.isInteger(value) ? value.toFixed(3) : String(value)))))),
  );
}

/** Claims ending "[n]" → the artifact's Markdown, citing the answer's citations in their own order. */
export function answerMarkdown(answer) {
  const lines = [`# ${answer.question.replace(/\s+/g, " ").trim()}`, ""];
  for (const claim of answer.claims) {
    const marks = claim.citations.map((number) => `[${number}]`).join("");
    lines.push(`${claim.text.replace(/\s+/g, " ").replace(/\[(\d+)\]/g, "($1)").trim()}${marks ? ` ${marks}` : ""}`, "");
  }
  return `${lines.join("\n").trim()}\n`;
}

/**
 * The collection an answer can be saved into as an artifact, or the sentence saying why it cannot: an artifact
 * lives in one collection and may cite only what that collection holds, and saving needs the write role there.
 */
export function artifactCollection(answer) {
  const cited = [...new Set(answer.citations.map((citation) => citation.collectionId))];
  if (cited.length > 1) return { sentence: `This answer cites ${cited.length} collections (${cited.join(", ")}); an artifact cites one collection's files.` };
  const collectionId = cited[0] || collectionsWith("write")[0];
  if (!collectionId || !collectionsWith("write").includes(collectionId)) {
    return { sentence: `Saving this answer as an artifact needs the write role in ${collectionId || "a collection"}.` };
  }
  return { collectionId };
}

async function saveAsArtifact(answer, collectionId) {
  const ordered = [...answer.citations].sort((a, b) => a.number - b.number);
  // The artifact's [n] are the positions in its own citation list.
  const position = (number) => ordered.findIndex((citation) => citation.number === number) + 1;
  const claims = answer.claims.map((claim) => ({ ...claim, citations: claim.citations.map(position).filter((n) => n > 0) }));
  const made = await post("/v1/artifacts", {
    collectionId,
    name: answer.question.slice(0, 200),
    markdown: answerMarkdown({ ...answer, claims }),
    citations: ordered.map((citation) => ({ chunkId: citation.chunkId })),
  });
  location.hash = `#/artifacts/${made.artifactId}`;
}

export function renderAnswer(target, answer) {
  const parts = [];
  const citationsByNumber = new Map(answer.citations.map((citation) => [citation.number, citation]));
  parts.push(el("p", { class: "answer-meta" }, `Outcome: ${answer.outcome.replace("_", " ")}${answer.cached ? " (cached)" : ""} · ${formatTime(answer.createdAt)}${answer.model ? ` · ${answer.model}` : ""}`));
  if (answer.refusal) parts.push(el("p", { class: "notice notice-info refusal", role: "status", "data-testid": "refusal", "data-reason": answer.refusal.reason }, answer.refusal.sentence));
  if (answer.fallback) parts.push(notice(`No model wrote this answer (${answer.fallback}). Each sentence below is evidence, verbatim.`, "info"));
  if (answer.needsReview) parts.push(notice("Some claims could not be validated against the evidence: review before relying on them.", "warning"));
  if (answer.claims.length) {
    parts.push(
      el(
        "ol",
        { class: "claims", "data-testid": "claims" },
        answer.claims.map((claim) =>
          el(
            "li",
            { class: claim.supported ? "claim" : "claim unsupported" },
            el("p", {}, claim.text),
            el("p", { class: "claim-citations" }, claim.citations.map((number) => (citationsByNumber.has(number) ? citationChip(citationsByNumber.get(number), `#/answers/${answer.answerId}/citations/${number}`, `[${number}]`) : el("span", { class: "badge" }, `[${number}] withheld`))), claim.supported ? null : el("span", { class: "badge badge-warning" }, "not supported by the evidence")),
          ),
        ),
      ),
    );
  }
  if (answer.assumptions?.length) parts.push(el("h3", {}, "Assumptions"), el("ul", {}, answer.assumptions.map((text) => el("li", {}, text))));
  if (answer.withheld) parts.push(notice(`${answer.withheld} citation${answer.withheld === 1 ? " is" : "s are"} withheld: you can no longer read ${answer.withheld === 1 ? "its source" : "their sources"}.`, "warning"));
  if (answer.citations.length) {
    parts.push(el("h3", {}, "Citations"), el("ol", { class: "citations" }, answer.citations.map((citation) => el("li", { value: citation.number }, citationChip(citation, `#/answers/${answer.answerId}/citations/${citation.number}`, `[${citation.number}]`), el("blockquote", {}, citation.excerpt)))));
  }
  parts.push(confidence(answer));
  const saving = el("div", { role: "status" });
  if (answer.claims.length) {
    const target = artifactCollection(answer);
    if (target.collectionId) {
      parts.push(el("p", {}, el("button", { type: "button", onclick: () => saveAsArtifact(answer, target.collectionId).catch((error) => fill(saving, notice(error.message, "error"))) }, "Open as an artifact")), saving);
    } else {
      parts.push(el("p", { class: "hint" }, target.sentence));
    }
  }
  fill(target, ...parts);
}

export async function renderStoredAnswer(container, answerId) {
  const answer = await get(`/v1/answers/${answerId}`);
  const body = el("div", { "data-testid": "answer" });
  fill(container, el("h2", {}, answer.question), el("p", {}, el("a", { href: "#/search" }, "← Search and ask")), body);
  renderAnswer(body, answer);
}

export function renderSearch(container, params) {
  const input = el("input", { id: "query", type: "search", required: true, maxlength: 2000, value: params.get("q") || "", autocomplete: "off" });
  const mode = el("select", { id: "mode" }, ["hybrid", "keyword", "semantic"].map((name) => el("option", { value: name, selected: name === (params.get("mode") || "hybrid") }, name)));
  const collections = caller.me?.collections || [];
  const scope = el("select", { id: "scope" }, el("option", { value: "" }, "every collection I read"), collections.map((name) => el("option", { value: name }, name)));
  const results = el("section", { "aria-label": "Results", "data-testid": "results" });
  const filters = () => (scope.value ? { collections: [scope.value] } : undefined);
  const run = async (kind) => {
    const question = input.value.trim();
    if (!question) {
      input.focus();
      return;
    }
    fill(results, notice(kind === "ask" ? "Answering…" : "Searching…"));
    try {
      if (kind === "ask") {
        const answer = await post("/v1/answer", { question, mode: mode.value, filters: filters() });
        history.replaceState(null, "", `#/answers/${answer.answerId}`);
        const body = el("div", { "data-testid": "answer" });
        fill(results, el("h3", {}, question), body);
        renderAnswer(body, answer);
      } else {
        history.replaceState(null, "", `#/search?q=${encodeURIComponent(question)}&mode=${mode.value}`);
        renderResults(results, await post("/v1/search", { query: question, mode: mode.value, filters: filters() }));
      }
    } catch (error) {
      fill(results, notice(error.message, "error"));
    }
  };
  const form = el(
    "form",
    { class: "search", role: "search", onsubmit: (event) => { event.preventDefault(); run("search"); } },
    el("label", { for: "query" }, "Search or ask"),
    input,
    el("label", { for: "mode" }, "Mode"),
    mode,
    el("label", { for: "scope" }, "In"),
    scope,
    el("button", { type: "submit" }, "Search"),
    el("button", { type: "button", onclick: () => run("ask") }, "Ask"),
  );
  fill(container, el("h2", {}, "Search and ask"), form, results);
  if (input.value) run("search");
}
