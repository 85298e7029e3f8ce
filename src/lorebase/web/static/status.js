// Status: the server's health and readiness, and who is signed in.
import { fill, h } from "./dom.js";

async function probe(path) {
  try {
    const response = await fetch(path, { credentials: "same-origin" });
    return response.ok ? "ok" : `not ready (HTTP ${response.status})`;
  } catch { return "no answer"; }
}

export async function statusView(view, route, session) {
  const [health, ready] = await Promise.all([probe("/healthz"), probe("/readyz")]);
  fill(view, h("h1", {}, "Status"),
    h("dl", { class: "card status" },
      h("dt", {}, "Server"), h("dd", {}, health),
      h("dt", {}, "Ready"), h("dd", {}, ready),
      h("dt", {}, "Signed in as"), h("dd", {}, session.auth ? `${session.user} (${session.role})` : "nobody: this server runs without keys"),
      h("dt", {}, "Teams"), h("dd", {}, session.teams.map((t) => `${t.name} (${t.role})`).join(", ") || "none")),
    h("p", {}, "The HTTP API is described at ", h("a", { href: "/docs" }, "/docs"), "."));
}
