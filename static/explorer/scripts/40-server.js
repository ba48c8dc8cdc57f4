/* ---------- the rest of the server: resources, prompts, the server itself ----------
   The sidebar gets a row of views; "Tools" is the list above (10-app.js), the others list what the
   server offers over MCP and open it in the detail pane, each exchange shown in a Protocol view. */
const VIEWS = ["Tools", "Resources", "Prompts", "Skills", "Server"];
const views = { current: "Tools", list: null, count: null, seq: 0, buttons: [] };

function setupViews() {
  const sidebar = document.querySelector(".sidebar");
  const bar = el("div", { role: "tablist", class: "views", "aria-label": "What to explore" });
  views.list = el("ul", { id: "side-list", class: "tool-list", hidden: true });
  views.count = el("div", { id: "side-count", class: "count", "aria-live": "polite", hidden: true });
  VIEWS.forEach((name, i) => {
    const button = el("button", { type: "button", role: "tab", class: "view-tab", id: "view-" + name.toLowerCase(),
      "aria-selected": String(i === 0), tabindex: i === 0 ? "0" : "-1", text: name, onclick: () => showView(name) });
    button.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      event.preventDefault();
      const next = VIEWS[(i + (event.key === "ArrowRight" ? 1 : VIEWS.length - 1)) % VIEWS.length];
      showView(next);
      $("view-" + next.toLowerCase()).focus();
    });
    views.buttons.push(button);
    bar.append(button);
  });
  sidebar.prepend(bar);
  sidebar.append(views.count, views.list);
}

async function showView(name) {
  views.current = name;
  const seq = ++views.seq;
  views.buttons.forEach((b) => {
    const on = b.textContent === name;
    b.setAttribute("aria-selected", String(on));
    b.tabIndex = on ? 0 : -1;
  });
  const tools = name === "Tools";
  for (const id of ["filter", "count", "tool-list"]) $(id).hidden = !tools;
  views.list.hidden = views.count.hidden = tools;
  if (tools) {
    if (state.selected) select(state.selected);
    else $("detail").replaceChildren(el("p", { class: "empty", text: "Select a tool on the left." }));
    return;
  }
  views.list.replaceChildren();
  views.count.textContent = "loading…";
  $("detail").replaceChildren(el("p", { class: "empty", text: "Select an entry on the left." }));
  try {
    if (name === "Server") await showServer(seq);
    else await ({ Resources: listResources, Prompts: listPrompts, Skills: listSkills })[name](seq);
  } catch (error) {
    if (seq !== views.seq) return;
    views.count.textContent = "";
    $("detail").replaceChildren(el("p", { class: "out error", role: "alert", text: "Could not load " + name.toLowerCase() + ": " + error.message }));
  }
}

/* A request of this view with its traffic kept for the Protocol view. */
async function viewRequest(method, params, traffic, extra) {
  return mcpClient().request(method, params, { onTraffic: (entry) => traffic.push(entry), ...(extra || {}) });
}

function protocolDetails(traffic) {
  const t0 = traffic.length ? traffic[0].at : 0;
  return el("details", { class: "block protocol-view" }, el("summary", { text: "Protocol (" + traffic.length + " messages)" }),
    el("ol", { class: "protocol" }, traffic.map((entry) => protocolEntry(entry, t0))));
}

function sideItem(label, sub, chips, open) {
  const link = el("a", { href: "#", "data-name": label, onclick: (event) => {
    event.preventDefault();
    for (const other of views.list.querySelectorAll("a")) other.removeAttribute("aria-current");
    link.setAttribute("aria-current", "true");
    open();
  } }, el("div", { class: "tool-name", text: label }), sub ? el("div", { class: "tool-desc", text: sub }) : null,
  chips && chips.length ? el("div", { class: "chips" }, chips) : null);
  return el("li", {}, link);
}

/* ---------- resources ---------- */
/* Whether the server declared ``capability``: asking one that did not is an unknown method (404 in 2026-07-28). */
async function offers(capability, seq, what) {
  const client = mcpClient();
  await client.connect();
  if ((client.capabilities || {})[capability]) return true;
  if (seq === views.seq) {
    views.count.textContent = "none";
    $("detail").replaceChildren(el("p", { class: "empty", id: "view-none", text: "This server offers no " + what + "." }));
  }
  return false;
}

