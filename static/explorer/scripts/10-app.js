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

/* ---------- schema helpers ---------- */
function resolve(schema, root, depth) {
  let s = schema || {};
  for (let hops = 0; s.$ref && hops < 20; hops++) {
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const target = match && root[match[1]] && root[match[1]][decodeURIComponent(match[2])];
    if (!target) break;
    const { $ref, ...rest } = s;
    s = { ...target, ...rest };
  }
  let nullable = false;
  const union = s.anyOf || s.oneOf;
  if (Array.isArray(union)) {
    const branches = union.filter((b) => !(b && b.type === "null"));
    nullable = branches.length < union.length;
    if (branches.length === 1) {
      const { anyOf, oneOf, ...rest } = s;
      const inner = resolve(branches[0], root, depth);
      s = { ...inner.schema, ...rest };
      nullable = nullable || inner.nullable;
    }
  }
  let type = s.type;
  if (Array.isArray(type)) {
    nullable = nullable || type.includes("null");
    const rest = type.filter((t) => t !== "null");
    type = rest.length === 1 ? rest[0] : undefined;
  }
  if (!type && s.properties) type = "object";
  if (!type && Array.isArray(s.enum)) type = "enum";
  return { schema: s, type, nullable };
}

const isScalar = (r) => ["string", "integer", "number", "boolean"].includes(r.type) || Array.isArray(r.schema.enum);
const LONG_NAME = /(description|body|content|prompt|message|notes?|comment|markdown|html|code|script|query|sql)$/i;

/* Each widget: { node, get() -> value or undefined (omitted), set(value) }. */
function buildField(name, schema, required, root, depth) {
  const r = resolve(schema, root, depth);
  const s = r.schema;
  const optional = !required;
  const id = nextId(), hintId = id + "-hint";
  const typeText = (Array.isArray(s.enum) ? "enum" : r.type || "any") + (s.format ? " · " + s.format : "") +
    (r.nullable ? " · nullable" : "");
  const head = el("div", { class: "field-head" },
    el("label", { for: id, text: name }),
    required ? el("span", { class: "req", title: "required", text: "*" }) : el("span", { class: "meta", text: "optional" }),
    el("span", { class: "meta", text: typeText }));
  const hintText = [s.description, s.minimum !== undefined ? "min " + s.minimum : "",
    s.maximum !== undefined ? "max " + s.maximum : ""].filter(Boolean).join(" · ");
  const hint = hintText ? el("div", { class: "hint", id: hintId, text: hintText }) : null;
  const common = { id, "aria-describedby": hint ? hintId : null, "aria-required": required ? "true" : null, "data-path": name };
  let widget;

  if (r.type === "object" && s.properties && depth < 8) {
    const inner = buildObject(s, root, depth + 1);
    const box = el("fieldset", { id },
      el("legend", {}, el("span", { class: "field-name", text: name }), " ",
        required ? el("span", { class: "req", text: "*" }) : el("span", { class: "meta", text: "optional" })),
      hint, inner.node);
    widget = { node: el("div", { class: "field" }, box), set: inner.set,
      get: () => { const v = inner.get(); return optional && !Object.keys(v).length ? undefined : v; } };
  } else if (Array.isArray(s.enum) || (r.type === "boolean" && (r.nullable || (optional && s.default === undefined)))) {
    const values = Array.isArray(s.enum) ? s.enum : [true, false];
    const select = el("select", common);
    select.append(el("option", { value: "", text: required ? "— choose —" : "— not set —" }));
    values.forEach((v, i) => select.append(el("option", { value: String(i), text: typeof v === "string" ? v : JSON.stringify(v) })));
    widget = { node: select,
      get: () => (select.value === "" ? undefined : values[Number(select.value)]),
      set: (v) => { const i = values.findIndex((x) => JSON.stringify(x) === JSON.stringify(v)); select.value = i < 0 ? "" : String(i); } };
  } else if (r.type === "boolean") {
    const box = el("input", { ...common, type: "checkbox" });
    widget = { node: el("div", { class: "check" }, box, el("span", { class: "meta", text: "true when checked" })),
      get: () => box.checked, set: (v) => { box.checked = Boolean(v); } };
  } else if (r.type === "integer" || r.type === "number") {
    const input = el("input", { ...common, type: "number", min: s.minimum ?? s.exclusiveMinimum, max: s.maximum ?? s.exclusiveMaximum,
      step: r.type === "integer" ? "1" : "any", inputmode: r.type === "integer" ? "numeric" : "decimal" });
    widget = { node: input,
      get: () => (input.value.trim() === "" ? undefined : Number(input.value)),
      set: (v) => { input.value = v === undefined || v === null ? "" : String(v); } };
  } else if (r.type === "string") {
    const long = (s.maxLength || 0) > 200 || s.format === "textarea" || s["x-multiline"] || LONG_NAME.test(name);
    const placeholders = { "date-time": "2026-01-31T12:00:00Z", date: "2026-01-31", time: "12:00:00", email: "name@example.com",
      uri: "https://example.com/", uuid: "00000000-0000-0000-0000-000000000000" };
    const input = long ? el("textarea", { ...common, class: "prose", rows: 4 })
      : el("input", { ...common, type: "text", placeholder: placeholders[s.format] || s.pattern || null,
        minlength: s.minLength, maxlength: s.maxLength, spellcheck: "false" });
    widget = { node: input,
      get: () => (input.value === "" ? undefined : input.value),
      set: (v) => { input.value = v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v); } };
  } else if (r.type === "array" && s.items && isScalar(resolve(s.items, root, depth)) && depth < 8) {
    widget = buildRows(name, s, root, depth, common, optional);
  } else {
    const area = el("textarea", { ...common, rows: 4, spellcheck: "false",
      placeholder: r.type === "array" ? "[ … ] as JSON" : r.type === "object" ? "{ … } as JSON" : "any JSON value" });
    widget = { node: area,
      get: () => {
        if (area.value.trim() === "") return undefined;
        try { return JSON.parse(area.value); } catch (e) { throw new Error(`${name}: not valid JSON (${e.message})`); }
      },
      set: (v) => { area.value = v === undefined ? "" : JSON.stringify(v, null, 2); } };
  }
  if (s.default !== undefined) widget.set(s.default);
  if (widget.node.classList.contains("field")) return widget;
  return { ...widget, node: el("div", { class: "field" }, head, widget.node, hint) };
}

