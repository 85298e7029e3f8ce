// The page's entry: sign-in, the header, and a hash router over the views.
import { api, ApiError, setCsrf } from "./api.js";
import { fill, flash, h } from "./dom.js";
import { basesView } from "./bases.js";
import { documentsView } from "./documents.js";
import { searchView } from "./search.js";
import { documentView } from "./document.js";
import { askView } from "./ask.js";
import { statusView } from "./status.js";

const routes = {
  bases: basesView,
  kb: documentsView,
  search: searchView,
  doc: documentView,
  ask: askView,
  status: statusView,
};

export const session = { user: null, role: null, teams: [], auth: true };
let leave = null; // the current view's clean-up

function parseHash() {
  const [path, query = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const [name, id] = path.split("/");
  return { name: name || "bases", id: id ? decodeURIComponent(id) : null, params: new URLSearchParams(query) };
}

async function render() {
  if (leave) { leave(); leave = null; }
  const view = document.getElementById("view");
  const route = parseHash();
  const show = routes[route.name] || basesView;
  for (const link of document.querySelectorAll("#nav a")) {
    const current = link.getAttribute("href") === `#/${route.name}`;
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  fill(view);
  fill(document.getElementById("flash"));
  try {
    leave = (await show(view, route, session)) || null;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signInView();
    fill(view, h("p", { class: "error" }, error.message));
  }
}

function showSession(info) {
  Object.assign(session, info);
  setCsrf(info.csrf);
  document.getElementById("nav").hidden = false;
  fill(document.getElementById("who"), info.auth ? `${info.user} (${info.role})` : "no sign-in (local)");
  document.getElementById("sign-out").hidden = !info.auth;
}

function signInView() {
  if (leave) { leave(); leave = null; }
  document.getElementById("nav").hidden = true;
  document.getElementById("sign-out").hidden = true;
  fill(document.getElementById("who"));
  const key = h("input", { id: "key", name: "key", type: "password", autocomplete: "off", required: true, spellcheck: "false" });
  const form = h("form", { class: "card narrow", id: "sign-in" },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste an API key. It is exchanged for a session that ends when you sign out, after 12 hours, or when the key is revoked; the page does not keep the key."),
    h("label", { for: "key" }, "API key"), key,
    h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      showSession(await api("POST", "/v1/session", { key: key.value.trim() }));
      key.value = "";
      flash("Signed in.");
      await render();
    } catch (error) {
      flash(error.status === 401 ? "That key is not valid (unknown, expired or revoked)." : error.message, "error");
    }
  });
  fill(document.getElementById("view"), form);
  key.focus();
}

async function signOut() {
  try { await api("DELETE", "/v1/session"); } catch { /* signed out anyway */ }
  setCsrf(null);
  flash("Signed out.");
  signInView();
}

async function start() {
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
