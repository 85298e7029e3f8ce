// A base's notes: write one (searchable when the server answers), list them, edit one (the
// replaced text is kept as a version), see its versions, delete it.
import { api } from "./api.js";
import { fill, flash, h } from "./dom.js";

/** The "Notes" card of a base's page. */
export async function notesCard(kb) {
  const title = h("input", { id: "note-title", maxlength: 200, placeholder: "optional: the start of the text" });
  const text = h("textarea", { id: "note-text", rows: 4, required: true });
  const save = h("button", { type: "submit" }, "Save note");
  const cancel = h("button", { type: "button", hidden: true }, "Cancel edit");
  const list = h("ul", { id: "notes", class: "notes" });
  const versions = h("div", { id: "note-versions", "aria-live": "polite" });
  let editing = null; // the id of the note the form edits (null: a new note)

  function reset() {
    editing = null;
    title.value = "";
    text.value = "";
    fill(save, "Save note");
    cancel.hidden = true;
  }

  async function load() {
    const notes = await api("GET", `/v1/knowledge-bases/${kb.id}/notes`);
    fill(list, notes.length ? notes.map(item) : h("li", { class: "muted" }, "No notes yet."));
  }

  function item(note) {
    return h("li", { dataset: { note: note.id, state: note.state } },
      h("a", { href: `#/doc/${note.id}` }, note.title), " ",
      h("span", { class: `state ${note.state}` }, note.state), " ",
      h("button", { type: "button", onclick: () => edit(note) }, "Edit"),
      h("button", { type: "button", onclick: () => showVersions(note) }, "Versions"),
      h("button", { type: "button", class: "danger", "aria-label": `Delete note ${note.title}`, onclick: () => remove(note) }, "Delete"));
  }

  async function edit(note) {
    try {
      const full = await api("GET", `/v1/notes/${note.id}`);
      editing = note.id;
      title.value = full.title;
      text.value = full.text;
      fill(save, "Save changes");
      cancel.hidden = false;
      text.focus();
    } catch (error) { flash(error.message, "error"); }
  }

  async function showVersions(note) {
    try {
      const kept = await api("GET", `/v1/notes/${note.id}/versions`);
      fill(versions,
        h("h3", {}, `Earlier versions of “${note.title}”`),
        kept.length
          ? h("ol", {}, kept.map((v) => h("li", {},
            h("strong", {}, v.title), v.author ? ` (replaced by ${v.author})` : "",
            h("pre", { class: "note-text" }, v.text))))
          : h("p", { class: "muted" }, "None: it was never edited."));
    } catch (error) { flash(error.message, "error"); }
  }

  async function remove(note) {
    try {
      await api("DELETE", `/v1/notes/${note.id}`);
      flash(`Deleted the note “${note.title}”.`);
      fill(versions);
      await load();
    } catch (error) { flash(error.message, "error"); }
  }

  const form = h("form", { id: "note-form" },
    h("div", { class: "grid" },
      h("label", { for: "note-title" }, "Title"), title,
      h("label", { for: "note-text" }, "Text"), text),
    h("div", { class: "toolbar" }, save, cancel));
  cancel.addEventListener("click", reset);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { text: text.value };
    if (title.value.trim()) body.title = title.value.trim();
    save.disabled = true;
    try {
      const note = editing
        ? await api("PATCH", `/v1/notes/${editing}`, body)
        : await api("POST", `/v1/knowledge-bases/${kb.id}/notes`, body);
      flash(editing ? `Saved “${note.title}”; the earlier text is kept as a version.`
        : note.created === false ? `“${note.title}” was there already.` : `Saved “${note.title}”: searchable now.`);
      reset();
      await load();
    } catch (error) { flash(error.message, "error"); }
    finally { save.disabled = false; }
  });
  await load();
  return h("details", { class: "card", id: "notes-card" }, h("summary", {}, "Notes"),
    h("p", { class: "muted" }, "A short text written straight into this base (a decision, a door code): searchable as soon as it is saved."),
    form, list, versions);
}
