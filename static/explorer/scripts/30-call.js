/* ---------- calling tools over MCP: the era, the shared client, the call card ---------- */
const ERA_KEY = "apcore-mcp-explorer.era";
const mcp = { client: null, key: "" };

function knownEras() {
  const listed = (state.config && state.config.protocolVersions) || [];
  return listed.length ? listed : [MCP_MODERN, MCP_HANDSHAKE];
}

function currentEra() {
  const eras = knownEras();
  let saved = null;
  try { saved = localStorage.getItem(ERA_KEY); } catch (e) { saved = null; }
  return eras.includes(saved) ? saved : eras[0];
}

/* The header's era selector: the newest by default, the choice kept in localStorage. */
function setupEra() {
  const select = $("era");
  if (!select) return;
  select.replaceChildren(...knownEras().map((v) => el("option", { value: v,
    text: v + (v === MCP_MODERN ? " (stateless)" : " (session)") })));
  select.value = currentEra();
  select.onchange = () => {
    try { localStorage.setItem(ERA_KEY, select.value); } catch (e) { /* private mode: this page only */ }
    mcpClient(); // closes the other era's session now
  };
}

function mcpEndpoint() {
  const path = (state.config && state.config.mcpPath) || "mcp";
  return new URL(path, location.href).href;
}

/* One client per era and token: a handshake-era session is reused across calls. */
function mcpClient() {
  const era = currentEra();
  const key = era + "\n" + state.token;
  if (mcp.client && mcp.key === key) return mcp.client;
  if (mcp.client) mcp.client.close();
  mcp.client = createMcpClient({ endpoint: mcpEndpoint(), era, headers: () => authHeaders({}), logLevel: "info" });
  mcp.key = key;
  return mcp.client;
}
window.addEventListener("pagehide", () => { if (mcp.client) mcp.client.close(); });

/* The arguments form: the shared form engine (15-forms.js). */
function argumentsForm(schema, values) {
  const form = buildForm(schema, { values });
  return { node: form.node, get: () => form.collect(), values: () => form.values(), set: (v) => form.set(v),
    setErrors: form.setErrors };
}

/* Re-runs a call (the history of 50-comfort.js): open the tool, fill the form, run. */
async function runTool(name, args) {
  history.replaceState(null, "", "#tool=" + encodeURIComponent(name));
  await select(name);
  if (!state.card || state.card.tool !== name) return null;
  state.card.setArgs(args || {});
  return state.card.run();
}

function disabledPanel(setting) {
  const s = { ...((state.config || {}).executeSetting || {}), ...(setting || {}) };
  const how = s.flag ? el("p", {}, "To run tools from this page, start the server with ",
    el("code", { text: s.flag }), s.env ? [" (or set ", el("code", { text: s.env + "=true" }), ")"] : null, ".")
    : el("p", { text: "The server's operator can turn on its allow_execute setting." });
  return el("section", { class: "card disabled-panel", id: "exec-disabled", role: "note", "aria-labelledby": "exec-note" },
    el("h3", { id: "exec-note", text: "Execution is disabled on this server" }),
    el("p", { text: "Tools can be listed and read here, but not run." }), how,
    s.risk ? el("p", { class: "risk", id: "exec-risk" }, el("strong", { text: "What it risks: " }), s.risk) : null);
}

