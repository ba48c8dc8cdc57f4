const state = { config: null, tools: [], details: new Map(), selected: null, token: "", seq: 0 };
const $ = (id) => document.getElementById(id);
let uid = 0;
const nextId = () => "f" + (++uid);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key in node && typeof value !== "string") node[key] = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/* node.replaceChildren(...parts) without the parts that are missing (null, undefined, false):
   replaceChildren itself would show a null part as the text "null". */
function setContent(node, ...parts) {
  node.replaceChildren(...parts.flat().filter((part) => part !== null && part !== undefined && part !== false));
}

function authHeaders(headers) {
  if (state.token) headers.Authorization = "Bearer " + state.token.trim();
  return headers;
}

async function getJSON(url) {
  const response = await fetch(url, { headers: authHeaders({ Accept: "application/json" }), cache: "no-store" });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error((body && (body.error_description || body.error)) || "HTTP " + response.status);
  return body;
}

/* ---------- pretty JSON (spans built with textContent, never HTML) ---------- */
function jsonView(value) {
  const pre = el("pre", { class: "json" });
  const put = (cls, text) => pre.append(cls ? el("span", { class: cls, text }) : document.createTextNode(text));
  (function walk(v, indent) {
    const pad = "  ".repeat(indent + 1), end = "  ".repeat(indent);
    if (Array.isArray(v)) {
      if (!v.length) return put(null, "[]");
      put(null, "[\n");
      v.forEach((item, i) => { put(null, pad); walk(item, indent + 1); put(null, i < v.length - 1 ? ",\n" : "\n"); });
      put(null, end + "]");
    } else if (v && typeof v === "object") {
      const keys = Object.keys(v);
      if (!keys.length) return put(null, "{}");
      put(null, "{\n");
      keys.forEach((k, i) => {
        put(null, pad); put("j-k", JSON.stringify(k)); put(null, ": ");
        walk(v[k], indent + 1); put(null, i < keys.length - 1 ? ",\n" : "\n");
      });
      put(null, end + "}");
    } else if (typeof v === "string") put("j-s", JSON.stringify(v));
    else if (typeof v === "number") put("j-n", String(v));
    else put("j-b", String(v));
  })(value, 0);
  return pre;
}

function chipsFor(tool) {
  const a = tool.annotations || {};
  const chips = [];
  if (a.readOnlyHint) chips.push(el("span", { class: "chip ro", text: "read-only" }));
  if (a.destructiveHint) chips.push(el("span", { class: "chip destructive", text: "destructive" }));
  if (a.idempotentHint) chips.push(el("span", { class: "chip", text: "idempotent" }));
  if (a.openWorldHint) chips.push(el("span", { class: "chip", text: "open-world" }));
  if (tool.requiresApproval) chips.push(el("span", { class: "chip approval", text: "needs approval" }));
  if (tool.streaming) chips.push(el("span", { class: "chip", text: "streaming" }));
  return chips;
}
const firstLine = (text) => String(text || "").trim().split("\n")[0];

/* ---------- tool list ---------- */
function renderList() {
  const list = $("tool-list");
  list.replaceChildren();
  for (const tool of state.tools) {
    const link = el("a", { href: "#tool=" + encodeURIComponent(tool.name), "data-name": tool.name },
      el("div", { class: "tool-name", text: tool.name }),
      el("div", { class: "tool-desc", text: firstLine(tool.description), title: firstLine(tool.description) }),
      el("div", { class: "chips" }, chipsFor(tool)));
    tool.haystack = [tool.name, tool.description || "", ...(tool.tags || [])].join("\n").toLowerCase();
    tool.item = el("li", {}, link);
    list.append(tool.item);
  }
  applyFilter();
  markSelected();
}

function applyFilter() {
  const terms = $("filter").value.toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const tool of state.tools) {
    const visible = terms.every((term) => tool.haystack.includes(term));
    tool.item.hidden = !visible;
    if (visible) shown++;
  }
  const total = state.tools.length;
  $("count").textContent = terms.length ? `${shown} of ${total} tools` : `${total} tool${total === 1 ? "" : "s"}`;
}

function markSelected() {
  for (const link of $("tool-list").querySelectorAll("a")) {
    if (link.dataset.name === state.selected) link.setAttribute("aria-current", "true");
    else link.removeAttribute("aria-current");
  }
}

function visibleLinks() {
  return [...$("tool-list").querySelectorAll("li:not([hidden]) > a")];
}

$("filter").addEventListener("input", applyFilter);
$("filter").addEventListener("keydown", (event) => {
  if (event.key === "ArrowDown") { event.preventDefault(); const links = visibleLinks(); if (links[0]) links[0].focus(); }
  else if (event.key === "Escape") { $("filter").value = ""; applyFilter(); }
  else if (event.key === "Enter") { const links = visibleLinks(); if (links.length === 1) links[0].click(); }
});
$("tool-list").addEventListener("keydown", (event) => {
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
  event.preventDefault();
  const links = visibleLinks();
  const index = links.indexOf(document.activeElement) + (event.key === "ArrowDown" ? 1 : -1);
  if (index < 0) $("filter").focus(); else if (links[index]) links[index].focus();
});
document.addEventListener("keydown", (event) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey) { event.preventDefault(); $("filter").focus(); }
});

/* The form engine (resolve, buildField, buildObject, buildForm) lives in 15-forms.js. */

