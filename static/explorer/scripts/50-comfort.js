
/* ---------- comfort: saved and shared arguments, call history, "copy as", image zoom ----------
   Nothing here ever stores or prints a token: arguments and history hold tool arguments only (minus
   fields the schema marks as secrets), and the copied commands carry $TOKEN placeholders. */
const STORE_ARGS = "apcore-mcp-explorer.arguments";
const STORE_HISTORY = "apcore-mcp-explorer.history";
const HISTORY_CAP = 50;
const SAVED_TOOLS_CAP = 100;

function storeRead(key, fallback) {
  try { const value = JSON.parse(localStorage.getItem(key) || "null"); return value === null ? fallback : value; }
  catch (e) { return fallback; }
}
function storeWrite(key, value) {
  try { localStorage.setItem(key, JSON.stringify(value)); } catch (e) { /* storage off or full: a comfort, not a need */ }
}
const isObject = (v) => Boolean(v) && typeof v === "object" && !Array.isArray(v);

/* ---------- secrets: what the schema marks secret (writeOnly, format password) is never kept ----------
   At every depth: nested objects, array items (and tuple items), $ref'd definitions and every branch of
   anyOf / oneOf / allOf. A value is dropped when any schema it could be matched against marks it secret,
   so a union whose branches disagree errs on the side of not keeping it. Only what is stored or put in a
   link goes through here; the call itself sends the arguments as they are. */
const SECRET_DEPTH = 32;

/* A local JSON pointer ("#", "#/$defs/Creds", "#/definitions/a~1b") inside the tool's schema. */
function schemaAt(root, ref) {
  if (typeof ref !== "string" || !ref.startsWith("#")) return undefined;
  let node = root;
  for (const raw of ref.slice(1).split("/").slice(1)) {
    let part;
    try { part = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~"); } catch (e) { return undefined; }
    if (!node || typeof node !== "object" || !(part in node)) return undefined;
    node = node[part];
  }
  return node;
}

/* Every schema a value under ``schema`` is checked against: the schema itself, its $ref target and
   the branches of its anyOf / oneOf / allOf, followed (bounded) as far as they go. */
function schemaBranches(schema, root) {
  const out = [], seen = new Set();
  (function walk(s, hops) {
    if (!s || typeof s !== "object" || Array.isArray(s) || seen.has(s) || hops > SECRET_DEPTH) return;
    seen.add(s);
    out.push(s);
    if (typeof s.$ref === "string") walk(schemaAt(root, s.$ref), hops + 1);
    for (const key of ["anyOf", "oneOf", "allOf"]) if (Array.isArray(s[key])) s[key].forEach((b) => walk(b, hops + 1));
  })(schema, 0);
  return out;
}

const marksSecret = (s) => s.writeOnly === true || s.format === "password";

/* The schemas that apply to the member ``key`` of an object checked against ``schemas``. */
function memberSchemas(schemas, key) {
  const out = [];
  for (const s of schemas) {
    let named = false;
    if (isObject(s.properties) && Object.prototype.hasOwnProperty.call(s.properties, key)) { out.push(s.properties[key]); named = true; }
    for (const [pattern, sub] of Object.entries(isObject(s.patternProperties) ? s.patternProperties : {})) {
      let re = null;
      try { re = new RegExp(pattern, "u"); } catch (e) { re = null; }
      if (re && re.test(key)) { out.push(sub); named = true; }
    }
    if (!named && isObject(s.additionalProperties)) out.push(s.additionalProperties);
  }
  return out;
}

/* The schemas that apply to item ``index`` of an array checked against ``schemas``. */
function itemSchemas(schemas, index) {
  const out = [];
  for (const s of schemas) {
    const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : null;
    if (tuple && index < tuple.length) out.push(tuple[index]);
    else if (tuple) { if (isObject(s.additionalItems)) out.push(s.additionalItems); if (isObject(s.items)) out.push(s.items); }
    else if (isObject(s.items)) out.push(s.items);
  }
  return out;
}

/* ``value`` without the parts ``schemas`` mark secret; undefined when the value itself is secret. */
function keptPart(value, schemas, root, depth) {
  const all = schemas.flatMap((s) => schemaBranches(s, root));
  if (all.some(marksSecret)) return undefined;
  if (depth > SECRET_DEPTH) return Array.isArray(value) || isObject(value) ? undefined : value;  // too deep to tell: not kept
  if (Array.isArray(value)) {
    return value.map((item, i) => keptPart(item, itemSchemas(all, i), root, depth + 1)).filter((item) => item !== undefined);
  }
  if (isObject(value)) {
    const out = {};
    for (const [key, item] of Object.entries(value)) {
      const kept = keptPart(item, memberSchemas(all, key), root, depth + 1);
      if (kept !== undefined) out[key] = kept;
    }
    return out;
  }
  return value;
}

function withoutSecrets(toolName, args) {
  const tool = state.details.get(toolName);
  const schema = (tool && tool.inputSchema) || {};
  const kept = keptPart(isObject(args) ? args : {}, [schema], schema, 0);
  return isObject(kept) ? kept : {};
}

function hashParams() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  let args;
  try { args = params.has("args") ? JSON.parse(params.get("args")) : undefined; } catch (e) { args = undefined; }
  return { tool: params.get("tool"), args: isObject(args) ? args : undefined };
}

