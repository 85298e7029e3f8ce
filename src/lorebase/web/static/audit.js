// The audit log (administrators): every change, who made it, when and from where, newest
// first; narrowed to the changes since a date.
import { api } from "./api.js";
import { fill, flash, h, stacked, when } from "./dom.js";

export async function auditView(view, route) {
  const since = h("input", { id: "audit-since", placeholder: "2026-12-01", value: route.params.get("since") ?? "", maxlength: 64 });
  const body = h("tbody");
  const table = stacked(h("table", { id: "audit" },
    h("thead", {}, h("tr", {}, ["When", "Who", "What", "On", "From"].map((t) => h("th", { scope: "col" }, t)))), body));

  async function load() {
    const query = new URLSearchParams({ limit: 200 });
    if (since.value.trim()) query.set("since", since.value.trim());
    const entries = await api("GET", `/v1/audit?${query}`);
    fill(body, entries.length ? entries.map((e) => h("tr", { dataset: { action: e.action } },
      h("td", {}, when(e.at)), h("td", {}, e.actor), h("td", {}, e.action), h("td", {}, h("code", {}, e.target)), h("td", {}, e.client ?? "")))
      : h("tr", {}, h("td", { colspan: 5 }, "No changes recorded.")));
  }

  const form = h("form", { id: "audit-form", class: "toolbar" },
    h("label", { for: "audit-since" }, "Since"), since, h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try { await load(); } catch (error) { flash(error.message, "error"); }
  });
  await load();
  fill(view, h("h1", {}, "Audit log"),
    h("p", { class: "muted" }, "Every change — bases, documents, notes, sharing, keys and accounts — with who made it and from where (ids only, never content). The server keeps the newest entries up to its limit."),
    form, h("div", { class: "scroll" }, table));
}