async function listResources(seq) {
  if (!(await offers("resources", seq, "resources"))) return;
  const traffic = [];
  const [listed, templated] = await Promise.all([
    viewRequest("resources/list", {}, traffic),
    viewRequest("resources/templates/list", {}, traffic),
  ]);
  if (seq !== views.seq) return;
  const resources = listed.resources || [];
  const templates = templated.resourceTemplates || [];
  views.list.replaceChildren(
    ...resources.map((r) => sideItem(r.name || r.uri, r.uri, [chip(r.mimeType)], () => openResource(r))),
    ...templates.map((t) => sideItem(t.name || t.uriTemplate, t.uriTemplate, [el("span", { class: "chip tag", text: "template" }),
      chip(t.mimeType)], () => openTemplate(t))));
  views.count.textContent = resources.length + " resources, " + templates.length + " templates";
}

function chip(text) {
  return text ? el("span", { class: "chip", text }) : null;
}

function resourceHead(title, uri, description, mimeType) {
  return [el("h2", { text: title }), el("p", { class: "meta" }, el("code", { text: uri }), mimeType ? " · " + mimeType : ""),
    description ? el("p", { class: "desc", text: description }) : null];
}

function openResource(resource) {
  const out = el("div", { class: "result", id: "read-result", "aria-live": "polite" });
  const read = el("button", { type: "button", class: "primary", id: "read-resource", text: "Read",
    onclick: () => readInto(out, resource.uri) });
  setContent($("detail"), ...resourceHead(resource.name || resource.uri, resource.uri, resource.description, resource.mimeType),
    el("section", { class: "card" }, el("div", { class: "actions" }, read), out));
  read.focus();
}

/* RFC 6570 variable names of a template: {a}, {+a}, {?a,b} … (the operator and modifiers dropped). */
function templateVariables(template) {
  const names = [];
  for (const [, body] of template.matchAll(/\{([^}]*)\}/g)) {
    for (const part of body.replace(/^[+#./;?&]/, "").split(",")) {
      const name = part.replace(/[*]$|:\d+$/, "").trim();
      if (name && !names.includes(name)) names.push(name);
    }
  }
  return names;
}

function expandTemplate(template, values) {
  return template.replace(/\{([^}]*)\}/g, (_, body) => {
    const op = /^[+#./;?&]/.test(body) ? body[0] : "";
    const names = body.slice(op.length).split(",").map((p) => p.replace(/[*]$|:\d+$/, "").trim());
    const encode = op === "+" || op === "#" ? encodeURI : encodeURIComponent;
    const parts = names.filter((n) => values[n] !== undefined && values[n] !== "").map((n) =>
      op === "?" || op === "&" || op === ";" ? n + "=" + encodeURIComponent(values[n]) : encode(values[n]));
    if (!parts.length) return "";
    const lead = { "": "", "+": "", "#": "#", ".": ".", "/": "/", ";": ";", "?": "?", "&": "&" }[op];
    return lead + parts.join(op === "?" || op === "&" ? "&" : op === "" || op === "+" || op === "#" ? "," : op);
  });
}

/* An input whose suggestions come from completion/complete as the person types. */
function completedInput(id, ref, name, others) {
  const list = el("datalist", { id: id + "-options" });
  const input = el("input", { id, name, autocomplete: "off", spellcheck: "false", list: id + "-options" });
  let timer = 0, asked = 0;
  const ask = async () => {
    if (!(mcpClient().capabilities || {}).completions) return;  // nothing to ask: the field takes any value
    const mine = ++asked;
    try {
      const result = await mcpClient().request("completion/complete",
        { ref, argument: { name, value: input.value }, context: { arguments: others() } });
      if (mine !== asked) return;
      const values = ((result && result.completion) || {}).values || [];
      list.replaceChildren(...values.map((value) => el("option", { value })));
      input.dataset.completions = values.join("\n");
    } catch (error) { /* completion is a help, not a must: the field still takes any value */ }
  };
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(ask, 150); });
  input.addEventListener("focus", ask, { once: true });
  return [input, list];
}

