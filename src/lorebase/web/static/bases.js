// Knowledge bases: the list with totals and state, create, delete with a confirmation.
import { api, onChange } from "./api.js";
import { bytes, fill, flash, h, loading, stacked, timeLeft, when } from "./dom.js";

export async function basesView(view, route, session) {
  const table = h("tbody", {}, h("tr", { class: "loading-row" }, h("td", { colspan: 8 }, loading("Loading the knowledge bases…"))));
  const teamNames = new Map(session.teams.map((t) => [t.id, t.name]));

  async function load() {
    const bases = await api("GET", "/v1/knowledge-bases");
    fill(table, bases.length ? bases.map(row) : h("tr", {}, h("td", { colspan: 8 }, "No knowledge base yet: create one below.")));
  }

  // Each base's embedder, the one it is being re-embedded to, and whether it answers (a base
  // whose embedder does not is searched by keyword only).
  function embedderCell(kb) {
    const moving = kb.embedder_next && kb.embedder_next !== kb.embedder
      ? ` → ${kb.embedder_next}` : "";
    const name = h("span", { class: "embedder" }, kb.embedder + moving);
    const under = kb.embedder_next ? h("div", { class: "muted" }, "re-embedding: searches use the current vectors until it is done") : null;
    let answers = null;
    if (kb.embedder_reachable === true) answers = h("div", { class: "muted reachable" }, "answers");
    if (kb.embedder_reachable === false) {
      answers = h("div", { class: "unreachable" },
        `not answering (${kb.embedder_problem ?? "no reason given"}): searched by keyword only`);
    }
    return h("td", {}, name, under, answers, reembedControl(kb));
  }

  // Moving a base to another embedder: an explicit action, confirmed, that makes every
  // document's vectors again in the background (searches keep the current ones until then).
  function reembedControl(kb) {
    const box = h("div", { class: "reembed", hidden: true });
    const open = h("button", { type: "button", class: "link", "aria-label": `Change the embedder of ${kb.name}` }, "Change…");
    open.addEventListener("click", async () => {
      let listed = [];
      try { listed = await api("GET", "/v1/embedders?check=false"); } catch (error) { flash(error.message, "error"); return; }
      const choice = h("select", { "aria-label": "Embedder" }, listed.map((e) => h("option", { value: e.name }, e.name)));
      choice.value = kb.embedder_next ?? kb.embedder;
      fill(box,
        h("p", {}, `Re-embed every document of “${kb.name}” with the chosen model. Searches keep using its current vectors until all the new ones are made, then switch at once.`),
        choice,
        h("button", { type: "button", onclick: async () => {
          try {
            await api("POST", `/v1/knowledge-bases/${kb.id}/reembed`, { embedder: choice.value });
            flash(`Re-embedding “${kb.name}” with ${choice.value}.`);
            await load();
          } catch (error) { flash(error.message, "error"); }
        } }, "Re-embed"),
        h("button", { type: "button", onclick: () => { box.hidden = true; } }, "Keep it"));
      box.hidden = false;
      choice.focus();
    });
    return h("div", {}, open, box);
  }

  function row(kb) {
    const confirmBox = h("div", { class: "confirm", hidden: true });
    const del = h("button", { type: "button", class: "danger", "aria-label": `Delete ${kb.name}` }, "Delete…");
    del.addEventListener("click", () => {
      fill(confirmBox,
        h("p", {}, `Delete “${kb.name}” and everything in it: ${kb.documents} documents, ${kb.chunks} chunks, ${bytes(kb.bytes)} of stored originals. This cannot be undone.`),
        h("button", { type: "button", class: "danger", onclick: async () => {
          try {
            await api("DELETE", `/v1/knowledge-bases/${kb.id}`);
            flash(`Deleted “${kb.name}”.`);
            await load();
          } catch (error) { flash(error.message, "error"); }
        } }, "Delete for good"),
        h("button", { type: "button", onclick: () => { confirmBox.hidden = true; } }, "Keep it"));
      confirmBox.hidden = false;
      confirmBox.querySelector("button").focus();
    });
    const team = kb.team ?? teamNames.get(kb.team_id) ?? kb.team_id;
    const scope = kb.scope === "team" ? `team ${team}` : kb.scope;
    const state = h("span", { class: `state ${kb.state}` }, kb.state);
    return h("tr", { dataset: { kb: kb.id } },
      h("td", {}, h("a", { href: `#/kb/${kb.id}` }, kb.name), h("div", { class: "muted" }, kb.description)),
      h("td", {}, scope, kb.owner ? h("div", { class: "muted" }, kb.owner) : null,
        kb.shared ? h("div", { class: "muted shared" }, `shared with you (${kb.shared === "write" ? "read-write" : "read-only"})`) : null),
      h("td", { class: "num" }, `${kb.indexed} / ${kb.pending} / ${kb.failed}`),
      h("td", { class: "num" }, String(kb.chunks)),
      h("td", { class: "num" }, bytes(kb.bytes)),
      embedderCell(kb),
      h("td", {}, state, kb.state_reason ? h("div", { class: "muted" }, kb.state_reason) : null,
        kb.state === "indexing" && kb.progress_total
          ? h("div", { class: "pace" }, `${kb.progress_done}/${kb.progress_total} files · ${timeLeft(kb.seconds_left)}`) : null,
        kb.stale_documents
          ? h("div", { class: "stale" }, `${kb.stale_documents} made by an older version: read again by the next pass`) : null,
        h("div", { class: "muted" }, `last pass: ${when(kb.last_pass_finished_at)}`)),
      h("td", {}, del, confirmBox));
  }

  const name = h("input", { id: "kb-name", name: "name", required: true, maxlength: 64 });
  const description = h("input", { id: "kb-description", name: "description", maxlength: 2000 });
  const scope = h("select", { id: "kb-scope", name: "scope" },
    h("option", { value: "personal" }, "personal (only you)"),
    session.teams.length ? h("option", { value: "team" }, "team") : null,
    session.role === "admin" ? h("option", { value: "global" }, "global (everyone)") : null);
  const team = h("select", { id: "kb-team", name: "team" }, session.teams.map((t) => h("option", { value: t.name }, t.name)));
  const chunkSize = h("input", { id: "kb-chunk", type: "number", min: 200, max: 4000, value: 1200 });
  const overlap = h("input", { id: "kb-overlap", type: "number", min: 0, max: 2000, value: 200 });
  // The named embedders, the default one first; kept for the base's life.
  const embedder = h("select", { id: "kb-embedder", name: "embedder" },
    h("option", { value: "" }, "the server's default"));
  api("GET", "/v1/embedders?check=false").then((listed) => {
    fill(embedder, h("option", { value: "" }, "the server's default"),
      listed.map((e) => h("option", { value: e.name },
        `${e.name}${e.default ? " (default)" : ""} — ${e.model ?? e.kind}${e.dimensions ? `, ${e.truncate ?? e.dimensions} dims` : ""}`)));
  }).catch(() => {});
  const form = h("form", { class: "card", id: "create-kb" },
    h("h2", {}, "New knowledge base"),
    h("div", { class: "grid" },
      h("label", { for: "kb-name" }, "Name"), name,
      h("label", { for: "kb-description" }, "Description"), description,
      h("label", { for: "kb-scope" }, "Scope"), scope,
      h("label", { for: "kb-team" }, "Team (for a team base)"), team,
      h("label", { for: "kb-chunk" }, "Chunk size (characters)"), chunkSize,
      h("label", { for: "kb-overlap" }, "Overlap (characters)"), overlap,
      h("label", { for: "kb-embedder" }, "Embedding model (kept for its life)"), embedder),
    h("button", { type: "submit" }, "Create"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { name: name.value.trim(), description: description.value, scope: scope.value,
      chunking: { chunk_size: Number(chunkSize.value), overlap: Number(overlap.value) } };
    if (scope.value === "team") body.team = team.value;
    if (embedder.value) body.embedder = embedder.value;
    try {
      const kb = await api("POST", "/v1/knowledge-bases", body);
      flash(`Created “${kb.name}”.`);
      form.reset();
      await load();
    } catch (error) { flash(error.message, "error"); }
  });

  fill(view,
    h("h1", {}, "Knowledge bases"),
    h("div", { class: "scroll" }, stacked(h("table", { id: "bases" },
      h("thead", {}, h("tr", {}, ["Name", "Scope", "Indexed / pending / failed", "Chunks", "Size", "Embedder", "State", ""].map((t) => h("th", { scope: "col" }, t)))),
      table))),
    form);
  let timer = null;
  const stop = onChange((kind) => {
    if (kind !== "knowledge_base") return;
    clearTimeout(timer);
    timer = setTimeout(() => load().catch(() => {}), 300);
  });
  await stop.ready;
  await load();
  return stop;
}
