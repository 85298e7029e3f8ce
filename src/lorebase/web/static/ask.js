// Ask: a question answered by the configured chat model over the caller's bases, streamed from
// POST /v1/ask, with numbered sources that open the cited passage. It says up front which chat
// model answers (or that none is set up), and keeps the user's conversations in this browser
// (localStorage, per signed-in user; never the key): listed, opened, continued — a follow-up
// carries the earlier turns to the model — and deleted.
import { api, stream } from "./api.js";
import { fill, flash, h, loading, when } from "./dom.js";

const KEPT_CONVERSATIONS = 50;
const KEPT_TURNS = 20; // the most turns POST /v1/ask takes as history
const SENT_ANSWER_CHARS = 8000; // an earlier answer, as sent back to the model
const TITLE_CHARS = 80;
const NO_MODEL = "No chat model is set up on this server, so questions cannot be answered here yet. "
  + "The server's operator chooses one in the server's settings; until then, Search finds the passages.";

/** The conversations of one user, kept in this browser. */
class Conversations {
  constructor(user) {
    this.key = `lorebase.conversations.${user}`;
  }

  all() {
    try {
      const kept = JSON.parse(localStorage.getItem(this.key) || "[]");
      return Array.isArray(kept) ? kept : [];
    } catch { return []; }
  }

  save(list) {
    const kept = list.sort((a, b) => b.updated - a.updated).slice(0, KEPT_CONVERSATIONS);
    try { localStorage.setItem(this.key, JSON.stringify(kept)); }
    catch { flash("This browser did not keep the conversation (its storage is full or off).", "error"); }
  }

  get(id) { return this.all().find((c) => c.id === id) || null; }

  put(conversation) {
    this.save([conversation, ...this.all().filter((c) => c.id !== conversation.id)]);
  }

  remove(id) { this.save(this.all().filter((c) => c.id !== id)); }
}

/** What the server says, in the browser's words (the CLI's hints mean nothing here). */
function browserWords(message) {
  return /LOREBASE_CHAT_MODEL|--model/.test(message) ? NO_MODEL : message;
}

function sourceItems(sources) {
  return sources.map((s) => h("li", { value: s.number },
    h("a", { href: `#/doc/${s.document_id}?chunk=${s.chunk_id}` }, s.citation), h("span", { class: "muted" }, ` (${s.knowledge_base})`)));
}

/** An earlier turn of the open conversation: its question, answer and sources. */
function turnView(turn) {
  return h("article", { class: "turn" },
    h("p", { class: "question" }, turn.question),
    h("div", { class: "answer" }, turn.answer),
    turn.sources.length ? h("ol", { class: "sources" }, sourceItems(turn.sources)) : null);
}