function buildRows(name, s, root, depth, common, optional) {
  const rows = el("div", { id: common.id, "data-path": name });
  const items = [];
  const add = (value) => {
    const item = buildField(name + "[" + items.length + "]", s.items, true, root, depth + 1);
    const control = item.node.querySelector("input, select, textarea");
    control.setAttribute("aria-label", name + " item");
    const row = el("div", { class: "row" }, control.parentElement.classList.contains("check") ? control.parentElement : control,
      el("button", { type: "button", class: "small", "aria-label": "Remove item", text: "✕",
        onclick: () => { items.splice(items.indexOf(entry), 1); row.remove(); } }));
    const entry = { item, row };
    items.push(entry);
    rows.append(row);
    if (value !== undefined) item.set(value);
    return control;
  };
  const addButton = el("button", { type: "button", class: "small", text: "+ Add item", onclick: () => add().focus() });
  return { node: el("div", {}, rows, addButton),
    get: () => {
      const values = items.map((e) => e.item.get()).filter((v) => v !== undefined);
      return optional && !values.length && s.default === undefined ? undefined : values;
    },
    set: (v) => { items.splice(0).forEach((e) => e.row.remove()); (Array.isArray(v) ? v : []).forEach((x) => add(x)); } };
}

function buildObject(schema, root, depth) {
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([key, sub]) => [key, buildField(key, sub, required.has(key), root, depth)]);
  let extras = {};
  const node = el("div", {}, fields.map(([, f]) => f.node));
  if (!fields.length) node.append(el("p", { class: "meta", text: "This tool takes no arguments." }));
  return { node,
    get: () => {
      const out = {};
      for (const [key, f] of fields) { const v = f.get(); if (v !== undefined) out[key] = v; }
      return { ...out, ...extras };
    },
    set: (value) => {
      const v = value && typeof value === "object" && !Array.isArray(value) ? value : {};
      extras = {};
      for (const key of Object.keys(v)) if (!fields.some(([k]) => k === key)) extras[key] = v[key];
      for (const [key, f] of fields) f.set(v[key]);
    } };
}

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
      el("div", {}, el("pre", { class: "doc", text: tool.documentation }))));
  }
  parts.push(el("details", { class: "block" }, el("summary", { text: "Input schema" }), el("div", {}, jsonView(tool.inputSchema))));
  parts.push(el("details", { class: "block" }, el("summary", { text: "Output schema" }),
    el("div", {}, tool.outputSchema ? jsonView(tool.outputSchema) : el("p", { class: "meta", text: "No output schema." }))));
  parts.push(runCard(tool));
  main.replaceChildren(...parts);
}

