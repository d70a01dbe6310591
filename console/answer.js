// A grounded answer: its claims with numbered citations, the refusal sentence or the evidence-only note, the
// confidence band and factors, and saving it as an artifact. A stored answer has an address (#/answers/{id}),
// as each of its citations has (#/answers/{id}/citations/{n}): they are re-checked against what the caller reads now.

import { get, post } from "./api.js";
import { el, fill, notice, formatTime } from "./dom.js";
import { citationChip, showCitation } from "./source.js";
import { collectionsWith } from "./state.js";

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
    el(
      "table",
      {},
      el(
        "tbody",
        {},
        Object.entries(factors).map(([name, value]) =>
          el(
            "tr",
            {},
            el("th", { scope: "row" }, FACTOR_NAMES[name] || name),
            el("td", {}, typeof value === "number" && !Number.isInteger(value) ? value.toFixed(3) : String(value)),
          ),
        ),
      ),
    ),
  );
}

/** Claims ending "[n]" → the artifact's Markdown, citing the answer's citations in their own order. */
export function answerMarkdown(answer) {
  const lines = [`# ${answer.question.replace(/\s+/g, " ").trim()}`, ""];
  for (const claim of answer.claims) {
    const marks = claim.citations.map((number) => `[${number}]`).join("");
    lines.push(
      `${claim.text
        .replace(/\s+/g, " ")
        .replace(/\[(\d+)\]/g, "($1)")
        .trim()}${marks ? ` ${marks}` : ""}`,
      "",
    );
  }
  return `${lines.join("\n").trim()}\n`;
}

/**
 * The collection an answer can be saved into as an artifact, or the sentence saying why it cannot: an artifact
 * lives in one collection and may cite only what that collection holds, and saving needs the write role there.
 */
export function artifactCollection(answer) {
  const cited = [...new Set(answer.citations.map((citation) => citation.collectionId))];
  if (cited.length > 1)
    return {
      sentence: `This answer cites ${cited.length} collections (${cited.join(", ")}); an artifact cites one collection's files.`,
    };
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
  const claims = answer.claims.map((claim) => ({
    ...claim,
    citations: claim.citations.map(position).filter((n) => n > 0),
  }));
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
  parts.push(
    el(
      "p",
      { class: "answer-meta" },
      `Outcome: ${answer.outcome.replace("_", " ")}${answer.cached ? " (cached)" : ""} · ${formatTime(answer.createdAt)}${answer.model ? ` · ${answer.model}` : ""}`,
    ),
  );
  if (answer.refusal)
    parts.push(
      el(
        "p",
        {
          class: "notice notice-info refusal",
          role: "status",
          "data-testid": "refusal",
          "data-reason": answer.refusal.reason,
        },
        answer.refusal.sentence,
      ),
    );
  if (answer.fallback)
    parts.push(
      notice(`No model wrote this answer (${answer.fallback}). Each sentence below is evidence, verbatim.`, "info"),
    );
  if (answer.needsReview)
    parts.push(
      notice("Some claims could not be validated against the evidence: review before relying on them.", "warning"),
    );
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
            el(
              "p",
              { class: "claim-citations" },
              claim.citations.map((number) =>
                citationsByNumber.has(number)
                  ? citationChip(
                      citationsByNumber.get(number),
                      `#/answers/${answer.answerId}/citations/${number}`,
                      `[${number}]`,
                    )
                  : el("span", { class: "badge" }, `[${number}] withheld`),
              ),
              claim.supported ? null : el("span", { class: "badge badge-warning" }, "not supported by the evidence"),
            ),
          ),
        ),
      ),
    );
  }
  if (answer.assumptions?.length)
    parts.push(
      el("h3", {}, "Assumptions"),
      el(
        "ul",
        {},
        answer.assumptions.map((text) => el("li", {}, text)),
      ),
    );
  if (answer.withheld)
    parts.push(
      notice(
        `${answer.withheld} citation${answer.withheld === 1 ? " is" : "s are"} withheld: you can no longer read ${answer.withheld === 1 ? "its source" : "their sources"}.`,
        "warning",
      ),
    );
  if (answer.citations.length) {
    parts.push(
      el("h3", {}, "Citations"),
      el(
        "ol",
        { class: "citations" },
        answer.citations.map((citation) =>
          el(
            "li",
            { value: citation.number },
            citationChip(citation, `#/answers/${answer.answerId}/citations/${citation.number}`, `[${citation.number}]`),
            el("blockquote", {}, citation.excerpt),
          ),
        ),
      ),
    );
  }
  parts.push(confidence(answer));
  const saving = el("div", { role: "status" });
  if (answer.claims.length) {
    const target = artifactCollection(answer);
    if (target.collectionId) {
      parts.push(
        el(
          "p",
          {},
          el(
            "button",
            {
              type: "button",
              onclick: () =>
                saveAsArtifact(answer, target.collectionId).catch((error) =>
                  fill(saving, notice(error.message, "error")),
                ),
            },
            "Open as an artifact",
          ),
        ),
        saving,
      );
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

/** #/answers/{id}/citations/{n}: the cited spot of a stored answer's citation, read back from the answer. */
export async function renderAnswerCitation(container, answerId, number) {
  const answer = await get(`/v1/answers/${answerId}`);
  const citation = answer.citations.find((candidate) => String(candidate.number) === number);
  if (!citation)
    fill(
      container,
      el("h2", {}, "Citation"),
      notice(
        "That citation is withheld: you can no longer read its source, or the answer has no such number.",
        "warning",
      ),
    );
  else
    await showCitation(container, citation, {
      backHref: `#/answers/${answerId}`,
      heading: `Citation [${citation.number}]`,
    });
}
