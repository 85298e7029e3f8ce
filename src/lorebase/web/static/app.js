// The page's entry: sign-in, the header (with the light/dark switch), and a hash router over
// the views.
import { api, ApiError, setCsrf } from "./api.js";
import { fill, flash, h, loading } from "./dom.js";
import { basesView } from "./bases.js";
import { documentsView } from "./documents.js";
import { searchView } from "./search.js";
import { documentView } from "./document.js";
import { askView } from "./ask.js";
import { statusView } from "./status.js";
import { auditView } from "./audit.js";
import { usageView } from "./usage.js";

const routes = {
  bases: basesView,
  kb: documentsView,
  search: searchView,
  doc: documentView,
  ask: askView,
  status: statusView,
  audit: auditView,
  usage: usageView,
};
// The header tab each view belongs to (a base's documents and a document are under the bases).
const TABS = { bases: "bases", kb: "bases", doc: "bases", search: "search", ask: "ask", status: "status", audit: "audit", usage: "usage" };
const THEME_KEY = "lorebase.theme";

export const session = { user: null, role: null, teams: [], auth: true };
let leave = null; // the current view's clean-up
// Every navigation gets a number; a view whose requests answer after a later navigation
// renders into a box that is no longer on the page, and its clean-up runs at once.
let navigation = 0;

function parseHash() {
  const [path, query = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const [name, id] = path.split("/");
  return { name: name || "bases", id: id ? decodeURIComponent(id) : null, params: new URLSearchParams(query) };
}

function highlight(name) {
  const tab = TABS[name] || "bases";
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.getAttribute("href") === `#/${tab}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function render() {
  if (leave) { leave(); leave = null; }
  const token = ++navigation;
  const main = document.getElementById("view");
  const route = parseHash();
  const show = routes[route.name] || basesView;
  highlight(route.name);
  // The view's own box, showing that it loads until the view fills it.
  const view = h("div", { class: "view", "aria-busy": "true" }, loading("Loading…"));
  fill(main, view);
  fill(document.getElementById("flash"));
  let cleanUp = null;
  try {
    cleanUp = (await show(view, route, session)) || null;
  } catch (error) {
    if (token !== navigation) return;
    if (error instanceof ApiError && error.status === 401) return signInView();
    fill(view, h("p", { class: "error" }, error.message));
  } finally {
    view.removeAttribute("aria-busy");
    view.querySelector(":scope > .loading")?.remove();
  }
  if (token !== navigation) {
    cleanUp?.(); // a later navigation owns the page now
    return;
  }
  leave = cleanUp;
}

function showSession(info) {
  Object.assign(session, info);
  setCsrf(info.csrf);
  document.getElementById("nav").hidden = false;
  fill(document.getElementById("who"), info.auth ? `${info.user} (${info.role})` : "no sign-in (local)");
  document.getElementById("sign-out").hidden = !info.auth;
  document.getElementById("audit-tab").hidden = info.role !== "admin";
}

// Conversations quote the knowledge bases: once a session is over (signed out, expired,
// revoked) the browser keeps none, since it may be shared.
function forgetConversations() {
  for (const name of Object.keys(localStorage)) {
    if (name.startsWith("lorebase.conversations.")) localStorage.removeItem(name);
  }
}

function signInView() {
  if (leave) { leave(); leave = null; }
  forgetConversations();
  navigation++;
  document.getElementById("nav").hidden = true;
  document.getElementById("sign-out").hidden = true;
  fill(document.getElementById("who"));
  const key = h("input", { id: "key", name: "key", type: "password", autocomplete: "off", required: true, spellcheck: "false", "aria-describedby": "key-help" });
  const send = h("button", { type: "submit" }, "Sign in");
  const form = h("form", { class: "card narrow", id: "sign-in" },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste an API key. It is exchanged for a session that ends when you sign out, after 12 hours, or when the key is revoked; the page does not keep the key."),
    h("label", { for: "key" }, "API key"), key,
    h("div", { id: "key-help", class: "muted where-keys" },
      h("p", {}, "Where a key comes from:"),
      h("ul", {},
        h("li", {}, "the first time ", h("code", {}, "lorebase serve"), " starts, it prints an administrator's key once;"),
        h("li", {}, "whoever runs the server makes one for a user with ", h("code", {}, "lorebase keys create USER"), ";"),
        h("li", {}, "otherwise, ask your administrator for one."))),
    send);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    send.disabled = true;
    form.setAttribute("aria-busy", "true");
    try {
      showSession(await api("POST", "/v1/session", { key: key.value.trim() }));
      key.value = "";
      flash("Signed in.");
      await render();
    } catch (error) {
      flash(error.status === 401 ? "That key is not valid (unknown, expired or revoked)." : error.message, "error");
    } finally {
      send.disabled = false;
      form.removeAttribute("aria-busy");
    }
  });
  fill(document.getElementById("view"), form);
  key.focus();
}

async function signOut() {
  try { await api("DELETE", "/v1/session"); } catch { /* signed out anyway */ }
  setCsrf(null);
  flash("Signed out; this browser's conversations were cleared.");
  signInView();
}

// Light or dark: the system's choice until the switch is used, then the switch's (kept in
// this browser).
function systemDark() {
  return window.matchMedia?.("(prefers-color-scheme: dark)").matches ?? false;
}

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  const dark = theme ? theme === "dark" : systemDark();
  const button = document.getElementById("theme");
  button.setAttribute("aria-pressed", String(dark));
  fill(button, dark ? "Light mode" : "Dark mode");
}

function storedTheme() {
  try { return localStorage.getItem(THEME_KEY); } catch { return null; }
}

function startTheme() {
  const button = document.getElementById("theme");
  button.hidden = false;
  applyTheme(storedTheme());
  button.addEventListener("click", () => {
    const dark = button.getAttribute("aria-pressed") === "true";
    const theme = dark ? "light" : "dark";
    try { localStorage.setItem(THEME_KEY, theme); } catch { /* not kept: still switched */ }
    applyTheme(theme);
  });
  window.matchMedia?.("(prefers-color-scheme: dark)").addEventListener("change", () => applyTheme(storedTheme()));
}

async function start() {
  startTheme();
  document.getElementById("sign-out").addEventListener("click", signOut);
  window.addEventListener("hashchange", render);
  // A file dropped where no view takes it must not replace the page with the file.
  for (const kind of ["dragover", "drop"]) window.addEventListener(kind, (event) => event.preventDefault());
  try {
    showSession(await api("GET", "/v1/session"));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signInView();
    flash(`The server did not answer: ${error.message}`, "error");
    return;
  }
  await render();
}

start();
