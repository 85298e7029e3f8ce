// A document opened at a passage: its extracted text around it, with line numbers and the
// passage marked, and the chunks the index holds around it; opened without one, its first
// chunks (what lorebase understood of the file) and its text from the start.
import { api } from "./api.js";
import { fill, h, marked } from "./dom.js";
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
  ];
  if (chunks.length) {
    const heading = chunk ? "The passage and its neighbours"
      : doc.chunks > chunks.length ? `Its first ${chunks.length} chunks of ${doc.chunks}` : "Its chunks";
    sections.push(h("h2", {}, heading),
      h("ol", { class: "chunks" }, chunks.map((c) => h("li", { class: c.chunk_id === chunk ? "chunk hit" : "chunk", id: c.chunk_id === chunk ? "passage" : null },
        h("p", { class: "muted" }, [c.trail.join(" › "), c.page ? `page ${c.page}` : null, c.line ? `line ${c.line}` : null].filter(Boolean).join(" · ") || `chunk ${c.ordinal}`),
        h("p", { class: "chunk-text" }, marked(c.text, c.chunk_id === chunk ? words : []))))));
  }
  if (text) {
    const where = text.start ? ` (from character ${text.start}; lines counted from there)` : "";
    sections.push(h("h2", {}, `Extracted text${where}`), numbered(text, at, end));
  }
  fill(view, ...sections);
  (document.getElementById("passage") || view.querySelector(".in-passage"))?.scrollIntoView({ block: "center" });
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