function runCard(tool) {
  const config = state.config || {};
  const schema = tool.inputSchema || {};
  const saved = typeof savedArguments === "function" ? savedArguments(tool.name) : undefined;
  const form = argumentsForm(schema, saved || undefined);
  const formBox = el("div", { class: "form-fields" }, form.node);
  const setArgs = (values) => form.set(values);
  const raw = el("textarea", { "aria-label": "Arguments as JSON", rows: 10, spellcheck: "false", hidden: true, id: "raw-json" });
  const formError = el("div", { class: "form-error", role: "alert", hidden: true });
  const showFormError = (message) => { formError.textContent = message; formError.hidden = !message; };
  const rawToggle = el("button", { type: "button", class: "small", "aria-pressed": "false", text: "Raw JSON" });
  let rawMode = false;
  const rawValue = () => {
    let value;
    try { value = JSON.parse(raw.value.trim() || "{}"); } catch (e) { throw new Error("Arguments are not valid JSON: " + e.message); }
    if (!value || typeof value !== "object" || Array.isArray(value)) throw new Error("Arguments must be a JSON object");
    return value;
  };
  rawToggle.addEventListener("click", () => {
    try {
      if (!rawMode) raw.value = JSON.stringify(form.values(), null, 2); // as typed: raw JSON may fix it
      else setArgs(rawValue());
    } catch (error) { showFormError(error.message); return; }
    showFormError("");
    rawMode = !rawMode;
    rawToggle.setAttribute("aria-pressed", String(rawMode));
    raw.hidden = !rawMode; formBox.hidden = rawMode;
    (rawMode ? raw : formBox.querySelector("input, select, textarea") || rawToggle).focus();
  });

  const tokenInput = el("input", { type: "password", id: "token", autocomplete: "off", value: state.token,
    placeholder: "Bearer token", oninput: (e) => { state.token = e.target.value; } });
  const tokenField = config.tokenRequired ? el("div", { class: "field" },
    el("div", { class: "field-head" }, el("label", { for: "token", text: "Explorer token" }),
      el("span", { class: "meta", text: "sent as Authorization: Bearer …" })), tokenInput) : null;

  const runButton = el("button", { type: "submit", class: "primary", id: "run", text: "Run" });
  const cancelButton = el("button", { type: "button", id: "cancel", text: "Cancel", hidden: true });
  const bar = el("progress", { id: "call-progress", "aria-label": "Progress of the call" });
  const barText = el("span", { class: "meta", id: "progress-message" });
  const progressRow = el("div", { class: "progress-row", hidden: true }, bar, barText);
  const disabledBox = el("div", {}, config.allowExecute ? null : disabledPanel());
  const actions = el("div", { class: "actions", hidden: !config.allowExecute }, runButton, cancelButton,
    el("span", { class: "meta", text: "Ctrl+Enter runs" }));

  const status = el("span", { class: "status", hidden: true });
  const output = el("div", { class: "result", "aria-live": "polite", id: "output" });
  const protocol = el("ol", { class: "protocol", id: "protocol", "aria-label": "Protocol messages of this call" });
  const metaBox = el("div", { id: "result-meta" });
  const tabs = tabSet([["Result", el("div", {}, output, metaBox)], ["Protocol", protocol]]);
  const resultCard = el("section", { class: "card", hidden: true, "aria-label": "Call" },
    el("div", { class: "card-head" }, tabs.list, el("span", { class: "spacer" }), status), tabs.panels);

  const destructive = Boolean((tool.annotations || {}).destructiveHint);
  let running = null;

  async function run() {
    if (!config.allowExecute || running) return null;
    let args;
    try { args = rawMode ? rawValue() : form.get(); showFormError(""); }
    catch (error) { showFormError(error.message); return null; }
    // A destructive tool the server does not itself ask about never runs on one click: the page asks.
    let confirmed = false;
    if (destructive && !tool.requiresApproval) {
      if (!(await confirmCall(tool, args))) return null;
      confirmed = true;
    }
    if (typeof rememberArguments === "function") rememberArguments(tool.name, args);
    const era = currentEra();
    const controller = new AbortController();
    running = controller;
    const t0 = performance.now();
    protocol.replaceChildren();
    const onTraffic = (entry) => protocol.append(protocolEntry(entry, t0));
    runButton.disabled = true; runButton.textContent = "Running…";
    cancelButton.hidden = false; cancelButton.disabled = false;
    progressRow.hidden = false; bar.removeAttribute("value"); barText.textContent = "waiting for the server…";
    status.hidden = false; status.className = "status"; status.textContent = "running · " + era;
    resultCard.hidden = false;
    output.className = "result"; output.replaceChildren(el("p", { class: "meta", text: "Running…" }));
    metaBox.replaceChildren();
    let outcome, result = null, error = null, httpStatus = 0;
    const progressToken = "explorer-" + Math.random().toString(36).slice(2, 10);
    const attempt = (withConfirm) => {
      const client = mcpClient();
      const headers = { ...mcpParamHeaders(schema, args), ...(withConfirm ? { "X-Apcore-Confirm": tool.name } : {}) };
      return client.request("tools/call", { name: tool.name, arguments: args, _meta: { progressToken } }, {
        signal: controller.signal, headers,
        // The status of the last request's exchange (tools/call, or the handshake that failed before it), never
        // the 202 that acknowledged an answer or a notification the page posted meanwhile.
        onTraffic: (entry) => { if (entry.kind === "http" && entry.status && entry.answers) httpStatus = entry.status; onTraffic(entry); },
        onNotification: (msg) => {
          const p = msg.params || {};
          if (msg.method === "notifications/progress" && p.progressToken === progressToken) {
            if (typeof p.total === "number" && p.total > 0) { bar.max = p.total; bar.value = Math.min(p.progress, p.total); }
            else bar.removeAttribute("value");
            barText.textContent = p.message || String(p.progress) + (p.total ? " of " + p.total : "");
          }
        },
        onServerRequest: (method, params) => elicitationDialog(tool, args, params),
      });
    };
    try {
      try { result = await attempt(confirmed); }
      catch (e) {
        // A 428 is the server asking the page to confirm a destructive call; the person decides.
        if (e.httpStatus === 428 && !confirmed && !controller.signal.aborted) {
          if (await confirmCall(tool, args, e.data && e.data.confirm)) { confirmed = true; result = await attempt(true); }
          else throw Object.assign(new Error("Not run: you did not confirm the call."), { notConfirmed: true });
        } else throw e;
      }
      outcome = result && result.isError ? "error" : "ok";
    } catch (e) {
      error = e;
      outcome = e.cancelled ? "cancelled" : "failed";
      if (e.httpStatus === 401 || e.httpStatus === 404) { if (mcp.client) mcp.client.close(); mcp.client = null; }
    }
    running = null;
    // A question still open belongs to a call that is over: close it without answering.
    for (const dialog of document.querySelectorAll("dialog.elicit")) { dialog.close(); dialog.remove(); }
    runButton.disabled = false; runButton.textContent = "Run";
    cancelButton.hidden = true; progressRow.hidden = true;
    const elapsed = Math.round(performance.now() - t0);
    status.className = "status " + (outcome === "ok" ? "good" : outcome === "cancelled" ? "" : "bad");
    status.textContent = [httpStatus ? "HTTP " + httpStatus : "no response", elapsed + " ms", era].join(" · ");
    if (error) renderFailure(output, error);
    else renderResult(output, result, metaBox);
    if (!error && tool.view) deliverToView(tool, args, result);  // 35-views.js
    // The server's "Input validation failed" result is also shown beside the fields it names.
    if (result && result.isError && !rawMode) form.setErrors(validationErrors(resultText(result)));
    if (error && error.data && error.data.flag) disabledBox.replaceChildren(disabledPanel(error.data));
    if (typeof recordCall === "function") recordCall({ tool: tool.name, args, era, outcome, at: Date.now() });
    resultCard.scrollIntoView({ block: "nearest" });
    if (error && error.httpStatus === 401 && tokenField) tokenInput.focus();
    return { outcome, result, error };
  }

  cancelButton.addEventListener("click", () => {
    if (!running) return;
    cancelButton.disabled = true;
    barText.textContent = "cancelling…";
    running.abort();
  });

  const formEl = el("form", { novalidate: true, "aria-label": "Arguments for " + tool.name },
    el("div", { class: "card-head" }, el("h3", { text: "Arguments" }), el("span", { class: "spacer" }), rawToggle),
    formBox, raw, formError, tokenField, actions, progressRow);
  if (typeof decorateArguments === "function") decorateArguments(tool, formEl, form);  // 50-comfort.js
  formEl.addEventListener("submit", (event) => { event.preventDefault(); run(); });
  formEl.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); run(); }
  });
  state.card = { tool: tool.name, run, setArgs: (values) => {
    if (rawMode) raw.value = JSON.stringify(values, null, 2); else setArgs(values);
  } };
  return el("div", {}, el("section", { class: "card" }, formEl), disabledBox, resultCard);
}

