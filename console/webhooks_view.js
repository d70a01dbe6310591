// The Webhooks views, for a collection admin (the API shows a webhook only to an admin of every collection it names):
// the list with each webhook's standing, registering one (its signing secret shown this once, with a copy button),
// and one webhook with its actions (send a test, rotate the secret, enable, delete) and its deliveries (state,
// attempts, the last outcome, replay, the exact body sent). Every refusal is the API's own sentence.

import { ApiError, del, get, id, post, query } from "./api.js";
import { el, fill, formatTime, moreButton, notice } from "./dom.js";
import { EVENT_TYPES } from "./events.js";
import { collectionsWith } from "./state.js";
import {
  bodyText,
  deliveryOutcome,
  eventsLabel,
  fieldOfError,
  webhookPayload,
  webhookStanding,
  withDelivery,
} from "./webhooks.js";

const DELIVERY_PAGE = 25;
// After a test or a replay, its delivery is read again this often while it is pending, this many times.
const SETTLE_MILLISECONDS = 1000;
const SETTLE_TRIES = 15;
const sleep = (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds));

function notAdmin(container) {
  fill(
    container,
    el("h2", {}, "Webhooks"),
    notice("Webhooks are for collection admins: your token grants no collection the admin role.", "warning"),
  );
}

/** The secret, shown once: a read-only field, a copy button, and the note that it is never shown again. */
function secretPanel(target, secret, what) {
  const field = el("input", {
    id: "webhook-secret",
    value: secret,
    readonly: true,
    spellcheck: "false",
    autocomplete: "off",
    size: Math.min(secret.length + 2, 60),
    "data-testid": "webhook-secret-value",
  });
  const said = el("span", { role: "status", "data-testid": "copy-status" });
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      fill(said, " Copied.");
    } catch {
      field.select(); // no clipboard for this page (an insecure origin, a denied permission): selected to copy by hand
      fill(said, " Selected: copy it with Ctrl+C (⌘C).");
    }
  };
  fill(
    target,
    el(
      "section",
      { class: "secret", "aria-labelledby": "secret-heading", "data-testid": "webhook-secret" },
      el("h3", { id: "secret-heading" }, what),
      notice(
        "Shown only now: copy it into your endpoint's configuration. Quire never shows it again; rotate the secret to get a new one.",
        "warning",
      ),
      el("label", { for: "webhook-secret" }, "Signing secret "),
      field,
      " ",
      el("button", { type: "button", "data-testid": "copy-secret", onclick: copy }, "Copy"),
      said,
      el("p", {}, el("button", { type: "button", class: "link", onclick: () => fill(target) }, "I have copied it")),
    ),
  );
}

function standingCell(webhook) {
  const standing = webhookStanding(webhook, formatTime);
  return el(
    "td",
    { class: standing.kind === "ok" ? null : "failed", "data-state": standing.label },
    standing.label,
    standing.sentence ? el("span", { class: "sentence" }, standing.sentence) : null,
  );
}

function webhookRow(webhook) {
  return el(
    "tr",
    { "data-webhook-id": webhook.webhookId },
    el("td", {}, el("a", { href: `#/webhooks/${webhook.webhookId}` }, webhook.url)),
    standingCell(webhook),
    el("td", {}, eventsLabel(webhook.events)),
    el("td", {}, webhook.collectionIds.join(", ")),
    el("td", {}, webhook.description || "—"),
    el("td", {}, formatTime(webhook.createdAt)),
  );
}

/** A checkbox with its label, in a list. */
function checkbox(name, value, label, checked = false) {
  const box = el("input", { type: "checkbox", id: `${name}-${value}`, name, value, checked });
  return { box, item: el("li", {}, box, " ", el("label", { for: box.id }, label)) };
}

function fieldError(field) {
  return el("span", { id: `webhook-${field}-error`, class: "field-error", role: "alert" });
}

