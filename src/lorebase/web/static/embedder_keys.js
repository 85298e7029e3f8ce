// Your own API keys for HTTP embedders (your personal bases use them): set one (sent once,
// never shown back), see which embedders have one, remove one.
import { api } from "./api.js";
import { fill, flash, h, when } from "./dom.js";

/** The "Your embedder keys" part of the status view. */
export async function embedderKeysSection() {
  const list = h("ul", { id: "embedder-keys" });
  const which = h("select", { id: "own-embedder" });
  const key = h("input", { id: "own-key", type: "password", autocomplete: "off", required: true, maxlength: 4096 });

  async function load() {
    const kept = await api("GET", "/v1/embedder-keys");
    fill(list, kept.length ? kept.map((k) => h("li", { dataset: { embedder: k.embedder } },
      `${k.embedder} (set ${when(k.created_at)}) `,
      h("button", { type: "button", class: "danger", "aria-label": `Remove your key for ${k.embedder}`, onclick: async () => {
        try { await api("DELETE", `/v1/embedder-keys/${encodeURIComponent(k.embedder)}`); flash(`Your key for ${k.embedder} is removed.`); await load(); }
        catch (error) { flash(error.message, "error"); }
      } }, "Remove"))) : h("li", { class: "muted" }, "None: your personal bases use the server's keys."));
  }

  const embedders = await api("GET", "/v1/embedders?check=false");
  const http = embedders.filter((e) => e.kind === "http");
  fill(which, http.map((e) => h("option", { value: e.name }, e.name)));
  const form = h("form", { id: "own-key-form", class: "toolbar" },
    h("label", { for: "own-embedder" }, "Embedder"), which,
    h("label", { for: "own-key" }, "Your API key"), key,
    h("button", { type: "submit" }, "Keep my key"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("PUT", `/v1/embedder-keys/${encodeURIComponent(which.value)}`, { key: key.value });
      flash(`Your key for ${which.value} is kept (sealed); your personal bases use it now.`);
      key.value = "";
      await load();
    } catch (error) { flash(error.message, "error"); }
  });
  await load();
  return [h("h2", {}, "Your embedder keys"),
    h("p", { class: "muted" }, "An API key of your own for a model server, used by your personal bases made with that embedder. It is sealed on the server and never shown again."),
    list, http.length ? form : h("p", { class: "muted" }, "This server has no HTTP embedder to take a key.")];
}