/* Accessible tabs: arrow keys move between them, each controls one panel. */
function tabSet(pairs) {
  const list = el("div", { role: "tablist", class: "tabs" });
  const panels = el("div", {});
  const buttons = [];
  const choose = (index, focus) => {
    buttons.forEach((b, i) => {
      b.setAttribute("aria-selected", String(i === index));
      b.tabIndex = i === index ? 0 : -1;
      pairs[i][1].parentElement.hidden = i !== index;
    });
    if (focus) buttons[index].focus();
  };
  pairs.forEach(([label, content], i) => {
    const id = nextId();
    const tab = el("button", { type: "button", role: "tab", id: id + "-tab", "aria-controls": id, class: "tab", text: label,
      onclick: () => choose(i, false) });
    tab.addEventListener("keydown", (event) => {
      if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
        event.preventDefault();
        choose((i + (event.key === "ArrowRight" ? 1 : pairs.length - 1)) % pairs.length, true);
      }
    });
    buttons.push(tab);
    list.append(tab);
    panels.append(el("div", { role: "tabpanel", id, "aria-labelledby": id + "-tab", class: "tabpanel" }, content));
  });
  choose(0, false);
  return { list, panels, choose };
}

const ENTRY_LABELS = { request: "request", response: "response", notification: "notification", "server-request": "server request",
  "input-request": "input request", "input-response": "input response", http: "HTTP", transport: "transport", note: "note", body: "body" };

