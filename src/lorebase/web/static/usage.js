// Usage: what model calls cost — texts, estimated tokens, seconds — per base, user, model
// and role, since a date (administrators see everyone's, a user their own).
import { api } from "./api.js";
import { fill, flash, h, stacked } from "./dom.js";

export async function usageView(view, route, session) {
  const since = h("input", { id: "usage-since", placeholder: "2026-12-01", value: route.params.get("since") ?? "", maxlength: 64 });
  const body = h("tbody");
  const columns = ["Knowledge base", "User", "Model", "Role", "Calls", "Texts", "Tokens", "Seconds"];
  const table = stacked(h("table", { id: "usage" },
    h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col" }, t)))), body));

  async function load() {
    const query = new URLSearchParams();
    if (since.value.trim()) query.set("since", since.value.trim());
    const rows = await api("GET", `/v1/usage?${query}`);
    fill(body, rows.length ? rows.map((r) => h("tr", { dataset: { role: r.role } },
      h("td", {}, r.knowledge_base ?? (r.knowledge_base_id === null ? "(several)" : `(deleted ${r.knowledge_base_id})`)),
      h("td", {}, r.user ?? "—"), h("td", {}, r.model), h("td", {}, r.role),
      h("td", { class: "num" }, String(r.calls)), h("td", { class: "num" }, String(r.texts)),
      h("td", { class: "num tokens" }, String(r.tokens)), h("td", { class: "num" }, r.seconds.toFixed(2))))
      : h("tr", {}, h("td", { colspan: columns.length }, "No model calls counted.")));
  }

  const form = h("form", { id: "usage-form", class: "toolbar" },
    h("label", { for: "usage-since" }, "Since"), since, h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try { await load(); } catch (error) { flash(error.message, "error"); }
  });
  await load();
  fill(view, h("h1", {}, "Usage"),
    h("p", { class: "muted" }, session.role === "admin"
      ? "Every model call — embedding for passes, queries and re-embeds, chat for Ask — by base, user and model (everyone's)."
      : "Your model calls — embedding for your searches and notes, chat for Ask — by base and model."),
    form, h("div", { class: "scroll" }, table));
}