function textFields(names, ref, required, describe) {
  const inputs = {};
  const values = () => Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value]).filter(([, v]) => v !== ""));
  const fields = names.map((name) => {
    const id = nextId();
    const [input, list] = completedInput(id, ref, name, () => {
      const all = values();
      delete all[name];
      return all;
    });
    inputs[name] = input;
    if (required(name)) input.required = true;
    const hint = describe(name);
    return el("div", { class: "field" }, el("div", { class: "field-head" },
      el("label", { for: id, text: name }), required(name) ? el("span", { class: "req", text: "required" }) : null,
      hint ? el("span", { class: "meta", text: hint }) : null), input, list);
  });
  return { fields, values, inputs };
}

function openTemplate(template) {
  const names = templateVariables(template.uriTemplate);
  const ref = { type: "ref/resource", uri: template.uriTemplate };
  const form = textFields(names, ref, () => true, () => "");
  const out = el("div", { class: "result", id: "read-result", "aria-live": "polite" });
  const uri = el("code", { id: "expanded-uri", text: template.uriTemplate });
  const update = () => { uri.textContent = expandTemplate(template.uriTemplate, form.values()); };
  Object.values(form.inputs).forEach((input) => input.addEventListener("input", update));
  const body = el("form", { class: "card", novalidate: true }, form.fields, el("p", { class: "meta" }, "Reads ", uri),
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary", id: "read-resource", text: "Read" })), out);
  body.addEventListener("submit", (event) => {
    event.preventDefault();
    const missing = names.filter((n) => !form.values()[n]);
    if (missing.length) {
      out.className = "result error";
      out.replaceChildren(el("p", { role: "alert", text: "Required: " + missing.join(", ") }));
      return;
    }
    readInto(out, expandTemplate(template.uriTemplate, form.values()));
  });
  setContent($("detail"), ...resourceHead(template.name || template.uriTemplate, template.uriTemplate, template.description,
    template.mimeType), body);
  const first = body.querySelector("input");
  if (first) first.focus();
}

async function readInto(out, uri) {
  const traffic = [];
  out.className = "result";
  out.replaceChildren(el("p", { class: "meta", text: "Reading " + uri + "…" }));
  try {
    const result = await viewRequest("resources/read", { uri }, traffic);
    out.replaceChildren(...(result.contents || []).map(contentsView), protocolDetails(traffic));
  } catch (error) {
    renderFailure(out, error);
    out.append(protocolDetails(traffic));
  }
}

function contentsView(contents) {
  const mime = contents.mimeType || "";
  const head = el("figcaption", { class: "meta", text: contents.uri + (mime ? " · " + mime : "") });
  if (typeof contents.blob === "string" && /^image\/[\w.+-]+$/.test(mime)) {
    return el("figure", { class: "media" }, head, el("img", { class: "media", alt: contents.uri, src: "data:" + mime + ";base64," + contents.blob }));
  }
  if (typeof contents.blob === "string") {
    return el("figure", { class: "media" }, head, el("p", { class: "meta", text: "binary, " + Math.floor(contents.blob.length * 3 / 4) + " bytes" }));
  }
  const text = contents.text || "";
  let shown = el("pre", { class: "out", text });
  if (/json/.test(mime) || /^\s*[[{]/.test(text)) { try { shown = jsonView(JSON.parse(text)); } catch (e) { /* as text */ } }
  return el("figure", { class: "media contents" }, head, shown);
}

/* ---------- prompts ---------- */
async function listPrompts(seq) {
  if (!(await offers("prompts", seq, "prompts"))) return;
  const result = await viewRequest("prompts/list", {}, []);
  if (seq !== views.seq) return;
  const prompts = result.prompts || [];
  views.list.replaceChildren(...prompts.map((p) => sideItem(p.name, p.description || "",
    [(p.arguments || []).length ? el("span", { class: "chip", text: p.arguments.length + " arguments" }) : null], () => openPrompt(p))));
  views.count.textContent = prompts.length + " prompt" + (prompts.length === 1 ? "" : "s");
}

function openPrompt(prompt) {
  const args = prompt.arguments || [];
  const byName = Object.fromEntries(args.map((a) => [a.name, a]));
  const form = textFields(args.map((a) => a.name), { type: "ref/prompt", name: prompt.name },
    (n) => Boolean(byName[n].required), (n) => byName[n].description || "");
  const out = el("div", { class: "result", id: "prompt-result", "aria-live": "polite" });
  const body = el("form", { class: "card", novalidate: true }, form.fields,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary", id: "get-prompt", text: "Get prompt" })), out);
  body.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = form.values();
    const missing = args.filter((a) => a.required && !values[a.name]).map((a) => a.name);
    if (missing.length) {
      out.className = "result error";
      out.replaceChildren(el("p", { role: "alert", text: "Required: " + missing.join(", ") }));
      return;
    }
    const traffic = [];
    out.className = "result";
    out.replaceChildren(el("p", { class: "meta", text: "Rendering…" }));
    const asker = { name: "prompt " + prompt.name, description: prompt.description || "", requiresApproval: false };
    try {
      const result = await viewRequest("prompts/get", { name: prompt.name, arguments: values }, traffic,
        { onServerRequest: (method, params) => elicitationDialog(asker, values, params) });
      out.replaceChildren(...(result.messages || []).map((m) => el("div", { class: "prompt-message" },
        el("span", { class: "chip role", text: m.role }), contentView(m.content || {}))), protocolDetails(traffic));
    } catch (error) {
      renderFailure(out, error);
      out.append(protocolDetails(traffic));
    }
  });
  setContent($("detail"), el("h2", { text: prompt.name }), prompt.description ? el("p", { class: "desc", text: prompt.description }) : null, body);
  const first = body.querySelector("input");
  if (first) first.focus();
}

/* ---------- the server ---------- */
async function showServer(seq) {
  const client = mcpClient();
  await client.connect();
  let ready = null;
  try { ready = await getJSON((state.config && state.config.readyPath) || "../ready"); } catch (error) { ready = { error: error.message }; }
  const hidden = await hiddenTools();
  const approvals = await pendingApprovals();
  const held = await heldTools();
  // The card a host reads before it connects (server_card on): shown as served, a link to it above.
  const cardPath = state.config && state.config.serverCardPath;
  let card = null;
  if (cardPath) { try { card = await getJSON(cardPath); } catch (error) { card = null; } }
  if (seq !== views.seq) return;
  views.count.textContent = "";
  const info = client.serverInfo || {};
  const rows = [["Name", info.name], ["Version", info.version], ["Protocol", client.protocolVersion],
    ["Era", client.era === MCP_MODERN ? "stateless (no session)" : "session " + (client.sessionId() || "")],
    ["Endpoint", client.endpoint], ["Hidden tools", ready && ready.hidden_tools]].filter(([, v]) => v);
  const upstreams = ready && ready.upstreams;
  setContent($("detail"), el("h2", { text: info.title || info.name || "Server" }),
    el("section", { class: "card", id: "server-info" }, el("h3", { text: "Server" }),
      el("dl", { class: "facts" }, rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]))),
    client.instructions ? el("section", { class: "card" }, el("h3", { text: "Instructions" }), el("p", { class: "desc", text: client.instructions })) : null,
    el("section", { class: "card", id: "server-capabilities" }, el("h3", { text: "Capabilities" }), jsonView(client.capabilities || {})),
    card ? el("section", { class: "card", id: "server-card" }, el("h3", { text: "Server card" }),
      el("p", { class: "meta" }, el("a", { href: cardPath, target: "_blank", rel: "noopener", text: cardPath })), jsonView(card)) : null,
    upstreams ? el("section", { class: "card", id: "upstreams" }, el("h3", { text: "Upstream servers" }), upstreamTable(upstreams)) : null,
    hidden ? el("section", { class: "card", id: "hidden-tools" }, el("h3", { text: "Hidden tools (operator)" }), hiddenTable(hidden)) : null,
    held && held.length ? heldCard(held) : null,
    approvals ? approvalsCard(approvals) : null,
    ready && ready.status ? el("p", { class: "meta", id: "ready-status", text: "Readiness: " + ready.status }) : null);
}

