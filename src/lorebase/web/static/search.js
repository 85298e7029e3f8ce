// Search: query, base filter, mode, filters on what is known of documents (chips: tags=policy,
// date>=2025-01-01; a hit's tag adds one); one hit per document, each with its citation, the
// snippet with the query words marked, its base, its document's tags, author and date, the
// document's other matching passages ("3 more passages in this document", opened on demand) and
// on demand its scores (each labelled with its step's measure) and the timings. Warnings and
// notes are shown; a search that found nothing relevant says so.
import { api } from "./api.js";
import { busyWhile, fill, flash, h, highlighted, highlightedWords, loading } from "./dom.js";

// Each step scores on its own scale: a score compares only with the same step's scores.
const MEASURES = { keyword: "keyword (BM25)", dense: "dense (cosine)", fused: "fused", rerank: "rerank" };
const EMPTY_BASES = "no_documents_yet";
const NO_DOCUMENTS_YET = "Nothing to search yet: the knowledge bases searched hold no documents. Upload files to a base on the Knowledge bases tab.";
const NOTHING_FOUND = "Nothing relevant found: no passage matches enough of the question or comes close to it in meaning.";

function scoreText(s) {
  return s.rank === null ? `${s.score.toFixed(4)} (read to fuse)` : `${s.score.toFixed(4)} (rank ${s.rank})`;
}

// A filter as people write it (the CLI's form): FIELD=VALUE (a|b: any of), FIELD!=VALUE, and
// date ranges with >, >=, <, <=. The server checks fields and dates and says what it accepts.
const FILTER_FORM = /^\s*([^=!<>\s]+)\s*(!=|>=|<=|=|>|<)\s*(.+?)\s*$/;
const OPERATORS = { ">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte" };
const SHOWN_FIELDS = ["tags", "author", "date"];

/** The REST search's `filter` object from chips such as "tags=policy" (null: none): one
 * object per chip, all of which must hold (`$and`): = is `$in` (any of a|b), != `$nin`, and
 * the range operators. */
export function filterObject(chips) {
  const all = [];
  for (const chip of chips) {
    const [, field, op, value] = chip.match(FILTER_FORM) || [];
    if (!field) continue;
    const values = value.split("|").map((v) => v.trim()).filter(Boolean);
    const rule = op === "=" ? { $in: values } : op === "!=" ? { $nin: values } : { [OPERATORS[op]]: value };
    all.push({ [field]: rule });
  }
  return all.length ? { $and: all } : null;
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
  const chips = (params.get("f") || "").split("\n").filter(Boolean);
  const filterInput = h("input", { id: "search-filter", type: "text", maxlength: 300, placeholder: "tags=policy or date>=2025-01-01", "aria-describedby": "filter-help" });
  const chipList = h("ul", { class: "chips", "aria-label": "filters" });
  function drawChips() {
    fill(chipList, chips.map((chip, index) => h("li", { class: "chip" }, chip, " ",
      h("button", { type: "button", class: "link", "aria-label": `remove filter ${chip}`, onclick: () => { chips.splice(index, 1); drawChips(); } }, "×"))));
  }
  function addChip(text) {
    const chip = text.trim();
    if (!chip) return;
    if (!FILTER_FORM.test(chip)) { flash("A filter is FIELD=VALUE, FIELD!=VALUE or a date range such as date>=2025-01-01.", "error"); return; }
    if (!chips.includes(chip)) chips.push(chip);
    drawChips();
  }
  filterInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && filterInput.value.trim()) { event.preventDefault(); addChip(filterInput.value); filterInput.value = ""; }
  });
  drawChips();
  const results = h("section", { id: "results", "aria-live": "polite" });
  const send = h("button", { type: "submit" }, "Search");
  let runs = 0; // only the latest search shows its answer
  const form = h("form", { id: "search", class: "card", role: "search" },
    h("label", { for: "q" }, "Search"), query,
    h("div", { class: "toolbar" },
      h("label", { for: "search-kb" }, "In"), base,
      h("label", { for: "search-mode" }, "Mode"), mode,
      h("label", { for: "search-rerank" }, rerank, " rerank (when configured)"),
      send),
    h("div", { class: "toolbar" },
      h("label", { for: "search-filter" }, "Filter"), filterInput,
      h("button", { type: "button", onclick: () => { addChip(filterInput.value); filterInput.value = ""; } }, "Add filter"),
      chipList),
    h("p", { id: "filter-help", class: "muted" }, "Only documents whose fields meet every filter: tags, author, title, date, created, modified, kind, or any key of their front matter."));

  async function run() {
    const body = { query: query.value, mode: mode.value, rerank: rerank.checked, top_k: 10 };
    if (base.value) body.knowledge_bases = [Number(base.value)];
    const wanted = filterObject(chips);
    if (wanted) body.filter = wanted;
    const mine = ++runs;
    fill(results, loading("Searching…"));
    try {
      const answer = await busyWhile(results, api("POST", "/v1/search", body), send);
      if (mine === runs) show(answer);
    } catch (error) {
      if (mine !== runs) return;
      fill(results);
      flash(error.message, "error");
    }
  }

  function show(answer) {
    const timings = Object.entries(answer.timings_ms).map(([step, ms]) => `${step} ${ms.toFixed(1)} ms`).join(", ");
    fill(results,
      answer.warnings.map((w) => h("p", { class: "warning", role: "alert" }, w)),
      (answer.notes || []).filter((n) => !n.startsWith(EMPTY_BASES)).map((n) => h("p", { class: "muted" }, n)),
      h("p", { class: "muted" }, !answer.no_answer ? `${answer.hits.length} documents (${answer.mode})`
        : (answer.notes || []).some((n) => n.startsWith(EMPTY_BASES)) ? NO_DOCUMENTS_YET : NOTHING_FOUND),
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
          fieldsLine(hit),
          passages,
          h("p", { class: "muted" }, `in ${hit.knowledge_base}`, " · ",
            h("button", { type: "button", class: "link", onclick: () => { scores.hidden = !scores.hidden; } }, "scores")),
          scores);
      })));
  }

  function fieldsLine(hit) {
    const fields = hit.fields || {};
    const parts = SHOWN_FIELDS.filter((name) => (fields[name] || []).length).map((name) => name === "tags"
      ? h("span", {}, "tags: ", fields.tags.map((tag) => h("button", { type: "button", class: "tag", title: `only documents tagged ${tag}`, onclick: () => { addChip(`tags=${tag}`); run(); } }, tag)))
      : h("span", {}, `${name}: ${fields[name].join(", ")}`));
    return parts.length ? h("p", { class: "fields muted" }, parts.flatMap((part, i) => (i ? [" · ", part] : [part]))) : null;
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (filterInput.value.trim()) { addChip(filterInput.value); filterInput.value = ""; }
    const next = `#/search?q=${encodeURIComponent(query.value)}&kb=${base.value}&mode=${mode.value}&f=${encodeURIComponent(chips.join("\n"))}`;
    history.replaceState(null, "", next);
    run();
  });
  fill(view, h("h1", {}, "Search"), form, results);
  if (query.value) await run();
  query.focus();
}
