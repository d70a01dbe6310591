// The console: sign in, then one view per address (#/upload, #/files, #/search, #/answers/…, #/cite/…,
// #/artifacts/…, #/webhooks/…; the table is routes.js). Every address can be reloaded or shared: what a view shows is fetched
// again from the API.

import { ApiError, configureApi } from "./api.js";
import {
  finishHostedSignIn,
  hasSignInKey,
  hostedSignOut,
  keepSignInKey,
  localSignIn,
  session,
  startHostedSignIn,
} from "./auth.js";
import { forgetCitations } from "./citations.js";
import { el, fill, notice } from "./dom.js";
import { forgetEvents, leaveView } from "./live.js";
import { routeOf } from "./routes.js";
import { configureParts } from "./resume.js";
import { caller, collectionsWith, loadCaller } from "./state.js";
import { forgetUploads } from "./upload.js";

let config = { apiBase: "", auth: { kind: "local" } };
const main = () => document.getElementById("main");

function signInView(container) {
  if (config.auth.kind === "cognito") {
    fill(
      container,
      el("h2", {}, "Sign in"),
      el("p", {}, "Sign in with your organisation's account."),
      el("button", { type: "button", onclick: () => startHostedSignIn(config.auth) }, "Sign in"),
    );
    return;
  }
  const problem = el("div");
  const token = el("textarea", { id: "token", rows: 4, spellcheck: "false", autocomplete: "off" });
  const collections = el("input", { id: "sign-in-collections", value: "default", autocomplete: "off" });
  const role = el(
    "select",
    { id: "sign-in-role" },
    ["admin", "write", "read"].map((name) => el("option", { value: name }, name)),
  );
  const pasted = el(
    "form",
    {
      onsubmit: (event) => {
        event.preventDefault();
        try {
          session.set(token.value);
        } catch (error) {
          fill(problem, notice(error.message, "error"));
        }
      },
    },
    el("h3", {}, "With a token"),
    el("p", {}, "Paste what ", el("code", {}, "quire token --collections default --write default"), " printed."),
    el("label", { for: "token" }, "Bearer token"),
    token,
    el("button", { type: "submit" }, "Use this token"),
  );
  const oneClick = el(
    "form",
    {
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          await localSignIn(
            collections.value
              .split(",")
              .map((name) => name.trim())
              .filter(Boolean),
            role.value,
          );
        } catch (error) {
          fill(problem, notice(error.message, "error"));
        }
      },
    },
    el("h3", {}, "Local sign-in"),
    el("p", {}, "The local stack signs you in to its own tenant, from this machine only."),
    hasSignInKey()
      ? null
      : notice("Open the console at the address `quire up` printed: it carries the stack's sign-in key.", "warning"),
    el("label", { for: "sign-in-collections" }, "Collections (comma-separated)"),
    collections,
    el("label", { for: "sign-in-role" }, "Role"),
    role,
    el("button", { type: "submit", "data-testid": "local-sign-in" }, "Sign in locally"),
  );
  fill(container, el("h2", {}, "Sign in"), problem, el("div", { class: "columns" }, oneClick, pasted));
}

function showWho() {
  const who = document.getElementById("who");
  const claims = session.claims();
  if (!claims) {
    fill(who);
    return;
  }
  const tenant = claims["custom:tenant_id"] || caller.me?.tenantId || "";
  fill(
    who,
    el("span", {}, `${caller.me?.subject || claims.sub} · tenant ${caller.me?.tenantId || tenant}`),
    " ",
    el(
      "button",
      {
        type: "button",
        onclick: () => (config.auth.kind === "cognito" ? hostedSignOut(config.auth) : session.clear()),
      },
      "Sign out",
    ),
  );
}

function markNavigation(view) {
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function show() {
  // Each address renders into a view of its own: a slower earlier view that finishes late writes into a view
  // no longer on the page, never over this one; and the view left stops following the event stream.
  leaveView();
  const container = el("div", { class: "view" });
  fill(main(), container);
  keepSignInKey(); // the printed address pasted into a tab already on the console arrives as a hash change
  if (!session.token()) {
    markNavigation(null);
    document.querySelector("nav").hidden = true;
    showWho();
    signInView(container);
    return;
  }
  document.querySelector("nav").hidden = false;
  const route = routeOf(location.hash);
  markNavigation(route?.navigation ?? null);
  fill(container, notice("Loading…"));
  try {
    if (!caller.me) await loadCaller();
    showWho();
    // Webhooks are a collection admin's: the link shows only to one (the API shows a webhook to no one else).
    document.querySelector('nav a[data-view="webhooks"]').parentElement.hidden = !collectionsWith("admin").length;
    if (route) await route.render(container, route.captured, route.params);
    else fill(container, el("h2", {}, "Not here"), el("p", {}, "No view has that address."));
  } catch (error) {
    const sentence =
      error instanceof ApiError && error.status === 404
        ? "Not found: it does not exist, or you may not read it."
        : error.message;
    fill(container, el("h2", {}, "Something went wrong"), notice(sentence, "error"));
  }
  // Keyboard and screen-reader users land on the new view's heading, not at the top of the page.
  const heading = container.querySelector("h2");
  if (heading) {
    heading.tabIndex = -1;
    heading.focus({ preventScroll: true });
  }
}

async function start() {
  try {
    const response = await fetch("config.json", { cache: "no-store" });
    if (response.ok) config = await response.json();
  } catch {
    // No config.json: the local stack's defaults (same origin, local sign-in).
  }
  configureApi(config.apiBase);
  configureParts(config.uploads);
  if (config.auth.kind === "cognito") {
    try {
      await finishHostedSignIn(config.auth);
    } catch (error) {
      fill(main(), notice(error.message, "error"));
    }
  }
  session.onChange((signedIn) => {
    if (!signedIn) {
      // Nothing of the last caller's stays in the tab: their citations' snapshots, their uploads.
      forgetCitations();
      forgetUploads();
      forgetEvents();
    }
    caller.me = null;
    show();
  });
  window.addEventListener("hashchange", show);
  await show();
}

start();
