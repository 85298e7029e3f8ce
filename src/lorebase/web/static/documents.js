// A base's documents: a live table (sort, filter, pages), uploads by button or drop with an
// answer per file, reindex, delete.
import { api, apiPage, ApiError, onChange, upload } from "./api.js";
import { busyWhile, bytes, fill, flash, h, loading, stacked } from "./dom.js";
import { notesCard } from "./notes.js";
import { sharingSection } from "./sharing.js";

const PAGE = 100;
const POLL_MS = 3000;

// What each failure reason means, and what to do about it.
export const REASONS = {
  unsupported_format: "This kind of file is not supported. Convert it to PDF, DOCX, HTML, Markdown or plain text.",
  too_large: "The file is over the size limit. Split it, or raise the limit on the server.",
  empty: "The file holds no text. Check that it is the file you meant.",
  encrypted: "The file is password-protected. Remove the password and upload it again.",
  no_text_layer: "The PDF has no text layer (a scan). Run OCR on it and upload it again.",
  corrupt: "The file is damaged or not what its name says. Open it to check, export it again.",
  unreadable: "The file could not be read. Export it again in a standard format.",
  missing_original: "The stored original is gone. Upload the file again.",
  timeout: "Reading the file took too long. Split it into smaller files.",
};

export function reasonWords(reason) {
  if (!reason) return "";
  return REASONS[reason] || `Failed (${reason}).`;
}

/** The base's settings (description, chunking) and, for admins, the folders it follows. */
async function settingsCard(kb, session, reload) {
  const description = h("input", { id: "edit-description", maxlength: 2000, value: kb.description });
  const chunkSize = h("input", { id: "edit-chunk", type: "number", min: 200, max: 4000, value: kb.chunking.chunk_size });
  const overlap = h("input", { id: "edit-overlap", type: "number", min: 0, max: 2000, value: kb.chunking.overlap });
  const form = h("form", { id: "edit-kb" },
    h("div", { class: "grid" },
      h("label", { for: "edit-description" }, "Description"), description,
      h("label", { for: "edit-chunk" }, "Chunk size (characters)"), chunkSize,
      h("label", { for: "edit-overlap" }, "Overlap (characters)"), overlap),
    h("p", { class: "muted" }, "Changing the chunking makes every document stale: the next pass chunks and embeds them again."),
    h("button", { type: "submit" }, "Save"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { description: description.value };
    if (Number(chunkSize.value) !== kb.chunking.chunk_size || Number(overlap.value) !== kb.chunking.overlap) {
      body.chunking = { ...kb.chunking, chunk_size: Number(chunkSize.value), overlap: Number(overlap.value) };
    }
    try { await api("PATCH", `/v1/knowledge-bases/${kb.id}`, body); flash("Saved."); await reload(); }
    catch (error) { flash(error.message, "error"); }
  });
  const sources = await api("GET", `/v1/knowledge-bases/${kb.id}/sources`);
  const folders = h("ul", { id: "sources" }, sources.map((s) => h("li", {}, h("code", {}, s.path), " ",
    session.role === "admin" ? h("button", { type: "button", onclick: async () => {
      try { await api("DELETE", `/v1/knowledge-bases/${kb.id}/sources/${s.id}`); await reload(); }
      catch (error) { flash(error.message, "error"); }
    } }, "Stop following") : null)));
  const folder = h("input", { id: "source-path", placeholder: "/path/on/the/server" });
  const admin = session.role === "admin" ? [
    h("form", { id: "add-source", class: "toolbar", onsubmit: async (event) => {
      event.preventDefault();
      try { await api("POST", `/v1/knowledge-bases/${kb.id}/sources`, { path: folder.value }); await reload(); }
      catch (error) { flash(error.message, "error"); }
    } }, h("label", { for: "source-path" }, "Follow a folder"), folder, h("button", { type: "submit" }, "Add")),
    sources.length ? h("button", { type: "button", onclick: async () => {
      try { await api("POST", `/v1/knowledge-bases/${kb.id}/sync`); flash("A pass over the folders is queued."); }
      catch (error) { flash(error.message, "error"); }
    } }, "Sync now") : null] : [];
  return h("details", { class: "card" }, h("summary", {}, "Settings and folders"), form,
    h("h2", {}, "Folders it follows"), sources.length ? folders : h("p", { class: "muted" }, "None: documents come from uploads."),
    admin, await sharingSection(kb));
}