/* The operator's list of what is hidden and why (/admin/tools): only an operator's token (or, with
   auth off, a loopback page with admin_routes on) gets it; anyone else's refusal shows nothing. */
async function hiddenTools() {
  const path = state.config && state.config.adminToolsPath;
  if (!path) return null;
  try { return (await getJSON(path)).hidden; } catch (error) { return null; }
}

function reasonText(reason) {
  switch (reason.kind) {
    case "discovery": return "cannot be served: " + reason.problem + (reason.file ? " (" + reason.file + ")" : "");
    case "filter": return "left out by the " + reason.filter + " filter";
    case "scope": return "needs scope " + (reason.scopes || []).join(" ");
    case "acl": return "ACL refuses: " + (reason.refused || []).map((c) => c.roles ? c.caller + " without roles" : c.caller).join(", ");
    case "upstream": return "upstream failed: " + reason.error;
    default: return reason.kind;
  }
}

function hiddenTable(entries) {
  if (!entries.length) return el("p", { class: "meta", text: "No registered module is hidden from anyone." });
  return el("table", { class: "upstreams" },
    el("thead", {}, el("tr", {}, el("th", { text: "module" }), el("th", { text: "why" }))),
    el("tbody", {}, entries.map((entry) => el("tr", { "data-name": entry.module || entry.upstream },
      el("td", {}, el("code", { text: entry.module || "upstream " + entry.upstream })),
      el("td", { text: entry.reasons.map(reasonText).join("; ") })))));
}

