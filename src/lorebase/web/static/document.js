// A document opened at a passage: what is known of it (tags — people may add and remove their
// own —, author, dates), a PDF's page with the passage marked where it stands (previous / next
// page), its extracted text around the passage, with line numbers and the passage marked, and
// the chunks the index holds around it; opened without one, its first chunks (what lorebase
// understood of the file: section, where, language, tokens, whether embedded) and its text
// from the start.
import { api, picture } from "./api.js";
import { fill, flash, h, marked } from "./dom.js";
import { reasonWords } from "./documents.js";

const WINDOW_CHARS = 6000;
const MAX_CHARS = 100000; // the API's largest window
const FIRST_CHUNKS = 20;

export async function documentView(view, route) {
  const id = route.id;
  const p = route.params;
  const doc = await api("GET", `/v1/documents/${id}`);
  const at = Number(p.get("at") || 0);
  const end = Number(p.get("end") || at);
  // The words the search marked in the passage's snippet (whole words, never stop words).
  const words = (p.get("w") || "").split("\n").filter(Boolean);
  // From the start when the passage is near enough (so line numbers are the file's own).
  const from = end + WINDOW_CHARS <= MAX_CHARS ? 0 : Math.max(0, at - WINDOW_CHARS / 3);
  const size = from === 0 ? Math.min(MAX_CHARS, Math.max(WINDOW_CHARS, end + WINDOW_CHARS)) : WINDOW_CHARS;
  const text = doc.state === "indexed" ? await api("GET", `/v1/documents/${id}/text?start=${from}&max_chars=${size}`) : null;
  const chunk = p.get("chunk");
  const chunks = chunk
    ? await api("GET", `/v1/documents/${id}/chunks?around=${encodeURIComponent(chunk)}&window=2`)
    : doc.state === "indexed" ? await api("GET", `/v1/documents/${id}/chunks?start=0&limit=${FIRST_CHUNKS}`) : [];

  const sections = [
    h("p", {}, h("a", { href: `#/kb/${doc.knowledge_base_id}` }, "← the base's documents")),
    h("h1", {}, doc.name),
    h("p", { class: "muted" }, `${doc.kind} · ${doc.chunks} chunks · ${doc.state}`, doc.page_count ? ` · ${doc.page_count} pages` : ""),
    doc.reason ? h("p", { class: "error" }, reasonWords(doc.reason)) : null,
    fieldsList(doc),
  ];
  const hitChunk = chunks.find((c) => c.chunk_id === chunk);
  if (doc.kind === "pdf" || doc.kind === "image") sections.push(pagePanel(doc, hitChunk));
  if (chunks.length) {
    const heading = chunk ? "The passage and its neighbours"
      : doc.chunks > chunks.length ? `Its first ${chunks.length} chunks of ${doc.chunks}` : "Its chunks";
    sections.push(h("h2", {}, heading),
      h("ol", { class: "chunks" }, chunks.map((c) => h("li", { class: c.chunk_id === chunk ? "chunk hit" : "chunk", id: c.chunk_id === chunk ? "passage" : null },
        h("p", { class: "muted" }, [c.trail.join(" › ") || `chunk ${c.ordinal}`, c.page ? `page ${c.page}` : null, c.line ? `line ${c.line}` : null,
          c.language, c.tokens ? `${c.tokens} tokens` : null, c.embedded === false ? "no vector yet" : null].filter(Boolean).join(" · ")),
        h("p", { class: "chunk-text" }, marked(c.text, c.chunk_id === chunk ? words : []))))));
  }
  if (doc.state === "indexed") sections.push(rechunkPreview(doc));
  if (text) {
    const where = text.start ? ` (from character ${text.start}; lines counted from there)` : "";
    sections.push(h("h2", {}, `Extracted text${where}`), numbered(text, at, end));
  }
  fill(view, ...sections);
  (document.getElementById("passage") || view.querySelector(".in-passage"))?.scrollIntoView({ block: "center" });
}

/** What the document's chunks would be with other chunk settings (nothing is stored): for
 * whoever may change the base, before changing its chunking. */
function rechunkPreview(doc) {
  const size = h("input", { id: "rechunk-size", type: "number", min: 200, max: 4000, value: 1200, "aria-label": "chunk size (characters)" });
  const tokens = h("input", { id: "rechunk-tokens", type: "number", min: 32, max: 8192, value: 320, "aria-label": "most tokens a chunk" });
  const overlap = h("input", { id: "rechunk-overlap", type: "number", min: 0, max: 2000, value: 200, "aria-label": "overlap (characters)" });
  const outcome = h("div", { class: "rechunk-outcome", "aria-live": "polite" });
  const form = h("form", { class: "toolbar rechunk" },
    h("label", { for: "rechunk-size" }, "Chunk size"), size,
    h("label", { for: "rechunk-tokens" }, "Tokens"), tokens,
    h("label", { for: "rechunk-overlap" }, "Overlap"), overlap,
    h("button", { type: "submit" }, "Preview"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    fill(outcome, h("p", { class: "muted" }, "Reading the file again…"));
    try {
      const body = { chunk_size: Number(size.value), max_tokens: Number(tokens.value), overlap: Number(overlap.value) };
      const chunks = await api("POST", `/v1/documents/${doc.id}/rechunk-preview`, body);
      fill(outcome,
        h("p", {}, `${chunks.length} chunks with these settings, against ${doc.chunks} now (nothing is stored; the base's settings re-chunk every document).`),
        h("ol", { class: "chunks" }, chunks.slice(0, 20).map((c) => h("li", { class: "chunk" },
          h("p", { class: "muted" }, [c.trail.join(" › ") || `chunk ${c.ordinal}`, c.page ? `page ${c.page}` : null, `${c.tokens} tokens`].filter(Boolean).join(" · ")),
          h("p", { class: "chunk-text" }, c.text.length > 300 ? `${c.text.slice(0, 299)}…` : c.text)))));
    } catch (error) {
      fill(outcome, h("p", { class: "error" }, error.message));
    }
  });
  return h("details", { class: "card" }, h("summary", {}, "Preview other chunk settings"), form, outcome);
}

