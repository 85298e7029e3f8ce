// Building the page without HTML strings: every text goes in as a text node, so a document's
// name, title, heading or snippet can never become markup.

/** An element: h("a", {href: "#/x", class: "c"}, "text", child, ...). Strings become text. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace an element's content. */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** ``text`` as text nodes with the spans ``[start, end]`` (the server's ``highlights``: the
 * question's words, whole, in the passage's language, never stop words; offsets count
 * characters — code points — as the server does) wrapped in <mark>. */
export function highlighted(text, spans) {
  const out = document.createDocumentFragment();
  const chars = Array.from(text);
  let last = 0;
  for (const [start, end] of spans || []) {
    if (start < last || end > chars.length) continue;
    if (start > last) out.append(chars.slice(last, start).join(""));
    out.append(h("mark", {}, chars.slice(start, end).join("")));
    last = end;
  }
  if (last < chars.length) out.append(chars.slice(last).join(""));
  return out;
}

/** The words the server marked in a snippet (to mark them again in the whole passage). */
export function highlightedWords(text, spans) {
  const chars = Array.from(text);
  return [...new Set((spans || []).map(([start, end]) => chars.slice(start, end).join("")))];
}

// Scripts written without spaces: a word of them stands inside a run of letters.
const UNSPACED = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]+$/u;

/** ``text`` as text nodes with each of ``words`` wrapped in <mark> where it stands as a
 * whole word (never inside another word; split, never parsed). */
export function marked(text, words) {
  const out = document.createDocumentFragment();
  if (!words.length) {
    out.append(text);
    return out;
  }
  const whole = (w) => {
    const escaped = w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return UNSPACED.test(w) ? escaped : `(?<![\\p{L}\\p{M}\\p{N}])${escaped}(?![\\p{L}\\p{M}\\p{N}])`;
  };
  const pattern = new RegExp(words.map(whole).join("|"), "gu");
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) out.append(text.slice(last, match.index));
    out.append(h("mark", {}, match[0]));
    last = match.index + match[0].length;
  }
  if (last < text.length) out.append(text.slice(last));
  return out;
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

/** "about 3 min 05 s left" (seconds_left of a running pass; null: its rate is being measured),
 * as `lorebase status` says it. */
export function timeLeft(seconds) {
  if (seconds === null || seconds === undefined) return "estimating time left";
  if (seconds < 1) return "finishing";
  const whole = Math.round(seconds);
  if (whole < 60) return `about ${whole} s left`;
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `about ${minutes} min ${String(whole % 60).padStart(2, "0")} s left`;
  return `about ${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min left`;
}

export function when(epochSeconds) {
  if (!epochSeconds) return "never";
  return new Date(epochSeconds * 1000).toLocaleString();
}

/** Show a short message in the live region (errors stay until the next one). */
export function flash(message, kind = "info") {
  const box = document.getElementById("flash");
  fill(box, h("p", { class: `flash ${kind}` }, message));
}

/** A line saying something is on its way ("Searching…"): a polite status, styled as loading. */
export function loading(text) {
  return h("p", { class: "loading", role: "status" }, text);
}

/** Mark ``el`` busy (aria-busy) while ``promise`` runs; ``buttons`` are disabled meanwhile.
 * Returns the promise's result. */
export async function busyWhile(el, promise, ...buttons) {
  el.setAttribute("aria-busy", "true");
  for (const button of buttons) button.disabled = true;
  try {
    return await promise;
  } finally {
    el.removeAttribute("aria-busy");
    for (const button of buttons) button.disabled = false;
  }
}

/** A table that stacks at phone width: each body cell gets its column's heading (the
 * ``data-label`` the stylesheet shows before it), now and whenever rows are redrawn. */
export function stacked(table) {
  table.classList.add("stack");
  const label = () => {
    const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    for (const row of table.querySelectorAll("tbody tr")) {
      const cells = [...row.children];
      if (cells.length === 1) continue; // a message row spanning the table
      cells.forEach((cell, i) => { if (names[i]) cell.dataset.label = names[i]; });
    }
  };
  label();
  new MutationObserver(label).observe(table, { childList: true, subtree: false });
  for (const body of table.tBodies) new MutationObserver(label).observe(body, { childList: true });
  return table;
}