function protocolEntry(entry, t0) {
  const m = entry.message;
  const what = m && m.method ? m.method : entry.key ? "key " + entry.key : m && m.id !== undefined ? "id " + m.id : entry.note || "";
  const arrow = entry.dir === "out" ? "→ sent" : entry.dir === "in" ? "← received" : "·";
  return el("li", { class: "msg " + entry.dir, "data-kind": entry.kind },
    el("div", { class: "msg-head" },
      el("span", { class: "msg-dir", text: arrow }),
      el("span", { class: "msg-time", text: "+" + Math.max(0, Math.round(entry.at - t0)) + " ms" }),
      el("span", { class: "msg-kind", text: ENTRY_LABELS[entry.kind] || entry.kind }),
      el("span", { class: "msg-what", text: what })),
    m !== undefined ? jsonView(m) : entry.note && entry.note !== what ? el("pre", { class: "out", text: entry.note }) : null);
}

/* ---------- results ---------- */
function resultText(result) {
  return (result.content || []).filter((b) => b && b.type === "text").map((b) => b.text).join("\n");
}

function sameJSON(text, value) {
  try { return JSON.stringify(JSON.parse(text)) === JSON.stringify(value); } catch (e) { return false; }
}

function renderResult(output, result, metaBox) {
  result = result || {};
  const blocks = Array.isArray(result.content) ? result.content : [];
  const structured = result.structuredContent;
  const parts = [];
  if (result.isError) parts.push(el("p", { class: "result-flag", text: "The tool reported an error (isError)." }));
  for (const block of blocks) {
    // The text block that only repeats structuredContent as JSON is shown once, as the JSON view.
    if (structured !== undefined && block && block.type === "text" && sameJSON(block.text, structured)) continue;
    parts.push(contentView(block));
  }
  if (structured !== undefined) parts.push(jsonView(structured));
  if (!parts.length) parts.push(el("p", { class: "meta", text: "The tool returned no content." }));
  // The result's _meta is shown beside the content, not in it.
  metaBox.replaceChildren(result._meta && Object.keys(result._meta).length
    ? el("details", { class: "block result-meta" }, el("summary", { text: "Result _meta" }), el("div", {}, jsonView(result._meta))) : "");
  output.className = "result" + (result.isError ? " error" : "");
  output.replaceChildren(...parts);
}