function runCard(tool) {
  const config = state.config || {};
  const schema = tool.inputSchema || {};
  const form = buildObject(resolve(schema, schema, 0).schema, schema, 0);
  const formBox = el("div", { class: "form-fields" }, form.node);
  const raw = el("textarea", { "aria-label": "Arguments as JSON", rows: 10, spellcheck: "false", hidden: true, id: "raw-json" });
  const formError = el("div", { class: "form-error", role: "alert", hidden: true });
  const showFormError = (message) => { formError.textContent = message; formError.hidden = !message; };
  const rawToggle = el("button", { type: "button", class: "small", "aria-pressed": "false", text: "Raw JSON" });
  let rawMode = false;
  rawToggle.addEventListener("click", () => {
    try {
      if (!rawMode) raw.value = JSON.stringify(fieldsValue(), null, 2);
      else form.set(rawValue());
    } catch (error) { showFormError(error.message); return; }
    showFormError("");
    rawMode = !rawMode;
    rawToggle.setAttribute("aria-pressed", String(rawMode));
    raw.hidden = !rawMode; formBox.hidden = rawMode;
    (rawMode ? raw : formBox.querySelector("input, select, textarea") || rawToggle).focus();
  });
  const fieldsValue = () => form.get();
  const rawValue = () => {
    let value;
    try { value = JSON.parse(raw.value.trim() || "{}"); } catch (e) { throw new Error("Arguments are not valid JSON: " + e.message); }
    if (!value || typeof value !== "object" || Array.isArray(value)) throw new Error("Arguments must be a JSON object");
    return value;
  };

  const tokenInput = el("input", { type: "password", id: "token", autocomplete: "off", value: state.token,
    placeholder: "Bearer token", oninput: (e) => { state.token = e.target.value; } });
  const tokenField = config.tokenRequired ? el("div", { class: "field" },
    el("div", { class: "field-head" }, el("label", { for: "token", text: "Explorer token" }),
      el("span", { class: "meta", text: "sent as Authorization: Bearer …" })), tokenInput) : null;

  const runButton = el("button", { type: "submit", class: "primary", id: "run", text: "Run", disabled: !config.allowExecute });
  const note = config.allowExecute ? el("span", { class: "meta", text: "Ctrl+Enter runs" })
    : el("span", { class: "note", id: "exec-note", role: "note", text: "Execution is disabled on this server" });
  const status = el("span", { class: "status", hidden: true });
  const output = el("pre", { class: "out", "aria-live": "polite", id: "output" });
  const resultCard = el("section", { class: "card", hidden: true, "aria-label": "Result" },
    el("div", { class: "card-head" }, el("h3", { text: "Result" }), status), output);

  const needsConfirm = () => Boolean(tool.requiresApproval || (tool.annotations || {}).destructiveHint);

  async function send(args, confirmed) {
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    if (config.tokenRequired || config.authRequired) authHeaders(headers);
    if (confirmed) headers["X-Apcore-Confirm"] = tool.name;
    const response = await fetch("tools/" + encodeURIComponent(tool.name) + "/call",
      { method: "POST", headers, body: JSON.stringify(args), cache: "no-store" });
    const text = await response.text();
    let body = null;
    try { body = JSON.parse(text); } catch (e) { body = null; }
    return { code: response.status, body, text };
  }

  async function run() {
    if (!config.allowExecute) return;
    let args;
    try { args = rawMode ? rawValue() : fieldsValue(); showFormError(""); }
    catch (error) { showFormError(error.message); return; }
    // A destructive or approval-gated tool never runs on one click: the person confirms first.
    let confirmed = false;
    if (needsConfirm()) {
      confirmed = await confirmCall(tool, args);
      if (!confirmed) return;
    }
    runButton.disabled = true; runButton.textContent = "Running…";
    const started = performance.now();
    let reply = { code: 0, body: null, text: "" };
    try {
      reply = await send(args, confirmed);
      if (reply.code === 428 && !confirmed && await confirmCall(tool, args)) reply = await send(args, true);
    } catch (error) { reply = { code: 0, body: null, text: "Network error: " + error.message }; }
    const { code, body, text } = reply;
    const elapsed = Math.round(performance.now() - started);
    runButton.disabled = false; runButton.textContent = "Run";
    const ok = code >= 200 && code < 300 && body && "result" in body;
    status.hidden = false;
    status.className = "status " + (ok ? "good" : "bad");
    status.textContent = (code ? "HTTP " + code : "no response") + " · " + elapsed + " ms";
    resultCard.hidden = false;
    if (ok) {
      output.className = "out";
      const parts = Array.isArray(body.content) ? body.content.map(contentView) : [];
      if (body.result !== null || parts.length === 0) parts.push(...jsonView(body.result).childNodes);
      output.replaceChildren(...parts);
    } else {
      output.className = "out error";
      output.replaceChildren(document.createTextNode(body && typeof body.error === "string" ? body.error : text || "Request failed"));
    }
    resultCard.scrollIntoView({ block: "nearest" });
    if (code === 401 && tokenField) tokenInput.focus();
  }

  const formEl = el("form", { novalidate: true, "aria-label": "Arguments for " + tool.name },
    el("div", { class: "card-head" }, el("h3", { text: "Arguments" }), el("span", { class: "spacer" }), rawToggle),
    formBox, raw, formError, tokenField, el("div", { class: "actions" }, runButton, note));
  formEl.addEventListener("submit", (event) => { event.preventDefault(); run(); });
  formEl.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); run(); }
  });
  return el("div", {}, el("section", { class: "card" }, formEl), resultCard);
}