/* ---------- tool detail ---------- */
async function select(name) {
  const seq = ++state.seq;
  state.selected = name;
  markSelected();
  const main = $("detail");
  if (!name) { main.replaceChildren(el("p", { class: "empty", text: "Select a tool on the left." })); return; }
  let tool = state.details.get(name);
  if (!tool) {
    main.replaceChildren(el("p", { class: "empty", text: "Loading " + name + "…" }));
    try { tool = await getJSON("tools/" + encodeURIComponent(name)); }
    catch (error) {
      if (seq === state.seq) main.replaceChildren(el("pre", { class: "out error", role: "alert", text: error.message }));
      return;
    }
    state.details.set(name, tool);
  }
  if (seq === state.seq) renderDetail(tool);
}

function renderDetail(tool) {
  const main = $("detail");
  const tags = (tool.tags || []).map((t) => el("span", { class: "chip tag", text: "#" + t }));
  const parts = [
    el("h2", { text: tool.name }),
    el("div", { class: "chips" }, chipsFor(tool), tags),
    tool.upstream ? el("p", { class: "meta", id: "upstream", text: "upstream: " + tool.upstream.server + " / " + tool.upstream.tool }) : null,
    tool.description ? el("p", { class: "desc", text: tool.description }) : null,
  ];
  if (tool.documentation) {
    parts.push(el("details", { class: "block", open: true }, el("summary", { text: "Documentation" }),
      el("div", {}, markdownView(tool.documentation))));  // 12-markdown.js: text nodes only, no HTML
  }
  parts.push(el("details", { class: "block" }, el("summary", { text: "Input schema" }), el("div", {}, jsonView(tool.inputSchema))));
  parts.push(el("details", { class: "block" }, el("summary", { text: "Output schema" }),
    el("div", {}, tool.outputSchema ? jsonView(tool.outputSchema) : el("p", { class: "meta", text: "No output schema." }))));
  parts.push(runCard(tool));
  closeView();  // a view belongs to the tool shown (35-views.js)
  if (tool.view) parts.push(viewCard(tool));
  setContent(main, parts);
}

/* ---------- the page's own confirmation of a destructive call (the call card is in 30-call.js) ---------- */
function confirmCall(tool, args) {
  return new Promise((resolve) => {
    const reasons = [];
    if (tool.requiresApproval) reasons.push("requires approval");
    if ((tool.annotations || {}).destructiveHint) reasons.push("is destructive");
    const runIt = el("button", { type: "button", class: "danger", id: "confirm-run", text: "Run " + tool.name });
    const cancel = el("button", { type: "button", id: "confirm-cancel", text: "Cancel" });
    const dialog = el("dialog", { class: "confirm", id: "confirm-dialog", "aria-labelledby": "confirm-title" },
      el("h3", { id: "confirm-title", text: "Run " + tool.name + "?" }),
      el("p", { text: tool.name + " " + reasons.join(" and ") + "." }),
      tool.description ? el("p", { class: "meta", text: tool.description }) : null,
      el("p", { class: "meta", text: "With these arguments:" }),
      el("pre", { class: "out", id: "confirm-args", text: JSON.stringify(args, null, 2) }),
      el("div", { class: "actions" }, cancel, runIt));
    const close = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    runIt.addEventListener("click", () => close(true));
    cancel.addEventListener("click", () => close(false));
    dialog.addEventListener("cancel", (event) => { event.preventDefault(); close(false); });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/* ---------- routing and start-up ---------- */
function hashTool() {
  const match = /^#tool=([^&]*)/.exec(location.hash);  // a shared link adds &args=… (50-comfort.js)
  if (!match) return null;
  try { return decodeURIComponent(match[1]); } catch (e) { return null; }
}
window.addEventListener("hashchange", () => select(hashTool()));

/* With auth on, the API needs the caller's token: asked once, kept in memory only. */
function askToken(message) {
  const input = el("input", { type: "password", id: "auth-token", autocomplete: "off", placeholder: "Bearer token" });
  const form = el("form", { class: "card", "aria-label": "Access token" },
    el("div", { class: "field" },
      el("div", { class: "field-head" }, el("label", { for: "auth-token", text: "Access token" }),
        el("span", { class: "meta", text: "this server needs one; sent as Authorization: Bearer …" })), input),
    message ? el("p", { class: "note", role: "alert", id: "auth-error", text: message }) : null,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary", id: "auth-submit", text: "Load tools" })));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    state.token = input.value.trim();
    try { await loadTools(); } catch (error) { askToken(error.message); }
  });
  $("detail").replaceChildren(form);
  input.focus();
}

async function loadTools() {
  const tools = await getJSON("tools");
  state.tools = Array.isArray(tools) ? tools : [];
  if ($("auth-token")) $("detail").replaceChildren(el("p", { class: "empty", text: "Select a tool on the left." }));
  renderList();
  const name = hashTool();
  if (name) select(name);
}

async function start() {
  try {
    const config = await getJSON("config");
    state.config = config;
    setupEra();
    const server = config.server || {};
    $("server-name").textContent = server.name || "Tool explorer";
    $("server-version").textContent = server.version ? "v" + server.version : "";
    document.title = (server.name || "Tool") + " · explorer";
    const badge = $("exec-badge");
    badge.textContent = config.allowExecute ? "execution enabled" : "execution disabled";
    badge.className = "badge " + (config.allowExecute ? "on" : "off");
    $("token-badge").hidden = !(config.allowExecute && config.tokenRequired);
    if (config.authRequired && !state.token) { askToken(""); return; }
    await loadTools();
  } catch (error) {
    $("count").textContent = "";
    $("detail").replaceChildren(el("pre", { class: "out error", role: "alert", text: "Could not load the explorer: " + error.message }));
  }
}