function renderFailure(output, error) {
  output.className = "result error";
  const parts = [el("p", { class: "failure", text: error.cancelled ? "The call was cancelled." : error.message })];
  if (error.code !== undefined) parts.push(el("p", { class: "meta error-code", text: "JSON-RPC error " + error.code }));
  if (error.data !== undefined && !(error.data && error.data.flag)) parts.push(jsonView(error.data));
  output.replaceChildren(...parts);
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
  if (kind === "resource_link") {
    return el("p", { class: "link-block" }, el("span", { class: "chip", text: "resource link" }), " ",
      el("span", { text: (block.name || "") + " " }), el("code", { text: block.uri || "" }),
      block.mimeType ? el("span", { class: "meta", text: " · " + block.mimeType }) : null,
      block.description ? el("span", { class: "meta", text: " · " + block.description }) : null);
  }
  if (kind === "text") {
    if (/^\s*[[{]/.test(block.text || "")) { try { return jsonView(JSON.parse(block.text)); } catch (e) { /* plain text */ } }
    return el("pre", { class: "out", text: block.text });
  }
  return el("pre", { class: "out", text: JSON.stringify(block) });
}

/* ---------- what the server asks the person during a call ---------- */
function elicitationDialog(tool, args, params) {
  return new Promise((resolve) => {
    const schema = params.requestedSchema || { type: "object", properties: {} };
    const props = schema.properties || {};
    // An approval of the call in progress (approval.py asks with one boolean "approve" field).
    const approval = Boolean(tool.requiresApproval && props.approve && props.approve.type === "boolean");
    const titleId = nextId();
    const formError = el("div", { class: "form-error", role: "alert", hidden: true });
    let form = null;
    const parts = [el("h3", { id: titleId, text: approval ? "Approve " + tool.name + "?" : "The server asks" })];
    if (approval) {
      parts.push(el("div", { class: "chips" }, chipsFor(tool)),
        tool.description ? el("p", { class: "meta", id: "approval-description", text: tool.description }) : null,
        el("p", { class: "meta", text: "With these arguments:" }),
        el("pre", { class: "out", id: "approval-args", text: JSON.stringify(args, null, 2) }),
        el("details", { class: "block" }, el("summary", { text: "What the server says" }),
          el("div", {}, el("pre", { class: "out elicit-message", text: params.message || "" }))));
    } else {
      parts.push(el("p", { class: "elicit-message", id: "elicit-message", text: params.message || "" }));
      if (params.mode === "url") parts.push(el("p", { class: "meta" }, "It points to ", el("code", { text: params.url || "" }),
        " (the page does not open it)."));
      else { form = argumentsForm(schema); parts.push(el("div", { class: "form-fields" }, form.node)); }
      parts.push(el("p", { class: "meta", text: "Asked during the call of " + tool.name + "." }));
    }
    const accept = el("button", { type: "submit", class: approval ? "danger" : "primary", id: "elicit-accept",
      text: approval ? "Approve and run" : "Accept" });
    const decline = el("button", { type: "button", id: "elicit-decline", text: "Decline" });
    const cancel = el("button", { type: "button", id: "elicit-cancel", text: "Cancel" });
    const body = el("form", { method: "dialog", novalidate: true }, ...parts, formError,
      el("div", { class: "actions" }, accept, decline, cancel));
    const dialog = el("dialog", { class: "confirm elicit", id: approval ? "approval-dialog" : "elicit-dialog",
      "aria-labelledby": titleId }, body);
    let done = false;
    const close = (answer) => {
      if (done) return;
      done = true;
      dialog.close(); dialog.remove(); resolve(answer);
    };
    body.addEventListener("submit", (event) => {
      event.preventDefault();
      if (approval) return close({ action: "accept", content: { approve: true } });
      let content = {};
      try { content = form ? form.get() : {}; }
      catch (error) { formError.textContent = error.message; formError.hidden = false; return; }
      const missing = (schema.required || []).filter((k) => content[k] === undefined);
      if (missing.length) { formError.textContent = "Required: " + missing.join(", "); formError.hidden = false; return; }
      close({ action: "accept", content });
    });
    decline.addEventListener("click", () => close({ action: "decline" }));
    cancel.addEventListener("click", () => close({ action: "cancel" }));
    dialog.addEventListener("cancel", (event) => { event.preventDefault(); close({ action: "cancel" }); });
    document.body.append(dialog);
    dialog.showModal();
    (approval ? decline : body.querySelector("input, select, textarea") || accept).focus();
  });
}