/** The registration form; `added({webhook, secret})` once the API registered it. */
function addForm(administered, added) {
  const errors = Object.fromEntries(["url", "events", "collectionIds", "description"].map((f) => [f, fieldError(f)]));
  const url = el("input", {
    id: "webhook-url",
    type: "url",
    size: 60,
    placeholder: "https://example.com/quire-events",
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": errors.url.id,
  });
  const all = checkbox("webhook-events", "all", "All events (*), and any type added later");
  const types = EVENT_TYPES.map((type) => checkbox("webhook-events", type, type));
  const syncAll = () => types.forEach(({ box }) => (box.disabled = all.box.checked));
  all.box.addEventListener("change", syncAll);
  const collections = administered.map((name) =>
    checkbox("webhook-collections", name, name, administered.length === 1),
  );
  const description = el("textarea", {
    id: "webhook-description",
    rows: 2,
    maxlength: 500,
    "aria-describedby": errors.description.id,
  });
  const status = el("div", { "data-testid": "webhook-form-status" });
  const submit = el("button", { type: "submit" }, "Add webhook");
  const clear = () => {
    Object.values(errors).forEach((error) => fill(error));
    fill(status);
  };
  const show = (field, sentence) => fill(errors[field], sentence);
  const form = el(
    "form",
    {
      class: "webhook-form",
      novalidate: true, // the API's rules are said beside each field, in its words, not the browser's
      "data-testid": "webhook-form",
      onsubmit: async (event) => {
        event.preventDefault();
        clear();
        const made = webhookPayload({
          url: url.value,
          all: all.box.checked,
          events: types.filter(({ box }) => box.checked).map(({ box }) => box.value),
          collections: collections.filter(({ box }) => box.checked).map(({ box }) => box.value),
          description: description.value,
        });
        if (made.errors) {
          for (const [field, sentence] of Object.entries(made.errors)) show(field, sentence);
          fill(status, notice("Some fields cannot be sent as they are: see beside them.", "error"));
          return;
        }
        submit.disabled = true; // a double click must not register it twice
        try {
          const registered = await post("/v1/webhooks", made.body);
          form.reset();
          syncAll();
          collections.forEach(({ box }) => (box.checked = administered.length === 1));
          await added(registered);
        } catch (error) {
          const field = error instanceof ApiError && error.status === 400 ? fieldOfError(error.message) : null;
          if (field) show(field, error.message);
          fill(status, notice(error.message, "error"));
        } finally {
          submit.disabled = false;
        }
      },
    },
    el("label", { for: "webhook-url" }, "Endpoint URL"),
    url,
    errors.url,
    el(
      "fieldset",
      { "aria-describedby": errors.events.id },
      el("legend", {}, "Events"),
      el(
        "ul",
        { class: "checks" },
        all.item,
        types.map(({ item }) => item),
      ),
      errors.events,
    ),
    el(
      "fieldset",
      { "aria-describedby": errors.collectionIds.id },
      el("legend", {}, "Collections (those you administer)"),
      el(
        "ul",
        { class: "checks" },
        collections.map(({ item }) => item),
      ),
      errors.collectionIds,
    ),
    el("label", { for: "webhook-description" }, "Description (optional)"),
    description,
    errors.description,
    el("p", {}, submit),
    status,
  );
  return form;
}

export async function renderWebhooks(container) {
  const administered = collectionsWith("admin");
  if (!administered.length) {
    notAdmin(container);
    return;
  }
  const secretArea = el("div");
  const body = el("tbody");
  const list = async () => {
    const { webhooks } = await get("/v1/webhooks");
    fill(
      body,
      webhooks.length
        ? webhooks.map(webhookRow)
        : el("tr", {}, el("td", { colspan: 6 }, "No webhooks yet: add one below.")),
    );
  };
  fill(
    container,
    el("h2", {}, "Webhooks"),
    el(
      "p",
      { class: "hint" },
      "An endpoint is sent each event of the collections it names, signed with its secret (Standard Webhooks). " +
        "Only an admin of every collection a webhook names sees it.",
    ),
    secretArea,
    el(
      "table",
      { class: "webhooks", "aria-label": "Webhooks" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["URL", "State", "Events", "Collections", "Description", "Added"].map((title) =>
            el("th", { scope: "col" }, title),
          ),
        ),
      ),
      body,
    ),
    el("h3", {}, "Add a webhook"),
    addForm(administered, async ({ webhook, secret }) => {
      secretPanel(secretArea, secret, `Webhook added: ${webhook.url}`);
      await list();
      secretArea.querySelector("h3")?.scrollIntoView({ block: "nearest" });
    }),
  );
  await list();
}