export async function documentsView(view, route, session) {
  const kbId = Number(route.id);
  const kb = await api("GET", `/v1/knowledge-bases/${kbId}`);
  let docs = [];
  let sortKey = "name";
  let ascending = true;
  let page = 0;
  const body = h("tbody", {}, h("tr", { class: "loading-row" }, h("td", { colspan: 7 }, loading("Loading the documents…"))));
  const filterText = h("input", { id: "doc-filter", type: "search", placeholder: "name contains…" });
  const filterState = h("select", { id: "doc-state" }, h("option", { value: "" }, "any state"),
    ["pending", "extracting", "chunking", "embedding", "indexed", "failed"].map((s) => h("option", { value: s }, s)));
  const pager = h("div", { class: "pager" });
  const uploads = h("ul", { id: "uploads", class: "uploads", "aria-live": "polite" });

  let total = 0;
  let listing = null;

  // One page at a time from the API (sorted and filtered there): a base of 10,000 documents
  // costs the page 100 rows.
  async function load() {
    listing?.abort();
    listing = new AbortController();
    const query = new URLSearchParams({ limit: PAGE, offset: page * PAGE, sort: sortKey, order: ascending ? "asc" : "desc" });
    if (filterText.value) query.set("q", filterText.value);
    if (filterState.value) query.set("state", filterState.value);
    try {
      const answer = await busyWhile(table, apiPage(`/v1/knowledge-bases/${kbId}/documents?${query}`, { signal: listing.signal }));
      docs = answer.items;
      total = answer.total;
      draw();
    } catch (error) {
      if (error.name !== "AbortError") throw error;
    }
  }

  function draw() {
    for (const th of head.children) {
      if (th.dataset.key === sortKey) th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
    }
    const pages = Math.max(1, Math.ceil(total / PAGE));
    fill(body, docs.length ? docs.map(row) : h("tr", {}, h("td", { colspan: 7 }, total || filterText.value || filterState.value ? "No document matches." : "No document yet: upload some.")));
    fill(pager,
      h("button", { type: "button", disabled: page === 0, onclick: () => { page--; load(); } }, "Previous"),
      ` page ${page + 1} of ${pages} (${total} documents) `,
      h("button", { type: "button", disabled: page >= pages - 1, onclick: () => { page++; load(); } }, "Next"));
  }

  function row(d) {
    const confirmBox = h("span", { class: "confirm", hidden: true },
      `Delete “${d.name}”, its ${d.chunks} chunks and its stored original? `,
      h("button", { type: "button", class: "danger", onclick: () => remove(d) }, "Delete for good"),
      h("button", { type: "button", onclick: () => { confirmBox.hidden = true; } }, "Keep it"));
    return h("tr", { dataset: { doc: d.id, state: d.state } },
      h("td", {}, h("a", { href: `#/doc/${d.id}` }, d.name), d.title && d.title !== d.name ? h("div", { class: "muted" }, d.title) : null),
      h("td", {}, d.kind),
      h("td", { class: "num" }, bytes(d.size)),
      h("td", { class: "num" }, String(d.chunks)),
      h("td", {}, h("span", { class: `state ${d.state}` }, d.state)),
      h("td", { class: "reason" }, reasonWords(d.reason)),
      h("td", { class: "actions" },
        h("button", { type: "button", onclick: () => reindex(d) }, "Reindex"),
        h("button", { type: "button", class: "danger", "aria-label": `Delete ${d.name}`, onclick: () => { confirmBox.hidden = false; confirmBox.querySelector("button").focus(); } }, "Delete…"),
        confirmBox));
  }

  async function reindex(d) {
    try { await api("POST", `/v1/documents/${d.id}/reindex`); flash(`Reindexing “${d.name}”.`); }
    catch (error) { flash(error.message, "error"); }
  }

  async function remove(d) {
    try {
      await api("DELETE", `/v1/documents/${d.id}`);
      flash(`Deleted “${d.name}”.`);
      await load();
    } catch (error) { flash(error.message, "error"); }
  }

  async function uploadOne(file) {
    const item = h("li", {}, h("span", { class: "file" }, file.name), " ", h("span", { class: "outcome" }, "uploading…"));
    const outcome = item.lastChild;
    uploads.append(item);
    const form = new FormData();
    form.append("files", file, file.name);
    try {
      const answer = await upload(`/v1/knowledge-bases/${kbId}/documents`, form,
        (done) => fill(outcome, `uploading… ${Math.round(done * 100)}%`));
      const created = answer.created[0];
      fill(outcome, created ? "accepted" : "already there");
      item.dataset.outcome = created ? "accepted" : "duplicate";
    } catch (error) {
      // A full queue keeps the file: the server indexes it once the queue has room.
      const busy = error instanceof ApiError && error.status === 503 && error.problem.type?.endsWith("overloaded");
      fill(outcome, busy ? "server busy: the file is kept and indexing is retried when the queue has room" : `refused: ${error.message}`);
      item.dataset.outcome = busy ? "busy" : "refused";
    }
  }

  // Uploads under way: the drop zone is busy and says how many files are still going.
  let uploading = 0;
  function uploadState(change) {
    uploading += change;
    if (uploading) drop.setAttribute("aria-busy", "true");
    else drop.removeAttribute("aria-busy");
    fill(progress, uploading ? loading(`Uploading ${uploading} file${uploading > 1 ? "s" : ""}…`) : null);
  }

  async function uploadAll(files) {
    const list = [...files];
    let next = 0;
    uploadState(list.length);
    const worker = async () => {
      while (next < list.length) {
        try { await uploadOne(list[next++]); } finally { uploadState(-1); }
      }
    };
    await Promise.all([worker(), worker(), worker()]);
    await load();
  }

  // The native file input stays (keyboard, screen readers, tests set its files) but is drawn
  // as its label: a button.
  const picker = h("input", { id: "upload-files", class: "file-input", type: "file", multiple: true });
  picker.addEventListener("change", () => { uploadAll(picker.files); picker.value = ""; });
  const progress = h("div", { class: "upload-progress" });
  const drop = h("div", { id: "drop", class: "drop" },
    picker, h("label", { for: "upload-files", class: "file-button" }, "Choose files to upload…"),
    h("p", { class: "muted" }, "…or drop files anywhere on this page."), progress);
  const onDragOver = (event) => { event.preventDefault(); drop.classList.add("over"); };
  const onDragLeave = () => drop.classList.remove("over");
  const onDrop = (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    if (event.dataTransfer?.files?.length) uploadAll(event.dataTransfer.files);
  };
  window.addEventListener("dragover", onDragOver);
  window.addEventListener("dragleave", onDragLeave);
  window.addEventListener("drop", onDrop);

  const headers = [["name", "Name"], ["kind", "Kind"], ["size", "Size"], ["chunks", "Chunks"], ["state", "State"]];
  const head = h("tr", {}, headers.map(([key, label]) => h("th", { scope: "col", dataset: { key } },
    h("button", { type: "button", class: "sort", onclick: () => { ascending = sortKey === key ? !ascending : true; sortKey = key; page = 0; load(); } }, label))),
    h("th", { scope: "col" }, "Why it failed, what to do"), h("th", {}, ""));
  const table = stacked(h("table", { id: "documents", class: "sortable" }, h("thead", {}, head), body));
  let typing = null;
  filterText.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => { page = 0; load(); }, 200); });
  filterState.addEventListener("change", () => { page = 0; load(); });

  fill(view,
    h("p", {}, h("a", { href: "#/bases" }, "← Knowledge bases")),
    h("h1", {}, kb.name),
    kb.description ? h("p", {}, kb.description) : null,
    await settingsCard(kb, session, async () => window.dispatchEvent(new HashChangeEvent("hashchange"))),
    await notesCard(kb),
    h("div", { class: "toolbar" }, drop,
      h("button", { type: "button", onclick: async () => {
        try { const r = await api("POST", `/v1/knowledge-bases/${kbId}/reindex`); flash(`Reindexing ${r.queued} documents.`); }
        catch (error) { flash(error.message, "error"); }
      } }, "Reindex all"),
      h("a", { href: `#/search?kb=${kbId}` }, "Search this base")),
    uploads,
    h("div", { class: "toolbar" }, h("label", { for: "doc-filter" }, "Filter"), filterText, h("label", { for: "doc-state" }, "State"), filterState),
    h("div", { class: "scroll" }, table),
    pager);

  let timer = null;
  let lastEvent = Date.now();
  const stop = onChange((kind, event) => {
    if (event.knowledge_base_id !== kbId) return;
    lastEvent = Date.now();
    const known = kind === "document" && docs.find((d) => d.id === event.document_id);
    if (known) { known.state = event.state; known.reason = event.reason ?? null; draw(); }
    clearTimeout(timer);
    timer = setTimeout(() => load().catch(() => {}), 400);
  });
  // Folder passes report only when a base's pass ends: while a row is still on its way and
  // the stream has been quiet, look again now and then.
  const settling = setInterval(() => {
    const busy = docs.some((d) => !["indexed", "failed"].includes(d.state));
    if (busy && Date.now() - lastEvent > POLL_MS) load().catch(() => {});
  }, POLL_MS);
  await stop.ready;
  await load();
  return () => {
    stop();
    clearInterval(settling);
    window.removeEventListener("dragover", onDragOver);
    window.removeEventListener("dragleave", onDragLeave);
    window.removeEventListener("drop", onDrop);
  };
}
