
/* ---------- skills (SEP-2640): what the server teaches, each SKILL.md rendered as Markdown ----------
   Listed with skills/list when the server declares io.modelcontextprotocol/skills (the list is the
   caller's own: a skill describing a tool they may not see is not in it). Opening one reads its
   SKILL.md with resources/read, checks it against the SHA-256 and size the list gave, and renders it
   with markdownView: every piece of text goes in through textContent, so the skill's Markdown (its
   author's, or an upstream server's) can never become HTML or script. The frontmatter is a table of
   text; the skill's other files are listed with their digests and read on demand. */
const SKILLS_EXTENSION = "io.modelcontextprotocol/skills";
const SKILL_FRONTMATTER = /^\uFEFF?---[ \t]*\r?\n[\s\S]*?\r?\n---[ \t]*(?:\r?\n|$)/;

async function listSkills(seq) {
  const client = mcpClient();
  await client.connect();
  /* 2026-07-28 declares the extension under capabilities.extensions; a handshake-era answer may carry
     none, so there the page asks and reads an error (an unknown method) as "no skills". */
  const declared = Boolean(((client.capabilities || {}).extensions || {})[SKILLS_EXTENSION]);
  const none = () => {
    if (seq !== views.seq) return;
    views.count.textContent = "none";
    $("detail").replaceChildren(el("p", { class: "empty", id: "view-none", text: "This server offers no skills." }));
  };
  if (!declared && String(client.protocolVersion) >= "2026-07-28") return none();
  const traffic = [];
  let listed;
  try {
    listed = await viewRequest("skills/list", {}, traffic);
  } catch (error) {
    if (declared) throw error;
    return none();
  }
  if (seq !== views.seq) return;
  const skills = Array.isArray(listed.skills) ? listed.skills : [];
  views.list.replaceChildren(...skills.map((skill) => sideItem(skillPath(skill.uri), skillText(skill, "description"),
    [chip((skill.resources || []).length + " file" + ((skill.resources || []).length === 1 ? "" : "s"))], () => openSkill(skill))));
  views.count.textContent = skills.length + " skill" + (skills.length === 1 ? "" : "s");
}

/* skill://docs/pdf/SKILL.md -> docs/pdf */
function skillPath(uri) {
  return String(uri || "").replace(/^skill:\/\//, "").replace(/\/SKILL\.md$/, "");
}

function skillText(skill, key) {
  const value = (skill.frontmatter || {})[key];
  return typeof value === "string" ? value : "";
}

async function openSkill(skill) {
  const out = el("div", { class: "result", id: "skill-body", "aria-live": "polite" });
  const files = (skill.resources || []).map((r) => el("tr", {}, el("td", {}, el("code", { text: String(r.uri || "") })),
    el("td", { text: String(r.size) }), el("td", {}, el("code", { text: String(r.digest || "").slice(0, 19) + "…" }))));
  setContent($("detail"), el("h2", { text: skillPath(skill.uri) }),
    el("p", { class: "desc", text: skillText(skill, "description") }),
    el("details", { class: "block" }, el("summary", { text: "Frontmatter" }), frontmatterTable(skill.frontmatter || {})),
    el("details", { class: "block" }, el("summary", { text: "Files (" + files.length + ")" }),
      el("table", { class: "upstreams", id: "skill-files" }, el("tbody", {}, files))),
    out);
  const traffic = [];
  try {
    const result = await viewRequest("resources/read", { uri: skill.uri }, traffic);
    const text = ((result.contents || [])[0] || {}).text;
    if (typeof text !== "string") throw new Error("SKILL.md came back without text");
    const listed = (skill.resources || []).find((r) => r.uri === skill.uri) || {};
    const verdict = await skillCheck(text, listed);
    out.replaceChildren(el("p", { class: verdict.ok ? "meta" : "out error", id: "skill-check", text: verdict.text }),
      markdownView(text.replace(SKILL_FRONTMATTER, "")), protocolDetails(traffic));
  } catch (error) {
    renderFailure(out, error);
    out.append(protocolDetails(traffic));
  }
}

function frontmatterTable(frontmatter) {
  return el("table", { class: "upstreams", id: "skill-frontmatter" }, el("tbody", {}, Object.keys(frontmatter).map((key) => {
    const value = frontmatter[key];
    return el("tr", {}, el("th", { text: key }), el("td", { text: typeof value === "string" ? value : JSON.stringify(value) }));
  })));
}

/* The bytes read against the list's sha256 digest and size (crypto.subtle: a secure context, as loopback is). */
async function skillCheck(text, listed) {
  const bytes = new TextEncoder().encode(text);
  if (typeof listed.size === "number" && listed.size !== bytes.length) {
    return { ok: false, text: "SKILL.md is " + bytes.length + " bytes, not the " + listed.size + " listed" };
  }
  if (!(window.crypto && crypto.subtle)) return { ok: true, text: "size checked (no digest check outside a secure context)" };
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const hex = Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
  return "sha256:" + hex === listed.digest
    ? { ok: true, text: "SKILL.md matches its listed SHA-256 digest and size" }
    : { ok: false, text: "SKILL.md does not match its listed SHA-256 digest" };
}
