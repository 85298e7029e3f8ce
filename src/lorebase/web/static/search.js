// Search: query, base filter, mode; one hit per document, each with its citation, the snippet
// with the query words marked, its base, the document's other matching passages ("3 more
// passages in this document", opened on demand) and on demand its scores (each labelled with its
// step's measure) and the timings. Warnings and notes are shown; a search that found nothing
// relevant says so.
import { api } from "./api.js";
import { fill, flash, h, highlighted, highlightedWords } from "./dom.js";

// Each step scores on its own scale: a score compares only with the same step's scores.
const MEASURES = { keyword: "keyword (BM25)", dense: "dense (cosine)", fused: "fused", rerank: "rerank" };
const NOTHING_FOUND = "Nothing relevant found: no passage matches enough of the question or comes close to it in meaning.";

function scoreText(s) {
  return s.rank === null ? `${s.score.toFixed(4)} (read to fuse)` : `${s.score.toFixed(4)} (rank ${s.rank})`;
}

function passageLink(hit, passage, query) {
  const words = highlightedWords(passage.snippet, passage.highlights).join("\n");
  return `#/doc/${hit.document_id}?chunk=${passage.chunk_id}&at=${passage.start}&end=${passage.end}&q=${encodeURIComponent(query)}&w=${encodeURIComponent(words)}`;
}

export async function searchView(view, route) {
  const params = route.params;
  const bases = await api("GET", "/v1/knowledge-bases");
  const query = h("input", { id: "q", name: "q", type: "search", required: true, maxlength: 2000, value: params.get("q") || "" });
  const base = h("select", { id: "search-kb" }, h("option", { value: "" }, "all my bases"),
    bases.map((kb) => h("option", { value: kb.id, selected: String(kb.id) === params.get("kb") }, kb.name)));
  const mode = h("select", { id: "search-mode" }, ["hybrid", "keyword", "dense"].map((m) => h("option", { value: m, selected: m === params.get("mode") }, m)));
  const rerank = h("input", { id: "search-rerank", type: "checkbox" });
  const results = h("section", { id: "results", "aria-live": "polite" });
  const form = h("form", { id: "search", class: "card", role: "search" },
    h("label", { for: "q" }, "Search"), query,
    h("div", { class: "toolbar" },
      h("label", { for: "search-kb" }, "In"), base,
      h("label", { for: "search-mode" }, "Mode"), mode,
      h("label", { for: "search-rerank" }, rerank, " rerank (when configured)"),
      h("button", { type: "submit" }, "Search")));

  async function run() {
    const body = { query: query.value, mode: mode.value, rerank: rerank.checked, top_k: 10 };
    if (base.value) body.knowledge_bases = [Number(base.value)];
    fill(results, h("p", { class: "muted" }, "Searching…"));
    try {
      show(await api("POST", "/v1/search", body));
    } catch (error) {
      fill(results);
      flash(error.message, "error");
    }
  }

  function show(answer) {
    const timings = Object.entries(answer.timings_ms).map(([step, ms]) => `${step} ${ms.toFixed(1)} ms`).join(", ");
    fill(results,
      answer.warnings.map((w) => h("p", { class: "warning", role: "alert" }, w)),
      (answer.notes || []).map((n) => h("p", { class: "muted" }, n)),
      h("p", { class: "muted" }, answer.no_answer ? NOTHING_FOUND : `${answer.hits.length} documents (${answer.mode})`),
      h("ol", { class: "hits" }, answer.hits.map((hit) => {
        const scores = h("dl", { class: "scores", hidden: true },
          Object.entries(hit.scores).flatMap(([step, s]) => [h("dt", {}, MEASURES[step] || step), h("dd", {}, scoreText(s))]),
          h("dt", {}, "timings"), h("dd", {}, timings));
        const more = (hit.passages || []).length;
        const passages = more ? h("details", { class: "passages" },
          h("summary", {}, `${more} more passage${more > 1 ? "s" : ""} in this document`),
          h("ol", {}, hit.passages.map((p) => h("li", { class: "passage", dataset: { chunk: p.chunk_id } },
            h("a", { class: "citation", href: passageLink(hit, p, query.value) }, p.citation),
            h("p", { class: "snippet" }, highlighted(p.snippet, p.highlights)))))) : null;
        return h("li", { class: "hit", dataset: { chunk: hit.chunk_id } },
          h("a", { class: "citation", href: passageLink(hit, hit, query.value) }, hit.citation),
          h("p", { class: "snippet" }, hit.snippet ? highlighted(hit.snippet, hit.highlights) : hit.text),
          passages,
          h("p", { class: "muted" }, `in ${hit.knowledge_base}`, " · ",
            h("button", { type: "button", class: "link", onclick: () => { scores.hidden = !scores.hidden; } }, "scores")),
          scores);
      })));
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = `#/search?q=${encodeURIComponent(query.value)}&kb=${base.value}&mode=${mode.value}`;
    history.replaceState(null, "", next);
    run();
  });
  fill(view, h("h1", {}, "Search"), form, results);
  if (query.value) await run();
  query.focus();
}