export async function askView(view, route, session) {
  const [bases, profiles, server] = await Promise.all([
    api("GET", "/v1/knowledge-bases"), api("GET", "/v1/profiles"), api("GET", "/v1/status")]);
  const kept = new Conversations(session.auth ? session.user : "local");
  const question = h("textarea", { id: "question", rows: 3, required: true, maxlength: 4000 });
  const profile = h("select", { id: "ask-profile" }, h("option", { value: "" }, "none: the bases switched on below"),
    profiles.map((p) => h("option", { value: p.name }, p.description ? `${p.name} — ${p.description}` : p.name)));
  const toggles = bases.map((kb) => h("label", { class: "toggle", dataset: { name: kb.name } },
    h("input", { type: "checkbox", value: kb.id, checked: true, name: "kb" }), ` ${kb.name}`));
  const model = server.chat_model
    ? h("p", { id: "chat-model", class: "muted" }, `Answered by the chat model ${server.chat_model}${server.chat_host ? ` at ${server.chat_host}` : ""}.`)
    : h("p", { id: "chat-model", class: "warning", role: "note" }, NO_MODEL);
  const notice = h("p", { id: "notice", class: "notice", hidden: true });
  const asked = h("p", { class: "question", id: "asked" });
  const answer = h("div", { id: "answer", class: "answer", "aria-live": "polite" });
  const tools = h("ul", { class: "muted tools" });
  const sources = h("ol", { id: "sources", class: "sources" });
  const current = h("section", { id: "current", class: "turn", hidden: true }, asked, notice, answer, tools, h("h2", {}, "Sources"), sources);
  const earlier = h("div", { id: "conversation" });
  const list = h("ul", { id: "conversations" });
  const send = h("button", { type: "submit", disabled: !server.chat_model }, "Ask");
  const fresh = h("button", { type: "button", id: "new-conversation" }, "New conversation");
  let open = null; // the conversation being continued
  let controller = null;

  const form = h("form", { id: "ask", class: "card" },
    model,
    h("label", { for: "question" }, "Your question"), question,
    profiles.length ? h("div", { class: "toolbar" }, h("label", { for: "ask-profile" }, "Profile"), profile) : null,
    bases.length ? h("fieldset", {}, h("legend", {}, "Knowledge bases for this conversation"), toggles) : null,
    h("div", { class: "toolbar" }, send, fresh));

  function drawList() {
    const all = kept.all();
    fill(list, all.length ? all.map((c) => h("li", { dataset: { conversation: c.id }, "aria-current": open?.id === c.id ? "true" : null },
      h("button", { type: "button", class: "link", onclick: () => openConversation(c.id) },
        c.title, h("span", { class: "muted" }, ` · ${c.turns.length} question${c.turns.length > 1 ? "s" : ""} · ${when(c.updated / 1000)}`)),
      h("button", { type: "button", class: "link danger", "aria-label": `Delete the conversation ${c.title}`, onclick: () => removeConversation(c.id) }, "Delete")))
      : h("li", { class: "muted" }, "None yet: your questions and their answers are kept here, in this browser."));
  }

  function drawEarlier() {
    fill(earlier, open ? open.turns.map(turnView) : null);
  }

  function clearCurrent() {
    controller?.abort();
    fill(asked); fill(answer); fill(tools); fill(sources);
    notice.hidden = true;
    current.hidden = true;
  }

  function openConversation(id) {
    open = kept.get(id);
    clearCurrent();
    drawEarlier();
    drawList();
    question.focus();
  }

  function removeConversation(id) {
    kept.remove(id);
    if (open?.id === id) { open = null; clearCurrent(); drawEarlier(); }
    drawList();
    flash("Conversation deleted.");
  }

  fresh.addEventListener("click", () => {
    open = null;
    clearCurrent();
    drawEarlier();
    drawList();
    question.value = "";
    question.focus();
  });

  // Choosing a profile switches on its bases (still yours to switch off for this question).
  profile.addEventListener("change", () => {
    const chosen = profiles.find((p) => p.name === profile.value);
    for (const label of toggles) {
      const box = label.firstChild;
      box.checked = !chosen || chosen.knowledge_bases.includes(label.dataset.name);
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!server.chat_model) return;
    controller?.abort();
    controller = new AbortController();
    const mine = controller; // a later question replaces it
    // The turn answered last joins the conversation above; this one is asked under it.
    drawEarlier();
    const text = question.value;
    const asking = open; // the conversation asked in: another may be opened before the end
    fill(asked, text);
    fill(answer, loading(`Asking ${server.chat_model}…`));
    fill(tools); fill(sources); notice.hidden = true; current.hidden = false;
    const chosen = toggles.map((t) => t.firstChild).filter((box) => box.checked).map((box) => Number(box.value));
    const body = { question: text };
    if (profile.value) body.profile = profile.value;
    if (chosen.length !== bases.length) body.knowledge_bases = chosen;
    if (open?.turns.length) {
      body.history = open.turns.slice(-KEPT_TURNS).map((t) => ({ question: t.question, answer: t.answer.slice(0, SENT_ANSWER_CHARS) }));
    }
    let started = false;
    let final = null;
    send.disabled = true;
    form.setAttribute("aria-busy", "true");
    current.setAttribute("aria-busy", "true");
    try {
      await stream("/v1/ask", body, (kind, data) => {
        if (kind === "notice") { fill(notice, data.text); notice.hidden = false; }
        else if (kind === "delta") {
          if (!started) { fill(answer); started = true; }
          answer.append(data.text);
        } else if (kind === "tool") tools.append(h("li", {}, `used ${data.name}${data.ok ? "" : " (failed)"}`));
        else if (kind === "answer") {
          final = data;
          fill(answer, data.text);
          fill(sources, sourceItems(data.sources));
        } else if (kind === "error") { fill(answer); flash(browserWords(data.message), "error"); }
      }, mine.signal);
    } catch (error) {
      if (error.name !== "AbortError") { fill(answer); flash(browserWords(error.message), "error"); }
    } finally {
      send.disabled = !server.chat_model;
      form.removeAttribute("aria-busy");
      current.removeAttribute("aria-busy");
      if (!final) answer.querySelector(".loading")?.remove();
    }
    if (!final) return;
    const turn = { question: text, answer: final.text, sources: final.sources };
    const conversation = asking ? kept.get(asking.id) || asking : { id: `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, title: "", turns: [] };
    conversation.title ||= text.length > TITLE_CHARS ? `${text.slice(0, TITLE_CHARS - 1)}…` : text;
    conversation.turns = [...conversation.turns, turn].slice(-KEPT_TURNS);
    conversation.updated = Date.now();
    kept.put(conversation);
    if (mine.signal.aborted) { drawList(); return; } // answered, then the user moved on: kept, not shown
    open = conversation;
    question.value = "";
    drawList();
  });
  drawList();
  fill(view, h("h1", {}, "Ask"),
    h("div", { class: "ask-layout" },
      h("div", {}, earlier, current, form),
      h("aside", { class: "conversations card", "aria-labelledby": "conversations-heading" },
        h("h2", { id: "conversations-heading" }, "Your conversations"), list)));
  question.focus();
  return () => controller?.abort();
}
