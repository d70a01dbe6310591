// Search and ask: hybrid search with cited hits; Ask shows a grounded answer (answer.js) in place, at the
// answer's own address.

import { post, query } from "./api.js";
import { renderAnswer } from "./answer.js";
import { citationHref } from "./citations.js";
import { el, fill, notice } from "./dom.js";
import { compactMetadata, discoverFacetKeys, facetBar, listFacets, showFacetProblem } from "./facets.js";
import { conditionsFromParam, filterOf, filterParam } from "./metadata.js";
import { citationChip, languageName } from "./source.js";
import { caller } from "./state.js";

/** The hit's language as a badge ("DE"), named in full on hover ("German (de)"). */
export function languageBadge(language) {
  if (!language) return null;
  return el(
    "span",
    { class: "badge language", "data-testid": "hit-language", title: languageName(language) },
    language.toUpperCase(),
  );
}

function hitItem(hit) {
  const language = hit.citation.language || undefined;
  const scores = [`score ${hit.score.toFixed(3)}`];
  if (hit.lexicalScore !== null && hit.lexicalScore !== undefined)
    scores.push(`keyword ${hit.lexicalScore.toFixed(3)}`);
  if (hit.vectorScore !== null && hit.vectorScore !== undefined) scores.push(`semantic ${hit.vectorScore.toFixed(3)}`);
  return el(
    "li",
    { class: "hit", "data-testid": "hit" },
    // Marked with its language for fonts and screen readers; dir auto lays out Arabic or Hebrew right to left.
    el("p", { class: "excerpt", lang: language, dir: "auto" }, hit.excerpt),
    el(
      "p",
      { class: "hit-meta" },
      citationChip(hit.citation, citationHref(hit.citation)),
      " ",
      el("span", { class: "scores" }, scores.join(" · ")),
      hit.directSubject ? el("span", { class: "badge" }, "names this document") : null,
      languageBadge(language),
    ),
    hit.citation.metadata && Object.keys(hit.citation.metadata).length
      ? el("p", { class: "hit-metadata" }, compactMetadata(hit.citation.metadata))
      : null,
  );
}

function renderResults(target, result) {
  if (result.outcome !== "found") {
    fill(
      target,
      el(
        "p",
        {
          class: "notice notice-info outcome",
          role: "status",
          "data-testid": "outcome",
          "data-outcome": result.outcome,
        },
        result.message,
      ),
    );
    return;
  }
  fill(
    target,
    el(
      "p",
      { role: "status" },
      `${result.hits.length} hit${result.hits.length === 1 ? "" : "s"}${result.vectorAvailable ? "" : " (keyword only: the semantic lane is unavailable)"}`,
    ),
    el("ol", { class: "hits" }, result.hits.map(hitItem)),
  );
}

export function renderSearch(container, params) {
  const input = el("input", {
    id: "query",
    type: "search",
    required: true,
    maxlength: 2000,
    value: params.get("q") || "",
    autocomplete: "off",
  });
  const mode = el(
    "select",
    { id: "mode" },
    ["hybrid", "keyword", "semantic"].map((name) =>
      el("option", { value: name, selected: name === (params.get("mode") || "hybrid") }, name),
    ),
  );
  const collections = caller.me?.collections || [];
  const scope = el(
    "select",
    { id: "scope" },
    el("option", { value: "" }, "every collection I read"),
    collections.map((name) => el("option", { value: name }, name)),
  );
  // Another scope counts other files: the chips follow it (a search with a query waits for its Search).
  scope.addEventListener("change", () => {
    if (!input.value.trim()) refreshFacets();
  });
  const results = el("section", { "aria-label": "Results", "data-testid": "results" });
  const facetArea = el("div");
  // The facet chips' filter, kept in the address (`filter`) with the query, so a reload searches the same way.
  const parsed = conditionsFromParam(params.get("filter"));
  let conditions = parsed.conditions;
  const filters = () => (scope.value ? { collections: [scope.value] } : undefined);
  const remember = () => {
    const q = input.value.trim();
    history.replaceState(
      null,
      "",
      `#/search${query({ q, mode: q ? mode.value : "", filter: filterParam(conditions) })}`,
    );
  };
  // Which keys to count: those the files the filter keeps hold (asked each time: a key added meanwhile shows).
  const facetKeys = async () => {
    try {
      return await discoverFacetKeys(scope.value, conditions);
    } catch (error) {
      showFacetProblem(facetArea, error);
      return null;
    }
  };
  const showChips = (facets, listKeys) => fill(facetArea, facetBar(facets, listKeys, conditions, filterBy));
  const refreshFacets = async () => {
    const found = await facetKeys();
    if (!found) return;
    try {
      showChips(await listFacets(scope.value, conditions, found.keys), found.listKeys);
    } catch (error) {
      showFacetProblem(facetArea, error);
    }
  };
  const run = async (kind) => {
    const question = input.value.trim();
    if (!question) {
      input.focus();
      return;
    }
    fill(results, notice(kind === "ask" ? "Answering…" : "Searching…"));
    const filter = filterOf(conditions);
    try {
      if (kind === "ask") {
        const answer = await post("/v1/answer", { question, mode: mode.value, filters: filters(), filter });
        history.replaceState(null, "", `#/answers/${answer.answerId}`);
        const body = el("div", { "data-testid": "answer" });
        fill(results, el("h3", {}, question), body);
        renderAnswer(body, answer);
      } else {
        remember();
        const found = await facetKeys();
        const result = await post("/v1/search", {
          query: question,
          mode: mode.value,
          filters: filters(),
          filter,
          facets: found?.keys.length ? found.keys : undefined,
        });
        // The search's own facets: counted over what it could look in, the filter applied.
        if (found) showChips(result.facets || {}, found.listKeys);
        renderResults(results, result);
      }
    } catch (error) {
      fill(results, notice(error.message, "error"));
    }
  };
  function filterBy(next) {
    conditions = next;
    if (input.value.trim()) run("search");
    else {
      remember();
      refreshFacets();
    }
  }
  const form = el(
    "form",
    {
      class: "search",
      role: "search",
      onsubmit: (event) => {
        event.preventDefault();
        run("search");
      },
    },
    el("label", { for: "query" }, "Search or ask"),
    input,
    el("label", { for: "mode" }, "Mode"),
    mode,
    el("label", { for: "scope" }, "In"),
    scope,
    el("button", { type: "submit" }, "Search"),
    el("button", { type: "button", onclick: () => run("ask") }, "Ask"),
  );
  fill(
    container,
    el("h2", {}, "Search and ask"),
    form,
    parsed.problem ? notice(`${parsed.problem}: searching without it.`, "warning") : null,
    facetArea,
    results,
  );
  if (input.value) run("search");
  else refreshFacets();
}