function deliveryRows(webhookId, delivery, replaced) {
  const bodyRow = el(
    "tr",
    { class: "delivery-body", hidden: true },
    el("td", { colspan: 7 }, el("pre", { class: "markdown-source" }, bodyText(delivery.body))),
  );
  const toggle = el("button", { type: "button", class: "link", "aria-expanded": "false" }, "Body");
  toggle.addEventListener("click", () => {
    bodyRow.hidden = !bodyRow.hidden;
    toggle.setAttribute("aria-expanded", String(!bodyRow.hidden));
  });
  const problem = el("span", { role: "status" });
  const replay = el(
    "button",
    {
      type: "button",
      "aria-label": `Replay the ${delivery.eventType} delivery of ${formatTime(delivery.createdAt)}`,
      onclick: async () => {
        replay.disabled = true;
        try {
          replaced(await post(`/v1/webhooks/${webhookId}/deliveries/${delivery.deliveryId}/replay`));
        } catch (error) {
          fill(problem, notice(error.message, "error"));
          replay.disabled = false;
        }
      },
    },
    "Replay",
  );
  const row = el(
    "tr",
    { "data-delivery-id": delivery.deliveryId, "data-state": delivery.state, "data-testid": "delivery" },
    el("td", { class: delivery.state === "failed" ? "failed" : null }, delivery.state),
    el("td", {}, delivery.eventType),
    el("td", {}, String(delivery.attempts)),
    el("td", {}, deliveryOutcome(delivery)),
    el("td", {}, formatTime(delivery.createdAt)),
    el(
      "td",
      {},
      delivery.finishedAt
        ? formatTime(delivery.finishedAt)
        : delivery.nextAttemptAt
          ? `next try ${formatTime(delivery.nextAttemptAt)}`
          : "—",
    ),
    el("td", {}, replay, " ", toggle, problem),
  );
  return [row, bodyRow];
}