const SHOWN_LATER = new Set(["title", "kind"]);

/** What is known of the document, and its tags: those people set can be removed, more added. */
function fieldsList(doc) {
  const list = h("dl", { class: "fields-list" });
  // Tags people set can be removed here; the file's own are changed in the file.
  const draw = (fields, own) => fill(list, Object.entries(fields || {}).filter(([name]) => !SHOWN_LATER.has(name) && name !== "tags")
    .flatMap(([name, values]) => [h("dt", {}, name), h("dd", {}, values.join(", "))]),
  h("dt", {}, "tags"), h("dd", { class: "tags" }, (fields?.tags || []).map((tag) => h("span", { class: "chip" }, tag, " ",
    (own || []).includes(tag)
      ? h("button", { type: "button", class: "link", "aria-label": `remove tag ${tag}`, onclick: () => change({ remove_tags: [tag] }) }, "×")
      : h("span", { class: "muted", title: "from the file" }, "(file)"))),
  tagForm));
  const input = h("input", { type: "text", maxlength: 200, "aria-label": "new tag", placeholder: "add a tag" });
  const tagForm = h("form", { class: "tag-form" }, input, h("button", { type: "submit" }, "Add"));
  tagForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value.trim()) change({ add_tags: [input.value.trim()] });
  });
  async function change(body) {
    try {
      const after = await api("PATCH", `/v1/documents/${doc.id}`, body);
      input.value = "";
      draw(after.fields, after.user_tags);
    } catch (error) {
      flash(error.message, "error");
    }
  }
  draw(doc.fields, doc.user_tags);
  return list;
}

/** A PDF's or an image's page as a picture with the passage marked, and previous / next. */
function pagePanel(doc, hit) {
  const pages = doc.page_count || 1;
  let page = Math.min(Math.max(hit?.page || 1, 1), pages);
  const image = h("img", { class: "page-image", alt: "", hidden: true });
  const caption = h("p", { class: "muted", "aria-live": "polite" });
  const previous = h("button", { type: "button", onclick: () => show(page - 1) }, "← previous page");
  const next = h("button", { type: "button", onclick: () => show(page + 1) }, "next page →");
  let shown = null;
  let pending = null;
  async function show(wanted) {
    page = Math.min(Math.max(wanted, 1), pages);
    previous.disabled = page <= 1;
    next.disabled = page >= pages;
    pending?.abort();
    pending = new AbortController();
    const width = Math.max(200, Math.min(2000, Math.round((image.parentElement?.clientWidth || 800) * (window.devicePixelRatio || 1))));
    const chunk = hit ? `&chunk=${encodeURIComponent(hit.chunk_id)}` : "";
    fill(caption, `Loading page ${page}…`);
    try {
      const got = await picture(`/v1/documents/${doc.id}/pages/${page}?width=${width}${chunk}`, { signal: pending.signal });
      if (shown) URL.revokeObjectURL(shown);
      shown = got.url;
      image.src = got.url;
      image.alt = `page ${page} of ${doc.name}`;
      image.hidden = false;
      const boxes = Number(got.headers.get("X-Marked-Boxes") || 0);
      fill(caption, `Page ${page} of ${pages}`, hit ? (boxes ? " · the passage is marked" : " · the passage is not on this page") : "");
    } catch (error) {
      if (error.name === "AbortError") return;
      image.hidden = true;
      fill(caption, error.message);
    }
  }
  const panel = h("section", { class: "page card", "aria-label": "the page" }, h("h2", {}, "On the page"), h("div", { class: "toolbar" }, previous, next), caption, image);
  queueMicrotask(() => show(page));
  return panel;
}

/** The text window as numbered lines; the lines of the passage [at, end) are marked. */
function numbered(text, at, end) {
  const out = h("ol", { class: "text", start: 1 });
  let offset = text.start;
  // Line numbers count from the window's start; the first line may be partial.
  for (const line of text.text.split("\n")) {
    const inside = offset < end && offset + line.length >= at && end > at;
    out.append(h("li", { class: inside ? "in-passage" : null }, line || " "));
    offset += line.length + 1;
  }
  return out;
}