/* ---------- confirmation and rich results ---------- */
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

function contentView(block) {
  const kind = block && block.type;
  if (kind === "image" && typeof block.data === "string" && /^image\/[\w.+-]+$/.test(block.mimeType || "")) {
    return el("img", { class: "media", alt: "image result", src: "data:" + block.mimeType + ";base64," + block.data });
  }
  if (kind === "audio" && typeof block.data === "string" && /^audio\/[\w.+-]+$/.test(block.mimeType || "")) {
    return el("audio", { class: "media", controls: true, src: "data:" + block.mimeType + ";base64," + block.data });
  }
  if (kind === "resource" && block.resource) {
    const r = block.resource;
    return el("figure", { class: "media" }, el("figcaption", { class: "meta", text: r.uri + (r.mimeType ? " · " + r.mimeType : "") }),
      el("pre", { class: "out", text: typeof r.text === "string" ? r.text : "(" + (r.blob || "").length + " base64 characters)" }));
  }
  if (kind === "resource_link") return el("p", { class: "meta", text: "Link: " + (block.name || "") + " <" + block.uri + ">" });
  if (kind === "text") return el("pre", { class: "out", text: block.text });
  return el("pre", { class: "out", text: JSON.stringify(block) });
}

/* ---------- routing and start-up ---------- */
function hashTool() {
  const match = /^#tool=(.*)$/.exec(location.hash);
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