/** One webhook: what it is, its actions, and its deliveries, newest first. */
export async function renderWebhook(container, webhookId) {
  if (!collectionsWith("admin").length) {
    notAdmin(container);
    return;
  }
  let webhook = await get(`/v1/webhooks/${id(webhookId)}`);
  const facts = el("dl", { class: "facts", "data-testid": "webhook-facts" });
  const secretArea = el("div");
  const status = el("div", { "data-testid": "webhook-status" });
  const actions = el("p", { class: "actions" });
  const body = el("tbody");
  const more = el("div");
  let shown = [];

  const showFacts = () => {
    const standing = webhookStanding(webhook, formatTime);
    fill(
      facts,
      el("dt", {}, "URL"),
      el("dd", {}, el("code", {}, webhook.url)),
      el("dt", {}, "State"),
      el(
        "dd",
        { "data-testid": "webhook-state", "data-state": standing.label },
        standing.label,
        standing.sentence ? el("span", { class: "sentence" }, standing.sentence) : null,
      ),
      el("dt", {}, "Events"),
      el("dd", {}, eventsLabel(webhook.events)),
      el("dt", {}, "Collections"),
      el("dd", {}, webhook.collectionIds.join(", ")),
      el("dt", {}, "Description"),
      el("dd", {}, webhook.description || "—"),
      el("dt", {}, "Added"),
      el("dd", {}, `${formatTime(webhook.createdAt)} by ${webhook.createdBy}`),
      webhook.previousSecretExpiresAt
        ? [
            el("dt", {}, "Previous secret"),
            el("dd", {}, `still signs beside the new one until ${formatTime(webhook.previousSecretExpiresAt)}`),
          ]
        : null,
    );
    showActions();
  };
  const act = async (work) => {
    fill(status);
    for (const button of actions.querySelectorAll("button")) button.disabled = true;
    try {
      await work();
    } catch (error) {
      fill(status, notice(error.message, "error"));
    } finally {
      for (const button of actions.querySelectorAll("button")) button.disabled = false;
    }
  };
  const showDeliveries = (deliveries, append = false) => {
    shown = append ? [...shown, ...deliveries] : deliveries;
    const rows = shown.flatMap((delivery) => deliveryRows(webhook.webhookId, delivery, replaced));
    fill(
      body,
      rows.length ? rows : el("tr", {}, el("td", { colspan: 7 }, "No deliveries yet: send a test to see one.")),
    );
  };
  const loadDeliveries = async (cursor) => {
    const page = await get(`/v1/webhooks/${webhook.webhookId}/deliveries${query({ limit: DELIVERY_PAGE, cursor })}`);
    showDeliveries(page.deliveries, Boolean(cursor));
    fill(more, page.nextCursor ? moreButton("Older deliveries", () => loadDeliveries(page.nextCursor)) : null);
    return page.deliveries;
  };
  // A test or a replay: shown at once, then read again while it is pending and this view is shown.
  const settle = async (delivery) => {
    for (let tries = 0; tries < SETTLE_TRIES && container.isConnected; tries += 1) {
      const now = shown.find((each) => each.deliveryId === delivery.deliveryId);
      if (now && now.state !== "pending") return;
      await sleep(SETTLE_MILLISECONDS);
      if (!container.isConnected) return;
      const page = await get(`/v1/webhooks/${webhook.webhookId}/deliveries${query({ limit: DELIVERY_PAGE })}`);
      showDeliveries(page.deliveries);
    }
  };
  function replaced(delivery) {
    showDeliveries(withDelivery(shown, delivery));
    fill(status, notice(`Sent again: ${delivery.eventType}, as it was first sent, under the same webhook-id.`));
    settle(delivery).catch((error) => fill(status, notice(error.message, "error")));
  }
  function showActions() {
    fill(
      actions,
      el(
        "button",
        {
          type: "button",
          onclick: () =>
            act(async () => {
              const delivery = await post(`/v1/webhooks/${webhook.webhookId}/test`);
              showDeliveries(withDelivery(shown, delivery));
              fill(status, notice("A webhook.test message is on its way: its delivery is listed below."));
              settle(delivery).catch((error) => fill(status, notice(error.message, "error")));
            }),
        },
        "Send a test",
      ),
      " ",
      el(
        "button",
        {
          type: "button",
          onclick: () =>
            act(async () => {
              if (!confirm("Rotate the signing secret? The current one keeps signing beside the new one for 24 hours."))
                return;
              const rotated = await post(`/v1/webhooks/${webhook.webhookId}/rotate-secret`);
              webhook = rotated.webhook;
              showFacts();
              secretPanel(secretArea, rotated.secret, "New signing secret");
            }),
        },
        "Rotate secret",
      ),
      " ",
      webhook.state === "disabled"
        ? el(
            "button",
            {
              type: "button",
              onclick: () =>
                act(async () => {
                  webhook = await post(`/v1/webhooks/${webhook.webhookId}/enable`);
                  showFacts();
                  fill(status, notice("Enabled: deliveries resume."));
                }),
            },
            "Enable",
          )
        : null,
      " ",
      el(
        "button",
        {
          type: "button",
          class: "danger",
          onclick: () =>
            act(async () => {
              if (!confirm(`Delete the webhook to ${webhook.url}? Nothing more is sent to it.`)) return;
              await del(`/v1/webhooks/${webhook.webhookId}`);
              location.hash = "#/webhooks";
            }),
        },
        "Delete",
      ),
    );
  }

  fill(
    container,
    el("h2", {}, "Webhook"),
    el("p", {}, el("a", { href: "#/webhooks" }, "← Webhooks")),
    facts,
    actions,
    status,
    secretArea,
    el("h3", {}, "Deliveries"),
    el("p", {}, el("button", { type: "button", onclick: () => act(() => loadDeliveries(null)) }, "Refresh deliveries")),
    el(
      "table",
      { class: "deliveries", "aria-label": "Deliveries" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["State", "Event", "Attempts", "Last outcome", "Created", "Finished", ""].map((title) =>
            el("th", { scope: "col" }, title),
          ),
        ),
      ),
      body,
    ),
    more,
  );
  showFacts();
  await loadDeliveries(null);
}
