// DOM helpers. Every text from a document, a file name or the API goes in through textContent (el's string
// children): nothing the console shows is ever parsed as HTML.

/** An element with attributes and children; strings become text nodes, null and false are skipped. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "style") Object.assign(node.style, value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value === true) node.setAttribute(name, "");
    else node.setAttribute(name, String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace everything inside `node` with `children`. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

/** A status line for screen readers and eyes: role=status announces it politely. */
export function notice(text, kind = "info") {
  return el("p", { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

export function formatBytes(bytes) {
  if (bytes === null || bytes === undefined) return "";
  const units = ["B", "KB", "MB", "GB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export function formatTime(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

export function shortId(id) {
  return id ? String(id).slice(0, 8) : "";
}

/** A button that loads more: disabled while it loads (a double click must not add the rows twice), and a
 * failure said beside it rather than lost. */
export function moreButton(label, load) {
  const problem = el("span", { role: "status" });
  const button = el(
    "button",
    {
      type: "button",
      onclick: async () => {
        button.disabled = true;
        problem.replaceChildren();
        try {
          await load();
        } catch (error) {
          problem.append(notice(error.message, "error"));
          button.disabled = false;
        }
      },
    },
    label,
  );
  return el("span", {}, button, problem);
}
