// Whom a team's base is shared with: list the grants, share with a team or a user
// (read-only or read-write), revoke one. For the base's administrators (others are told so).
import { api } from "./api.js";
import { fill, flash, h } from "./dom.js";

/** The "Sharing" part of a team base's settings card. */
export async function sharingSection(kb) {
  const box = h("div", { id: "sharing" });
  if (kb.scope !== "team") return null;
  const kind = h("select", { id: "grant-kind" }, h("option", { value: "team" }, "team"), h("option", { value: "user" }, "user"));
  const name = h("input", { id: "grant-name", required: true, maxlength: 64, placeholder: "its name" });
  const access = h("select", { id: "grant-access" }, h("option", { value: "read" }, "read-only"), h("option", { value: "write" }, "read-write"));
  const list = h("ul", { id: "grants" });

  async function load() {
    let grants;
    try { grants = await api("GET", `/v1/knowledge-bases/${kb.id}/grants`); }
    catch (error) {
      if (error.status === 403) { fill(box, h("p", { class: "muted" }, "Only the base's administrators see and change whom it is shared with.")); return false; }
      throw error;
    }
    fill(list, grants.length ? grants.map((g) => h("li", { dataset: { grant: g.id } },
      `${g.grantee} ${g.name}: ${g.access === "write" ? "read-write" : "read-only"} `,
      h("button", { type: "button", class: "danger", "aria-label": `Stop sharing with ${g.grantee} ${g.name}`, onclick: async () => {
        try { await api("DELETE", `/v1/knowledge-bases/${kb.id}/grants/${g.id}`); flash(`No longer shared with ${g.name}.`); await load(); }
        catch (error) { flash(error.message, "error"); }
      } }, "Stop sharing"))) : h("li", { class: "muted" }, "Not shared beyond its team."));
    return true;
  }

  const form = h("form", { id: "share-form", class: "toolbar" },
    h("label", { for: "grant-kind" }, "Share with"), kind,
    h("label", { for: "grant-name" }, "Name"), name,
    h("label", { for: "grant-access" }, "Access"), access,
    h("button", { type: "submit" }, "Share"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const grant = await api("POST", `/v1/knowledge-bases/${kb.id}/grants`, { [kind.value]: name.value.trim(), access: access.value });
      flash(`Shared with ${grant.grantee} ${grant.name} (${grant.access === "write" ? "read-write" : "read-only"}).`);
      name.value = "";
      await load();
    } catch (error) { flash(error.message, "error"); }
  });
  fill(box, h("h2", {}, "Shared with"), list, form);
  await load();
  return box;
}