function toolLink(toolName, args) {
  let json = args && Object.keys(args).length ? JSON.stringify(args) : "";
  if (json.length > 6000) json = "";  // too long for a link; this browser still keeps them
  return "#tool=" + encodeURIComponent(toolName) + (json ? "&args=" + encodeURIComponent(json) : "");
}

/* A shared link (#tool=…&args=…) wins, then what this browser last had for the tool. */
function savedArguments(toolName) {
  const fromHash = hashParams();
  if (fromHash.tool === toolName && fromHash.args) return fromHash.args;
  const saved = storeRead(STORE_ARGS, {})[toolName];
  return saved && isObject(saved.args) ? saved.args : undefined;
}

function rememberArguments(toolName, args) {
  if (!toolName || !isObject(args)) return;
  const kept = withoutSecrets(toolName, args);
  const all = storeRead(STORE_ARGS, {});
  all[toolName] = { args: kept, at: Date.now() };
  const names = Object.keys(all).sort((a, b) => (all[b].at || 0) - (all[a].at || 0));
  for (const name of names.slice(SAVED_TOOLS_CAP)) delete all[name];
  storeWrite(STORE_ARGS, all);
  // replaceState fires no hashchange: the page does not re-render while someone types.
  if (state.selected === toolName) history.replaceState(null, "", toolLink(toolName, kept));
}

const pendingSave = { timer: 0, run: null };
function flushSave() { clearTimeout(pendingSave.timer); if (pendingSave.run) pendingSave.run(); }
window.addEventListener("pagehide", flushSave);

/* Called by the call card (30-call.js) with its form: saves the arguments as they change and adds
   the "Copy as" buttons to the form's head. */
function decorateArguments(tool, formEl, api) {
  const name = tool.name;
  const raw = formEl.querySelector("#raw-json");
  const current = () => {  // what the person sees: the raw JSON when that view is on and parses
    if (raw && !raw.hidden) { try { const v = JSON.parse(raw.value); if (isObject(v)) return v; } catch (e) { /* fall back */ } }
    return api.values();
  };
  flushSave();  // the previous form's last edit is kept even when the switch came within the debounce
  const save = () => {
    clearTimeout(pendingSave.timer);
    pendingSave.run = () => { pendingSave.run = null; rememberArguments(name, current()); };
    pendingSave.timer = setTimeout(pendingSave.run, 250);
  };
  formEl.addEventListener("input", save);
  formEl.addEventListener("change", save);
  formEl.addEventListener("click", (event) => { if (event.target.closest("button")) save(); });
  const button = (kind, text) => el("button", { type: "button", class: "small", "data-copy": kind, text,
    "aria-label": "Copy as " + text, onclick: () => showCopy(tool, kind, current()) });
  const bar = el("span", { class: "copy-as", role: "group", "aria-label": "Copy as" },
    el("span", { class: "meta", "aria-hidden": "true", text: "Copy as" }), button("curl", "curl"), button("python", "Python"), button("jsonrpc", "JSON-RPC"));
  const head = formEl.querySelector(".card-head");
  if (head) head.insertBefore(bar, head.lastElementChild);
}

/* ---------- history ---------- */
function recordCall(entry) {
  if (!entry || !entry.tool) return;
  const calls = storeRead(STORE_HISTORY, []);
  calls.unshift({ tool: String(entry.tool), args: withoutSecrets(entry.tool, isObject(entry.args) ? entry.args : {}),
    era: entry.era || null, outcome: entry.outcome || "ok", at: entry.at || Date.now() });
  storeWrite(STORE_HISTORY, calls.slice(0, HISTORY_CAP));
  if ($("history-dialog")) renderHistory();
}

function openWithArguments(name, args) {
  rememberArguments(name, args);
  location.hash = toolLink(name, args);  // hashchange selects the tool with these arguments
}

