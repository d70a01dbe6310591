// The tab's kept citations: a search hit's citation snapshot, kept in sessionStorage under a random id that its
// address (#/cite/{id}) names, so the address survives a reload and never carries the snapshot itself.

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
      if (keep < kept.length)
        addresses = null; // the oldest were dropped: built again from what is kept
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
      return kept.filter(
        (entry) => Array.isArray(entry) && typeof entry[0] === "string" && entry[1] && typeof entry[1] === "object",
      );
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