/* Upstream tools held from their pins, each with the diff of its definition (/admin/pins): only a
   token holding auth_pins_scope gets them (auth on only); anyone else's refusal shows nothing. */
async function heldTools() {
  const path = state.config && state.config.pinsPath;
  if (!path) return null;
  try { return (await getJSON(path)).held; } catch (error) { return null; }
}

function heldCard(entries) {
  return el("section", { class: "card", id: "held-tools" }, el("h3", { text: "Held upstream tools (pins)" }),
    entries.map((entry) => {
      const status = el("span", { class: "meta" });
      const button = el("button", { type: "button", class: "approve", text: "Approve" });
      button.onclick = async () => {
        button.disabled = true;
        try {
          const response = await fetch(state.config.pinsPath + "/approve", { method: "POST", cache: "no-store",
            headers: authHeaders({ "Content-Type": "application/json" }), body: JSON.stringify({ tools: [entry.tool] }) });
          const body = await response.json().catch(() => null);
          status.textContent = response.ok ? "approved" : (body && body.error_description) || "HTTP " + response.status;
        } catch (error) { status.textContent = error.message; }
      };
      return el("div", { class: "held", "data-tool": entry.tool },
        el("p", {}, el("code", { text: entry.tool }), " " + entry.state + " ", button, " ", status),
        el("pre", { class: "diff", text: entry.diff }));
    }));
}

/* /ready's upstream part: {mounted: {name: tools}, failed: {name: reason}, pool: {name: {connected, failures, error}}}. */
function upstreamTable(upstreams) {
  const mounted = upstreams.mounted || {}, failed = upstreams.failed || {}, pool = upstreams.pool || {};
  const names = [...new Set([...Object.keys(mounted), ...Object.keys(failed), ...Object.keys(pool)])].sort();
  const stateOf = (name) => {
    if (failed[name]) return "failed: " + failed[name];
    const entry = pool[name];
    if (!entry) return "mounted, not running (started on first use)";
    if (entry.per_caller) return "one per caller: " + entry.per_caller.connected + " of " + entry.per_caller.callers + " connected";
    return entry.connected ? "connected" : "down" + (entry.error ? ": " + entry.error : "");
  };
  return el("table", { class: "upstreams" },
    el("thead", {}, el("tr", {}, el("th", { text: "server" }), el("th", { text: "tools" }), el("th", { text: "state" }))),
    el("tbody", {}, names.map((name) => el("tr", { "data-name": name }, el("td", {}, el("code", { text: name })),
      el("td", { text: name in mounted ? String(mounted[name]) : "–" }), el("td", { class: "upstream-state", text: stateOf(name) })))));
}

setupViews();
