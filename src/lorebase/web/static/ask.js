// Ask: a question answered by the configured chat model over the caller's bases, streamed from
// POST /v1/ask, with numbered sources that open the cited passage.
import { api, stream } from "./api.js";
import { fill, flash, h } from "./dom.js";

export async function askView(view) {
  const question = h("textarea", { id: "question", rows: 3, required: true, maxlength: 4000 });
  const [bases, profiles] = await Promise.all([api("GET", "/v1/knowledge-bases"), api("GET", "/v1/profiles")]);
  const profile = h("select", { id: "ask-profile" }, h("option", { value: "" }, "none: the bases switched on below"),
    profiles.map((p) => h("option", { value: p.name }, p.description ? `${p.name} — ${p.description}` : p.name)));
  const toggles = bases.map((kb) => h("label", { class: "toggle", dataset: { name: kb.name } },
    h("input", { type: "checkbox", value: kb.id, checked: true, name: "kb" }), ` ${kb.name}`));
  const notice = h("p", { id: "notice", class: "notice", hidden: true });
  const answer = h("div", { id: "answer", class: "answer", "aria-live": "polite" });
  const tools = h("ul", { class: "muted tools" });
  const sources = h("ol", { id: "sources", class: "sources" });
  const send = h("button", { type: "submit" }, "Ask");
  let controller = null;

  const form = h("form", { id: "ask", class: "card" },
    h("label", { for: "question" }, "Your question"), question,
    profiles.length ? h("div", { class: "toolbar" }, h("label", { for: "ask-profile" }, "Profile"), profile) : null,
    bases.length ? h("fieldset", {}, h("legend", {}, "Knowledge bases for this conversation"), toggles) : null,
    send);
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
    controller?.abort();
    controller = new AbortController();
    fill(answer); fill(tools); fill(sources); notice.hidden = true;
    const chosen = toggles.map((t) => t.firstChild).filter((box) => box.checked).map((box) => Number(box.value));
    const body = { question: question.value };
    if (profile.value) body.profile = profile.value;
    if (chosen.length !== bases.length) body.knowledge_bases = chosen;
    send.disabled = true;
    try {
      await stream("/v1/ask", body, (kind, data) => {
        if (kind === "notice") { fill(notice, data.text); notice.hidden = false; }
        else if (kind === "delta") answer.append(data.text);
        else if (kind === "tool") tools.append(h("li", {}, `used ${data.name}${data.ok ? "" : " (failed)"}`));
        else if (kind === "answer") {
          fill(answer, data.text);
          fill(sources, data.sources.map((s) => h("li", { value: s.number },
            h("a", { href: `#/doc/${s.document_id}?chunk=${s.chunk_id}` }, s.citation), h("span", { class: "muted" }, ` (${s.knowledge_base})`))));
        } else if (kind === "error") flash(data.message, "error");
      }, controller.signal);
    } catch (error) {
      if (error.name !== "AbortError") flash(error.message, "error");
    } finally {
      send.disabled = false;
    }
  });
  fill(view, h("h1", {}, "Ask"), form, notice, answer, tools, h("h2", {}, "Sources"), sources);
  question.focus();
  return () => controller?.abort();
}