function renderHistory() {
  const dialog = $("history-dialog");
  if (!dialog) return;
  const list = dialog.querySelector("ol");
  const calls = storeRead(STORE_HISTORY, []);
  list.replaceChildren();
  dialog.querySelector(".history-empty").hidden = calls.length > 0;
  calls.forEach((call, i) => {
    const when = new Date(call.at);
    const outcome = call.outcome === "ok" || call.outcome === "cancelled" ? call.outcome : "error";  // "failed" too
    const rerun = el("button", { type: "button", class: "small", "data-rerun": String(i), text: "Re-run",
      "aria-label": "Re-run " + call.tool + " from " + when.toLocaleTimeString(), onclick: () => {
        dialog.close();
        if (typeof runTool === "function") runTool(call.tool, call.args);  // the call flow (30-call.js)
        else openWithArguments(call.tool, call.args);
      } });
    const open = el("button", { type: "button", class: "small", text: "Open",
      "aria-label": "Open " + call.tool + " with these arguments", onclick: () => { dialog.close(); openWithArguments(call.tool, call.args); } });
    list.append(el("li", { class: "history-item" },
      el("div", { class: "history-line" },
        el("span", { class: "tool-name", text: call.tool }),
        el("span", { class: "status " + (outcome === "ok" ? "good" : outcome === "cancelled" ? "muted" : "bad"), text: outcome }),
        el("time", { class: "meta", datetime: when.toISOString(), text: when.toLocaleString() }),
        call.era ? el("span", { class: "meta", text: call.era }) : null,
        el("span", { class: "spacer" }), open, rerun),
      el("code", { class: "history-args", text: JSON.stringify(call.args) })));
  });
}

function showHistory() {
  let dialog = $("history-dialog");
  if (!dialog) {
    const close = el("button", { type: "button", text: "Close", onclick: () => dialog.close() });
    const clear = el("button", { type: "button", id: "history-clear", text: "Clear", onclick: () => { storeWrite(STORE_HISTORY, []); renderHistory(); close.focus(); } });
    dialog = el("dialog", { class: "panel history", id: "history-dialog", "aria-labelledby": "history-title" },
      el("div", { class: "card-head" }, el("h3", { id: "history-title", text: "History" }),
        el("span", { class: "meta", text: "calls from this browser, newest first (last " + HISTORY_CAP + ")" }), el("span", { class: "spacer" }), clear, close),
      el("p", { class: "meta history-empty", text: "No calls yet." }), el("ol", { class: "history-list" }));
    dialog.addEventListener("close", () => { const back = $("history-open"); if (back) back.focus(); });
    document.body.append(dialog);
  }
  renderHistory();
  dialog.showModal();
  (dialog.querySelector("[data-rerun]") || dialog.querySelector("button")).focus();
}

