// Status: the server's health, queue and models, and the caller's own API keys (create —
// the new key shown once —, revoke).
import { api } from "./api.js";
import { fill, flash, h, stacked, when } from "./dom.js";
import { embedderKeysSection } from "./embedder_keys.js";

async function probe(path) {
  try {
    const response = await fetch(path, { credentials: "same-origin" });
    return response.ok ? "ok" : `not ready (HTTP ${response.status})`;
  } catch { return "no answer"; }
}

export async function statusView(view, route, session) {
  const [health, ready, server] = await Promise.all([probe("/healthz"), probe("/readyz"), api("GET", "/v1/status")]);
  // The named embedders, probed (a server that is down takes a moment to say so).
  const embedders = h("tbody", {}, h("tr", {}, h("td", { colspan: 4 }, "checking…")));
  api("GET", "/v1/embedders").then((listed) => fill(embedders, listed.map((e) => h("tr", { dataset: { embedder: e.name } },
    h("td", {}, h("span", { class: "name" }, e.name + (e.default ? " (default)" : ""))),
    h("td", {}, h("span", { class: "name" }, e.model ?? e.kind), e.url ? h("div", { class: "muted" }, e.url) : null),
    h("td", { class: "num" }, e.dimensions ? String(e.truncate ?? e.dimensions) : "?"),
    h("td", {}, e.reachable === false ? h("span", { class: "unreachable" }, `not answering (${e.detail ?? "no reason given"})`)
      : e.reachable ? h("span", { class: "reachable" }, "answers") : "not checked"))))).catch((error) => {
    fill(embedders, h("tr", {}, h("td", { colspan: 4 }, error.message)));
  });
  const keys = h("tbody");
  const shown = h("div", { id: "new-key", "aria-live": "polite" });

  async function loadKeys() {
    const list = await api("GET", "/v1/keys");
    fill(keys, list.length ? list.map((k) => h("tr", { dataset: { key: k.id } },
      h("td", {}, h("span", { class: "name" }, k.name || "(no name)")), h("td", {}, h("code", {}, `${k.prefix}…`)),
      h("td", {}, when(k.created_at)), h("td", {}, k.expires_at ? when(k.expires_at) : "never"),
      h("td", {}, k.revoked_at ? `revoked ${when(k.revoked_at)}` : "active"),
      h("td", {}, k.revoked_at ? null : h("button", { type: "button", class: "danger", onclick: async () => {
        try { await api("DELETE", `/v1/keys/${k.id}`); flash("Key revoked; sessions signed in with it have ended."); await loadKeys(); }
        catch (error) { flash(error.message, "error"); }
      } }, "Revoke")))) : h("tr", {}, h("td", { colspan: 6 }, "No keys.")));
  }

  const name = h("input", { id: "key-name", maxlength: 64 });
  const days = h("input", { id: "key-days", type: "number", min: 1, max: 3650, placeholder: "never" });
  // A session alone mints no key: one of your keys, given again, is the new key's parent
  // (it expires no later and is revoked with it). Sent once, never kept.
  const parent = h("input", { id: "key-parent", type: "password", required: true, autocomplete: "off" });
  const form = h("form", { id: "create-key", class: "toolbar" },
    h("label", { for: "key-name" }, "Name"), name,
    h("label", { for: "key-days" }, "Expires in days"), days,
    h("label", { for: "key-parent" }, "One of your keys"), parent,
    h("button", { type: "submit" }, "Create a key"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const made = await api("POST", "/v1/keys", { name: name.value, expires_in_days: days.value ? Number(days.value) : null, key: parent.value });
      fill(shown, h("p", { class: "notice" }, "Your new key, shown this once — copy it now: ", h("code", { class: "secret" }, made.key)));
      form.reset();
      await loadKeys();
    } catch (error) { flash(error.message, "error"); }
  });

  fill(view, h("h1", {}, "Status"),
    h("dl", { class: "card status" },
      h("dt", {}, "Server"), h("dd", {}, `${health}, lorebase ${server.version}`),
      h("dt", {}, "Ready"), h("dd", {}, ready),
      h("dt", {}, "Ingestion queue"), h("dd", {}, `${server.queue_depth} waiting of ${server.queue_size}, ${server.workers} workers`),
      h("dt", {}, "Embedding model"), h("dd", {}, server.embedding_model || "none"),
      h("dt", {}, "Reranker"), h("dd", {}, server.reranker || "none configured"),
      h("dt", {}, "Chat model (ask)"), h("dd", {}, server.chat_model ? `${server.chat_model} at ${server.chat_host}` : "not configured"),
      h("dt", {}, "Signed in as"), h("dd", {}, session.auth ? `${session.user} (${session.role})` : "nobody: this server runs without keys"),
      h("dt", {}, "Teams"), h("dd", {}, session.teams.map((t) => `${t.name} (${t.role})`).join(", ") || "none")),
    session.auth ? [h("h2", {}, "Your API keys"), shown,
      h("div", { class: "scroll" }, stacked(h("table", { id: "keys" },
        h("thead", {}, h("tr", {}, ["Name", "Key", "Created", "Expires", "State", ""].map((t) => h("th", { scope: "col" }, t)))), keys))),
      form, ...(await embedderKeysSection())] : null,
    h("h2", {}, "Embedding models"),
    h("div", { class: "scroll" }, stacked(h("table", { id: "embedders" },
      h("thead", {}, h("tr", {}, ["Name", "Model", "Dimensions", "Answers"].map((t) => h("th", { scope: "col" }, t)))), embedders))),
    h("p", {}, "The HTTP API is described at ", h("a", { href: "/docs" }, "/docs"), "."));
  if (session.auth) await loadKeys();
}