/* ---------- copy as curl / Python / JSON-RPC ---------- */
function mcpRequest(tool, args) {
  const versions = (state.config && state.config.protocolVersions) || [];
  const version = versions.find((v) => v >= MCP_MODERN) || MCP_MODERN;
  const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool.name, arguments: args,
    _meta: { "io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {} } } };
  const config = state.config || {};
  const headers = [["Content-Type", "application/json"], ["Accept", "application/json, text/event-stream"],
    ["MCP-Protocol-Version", version], ["Mcp-Method", "tools/call"], ["Mcp-Name", mcpHeaderValue(tool.name)]];
  // Arguments the schema mirrors in Mcp-Param-* headers (x-mcp-header), as the call card sends them (20-mcp.js).
  for (const [name, value] of Object.entries(mcpParamHeaders(tool.inputSchema || {}, args))) headers.push([name, value]);
  if ((tool.annotations || {}).destructiveHint || tool.requiresApproval) headers.push(["X-Apcore-Confirm", tool.name]);
  const url = new URL(config.mcpPath || "/mcp", location.href).href;
  return { url, body, headers, needsToken: Boolean(config.authRequired || config.tokenRequired) };
}

const shellQuote = (text) => "'" + String(text).replace(/'/g, "'\\''") + "'";

function pythonLiteral(value, indent) {
  const pad = "    ".repeat(indent + 1), end = "    ".repeat(indent);
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number" || typeof value === "string") return JSON.stringify(value);  // JSON escapes are Python escapes
  if (Array.isArray(value)) {
    return value.length ? "[\n" + value.map((v) => pad + pythonLiteral(v, indent + 1) + ",\n").join("") + end + "]" : "[]";
  }
  const keys = Object.keys(value);
  return keys.length ? "{\n" + keys.map((k) => pad + JSON.stringify(k) + ": " + pythonLiteral(value[k], indent + 1) + ",\n").join("") + end + "}" : "{}";
}

function copyText(tool, kind, args) {
  const request = mcpRequest(tool, args);
  if (kind === "jsonrpc") return JSON.stringify(request.body, null, 2);
  if (kind === "curl") {
    const lines = ["curl -sS -X POST " + shellQuote(request.url)];
    for (const [name, value] of request.headers) lines.push("-H " + shellQuote(name + ": " + value));
    if (request.needsToken) lines.push('-H "Authorization: Bearer $TOKEN"');
    lines.push("--data-raw " + shellQuote(JSON.stringify(request.body, null, 2)));
    return lines.join(" \\\n  ");
  }
  const auth = request.needsToken;
  const lines = auth ? ["import asyncio", "import os", "", "import httpx2", "from mcp import Client",
    "from mcp.client.streamable_http import streamable_http_client"] : ["import asyncio", "", "from mcp import Client"];
  lines.push("", "URL = " + JSON.stringify(request.url), "ARGUMENTS = " + pythonLiteral(args, 0), "", "", "async def main() -> None:");
  if (auth) {
    lines.push('    http = httpx2.AsyncClient(headers={"Authorization": "Bearer " + os.environ["TOKEN"]})',
      "    async with http, Client(streamable_http_client(URL, http_client=http)) as client:");
  } else lines.push("    async with Client(URL) as client:");
  lines.push("        result = await client.call_tool(" + JSON.stringify(tool.name) + ", ARGUMENTS)",
    "        print(result.structured_content if result.structured_content is not None else result.content)",
    "", "", "asyncio.run(main())", "");
  return lines.join("\n");
}

async function showCopy(tool, kind, args) {
  const text = copyText(tool, kind, args);
  const titles = { curl: "curl command", python: "Python (MCP SDK client)", jsonrpc: "JSON-RPC request" };
  const area = el("textarea", { id: "copy-text", readonly: true, rows: Math.min(24, text.split("\n").length + 1), spellcheck: "false",
    "aria-label": titles[kind] });
  area.value = text;
  const status = el("p", { class: "meta", id: "copy-status", role: "status" });
  const close = el("button", { type: "button", text: "Close" });
  const dialog = el("dialog", { class: "panel copy", id: "copy-dialog", "aria-labelledby": "copy-title" },
    el("div", { class: "card-head" }, el("h3", { id: "copy-title", text: "Copy as " + titles[kind] }), el("span", { class: "spacer" }), close),
    area, status,
    requestNote(kind));
  const back = document.activeElement;
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => { dialog.remove(); if (back && back.focus) back.focus(); });
  const old = $("copy-dialog");
  if (old) old.close();
  document.body.append(dialog);
  dialog.showModal();
  area.focus();
  area.select();
  area.scrollTop = 0;  // selected, but showing its start
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = "Copied to the clipboard.";
  } catch (e) {
    status.textContent = "The clipboard is not available here: the text is selected, press Ctrl+C (⌘C) to copy it.";
  }
}

function requestNote(kind) {
  const config = state.config || {};
  if (kind === "jsonrpc") return el("p", { class: "meta", text: "POST it to " + new URL(config.mcpPath || "/mcp", location.href).href + " with the MCP headers (see curl)." });
  return config.authRequired || config.tokenRequired
    ? el("p", { class: "meta", text: "Set TOKEN to your token first (export TOKEN=…): the page never copies it." }) : null;
}

/* ---------- image zoom ---------- */
function zoomImage(image) {
  const full = el("img", { class: "zoomed", src: image.src, alt: image.alt || "image, full size" });
  const close = el("button", { type: "button", class: "small", text: "Close" });
  const dialog = el("dialog", { class: "panel zoom", id: "zoom-dialog", "aria-label": "Image, full size" },
    el("div", { class: "card-head" }, el("span", { class: "meta", text: "Full size · Escape closes" }), el("span", { class: "spacer" }), close),
    el("div", { class: "zoom-frame" }, full));
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });  // the backdrop
  dialog.addEventListener("close", () => { dialog.remove(); image.focus(); });
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
}

function zoomable(node) {
  const images = node.matches && node.matches("#detail img") ? [node] : node.querySelectorAll ? node.querySelectorAll("#detail img") : [];
  for (const image of images) {
    if (image.dataset.zoom) continue;
    image.dataset.zoom = "1";
    image.tabIndex = 0;
    image.setAttribute("role", "button");
    image.setAttribute("aria-label", (image.alt || "image") + ": open full size");
    image.classList.add("zoomable");
  }
}
new MutationObserver((changes) => {
  for (const change of changes) for (const node of change.addedNodes) if (node.nodeType === 1) zoomable(node);
}).observe(document.body, { childList: true, subtree: true });
document.addEventListener("click", (event) => {
  const image = event.target.closest && event.target.closest("img.zoomable");
  if (image) zoomImage(image);
});
document.addEventListener("keydown", (event) => {
  const image = event.target.closest && event.target.closest("img.zoomable");
  if (image && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); zoomImage(image); }
});

/* The History button lives in the page header. */
(function mountHistory() {
  const header = document.querySelector("header.top");
  if (!header) return;
  const open = el("button", { type: "button", id: "history-open", class: "small", text: "History", onclick: showHistory });
  header.insertBefore(open, $("token-badge"));
})();
