/* ---------- MCP Apps: a tool's view in a sandboxed frame, and the host side of its protocol ----------
   The view's HTML is read through MCP (resources/read of its ui:// URI, so every rule of the server
   applies) and posted into the server's view frame (sandbox="allow-scripts": an opaque origin, no
   network). The view talks JSON-RPC over postMessage: ui/initialize, then ui/notifications/initialized;
   the page sends ui/notifications/tool-input and tool-result after each run of the tool; the view may
   call its own tool with tools/call, which goes through the page's MCP client and the explorer's door
   like any call (so not while execution is off, and never a destructive tool: nothing confirms it). */
const APP_MIME = "text/html;profile=mcp-app";
const APP_PROTOCOL = "2026-01-26";
const VIEW_MESSAGE = "apcore-mcp/view";
const VIEW_READY = "apcore-mcp/view-ready";
const VIEW_MIN_HEIGHT = 120, VIEW_MAX_HEIGHT = 1600;
let viewHost = null;

window.addEventListener("message", (event) => {
  const host = viewHost;
  if (!host || !host.frame.contentWindow || event.source !== host.frame.contentWindow) return;
  const data = event.data;
  if (data && data.type === VIEW_READY && !host.sent) {
    host.sent = true;
    host.post({ type: VIEW_MESSAGE, html: host.html });
    return;
  }
  if (!data || data.jsonrpc !== "2.0" || typeof data.method !== "string") return;
  if (data.id === undefined) appNotification(host, data.method, data.params || {});
  else appRequest(host, data.method, data.params || {}).then(
    (result) => host.post({ jsonrpc: "2.0", id: data.id, result }),
    (error) => host.post({ jsonrpc: "2.0", id: data.id, error: { code: error.code || -32603, message: error.message } }));
});

function appNotification(host, method, params) {
  if (method === "ui/notifications/initialized") {
    host.ready = true;
    host.status.textContent = "view ready";
    if (host.pending) { const [args, result] = host.pending; host.pending = null; sendToolResult(host, args, result); }
  } else if (method === "ui/notifications/size-changed" && typeof params.height === "number") {
    host.frame.style.height = Math.min(VIEW_MAX_HEIGHT, Math.max(VIEW_MIN_HEIGHT, Math.round(params.height))) + "px";
  }
}

async function appRequest(host, method, params) {
  if (method === "ui/initialize") {
    const dark = matchMedia("(prefers-color-scheme: dark)").matches;
    return {
      protocolVersion: APP_PROTOCOL,
      hostInfo: { name: "apcore-mcp explorer", version: "1.0" },
      hostCapabilities: { serverTools: {} },
      hostContext: { theme: dark ? "dark" : "light", displayMode: "inline", toolInfo: { tool: { name: host.tool.name } } },
    };
  }
  if (method === "tools/call") {
    if (params.name !== host.tool.name) throw mcpError("This view may call only " + host.tool.name, { code: -32602 });
    const args = params.arguments && typeof params.arguments === "object" ? params.arguments : {};
    host.status.textContent = "the view calls " + host.tool.name + "…";
    try {
      const result = await mcpClient().request("tools/call", { name: host.tool.name, arguments: args },
        { headers: mcpParamHeaders(host.tool.inputSchema || {}, args) });
      host.status.textContent = "view ready";
      return result;
    } catch (error) {
      host.status.textContent = "the view's call failed: " + error.message;
      throw error;
    }
  }
  throw mcpError("Method not found: " + method, { code: -32601 });
}

function sendToolResult(host, args, result) {
  host.post({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: args } });
  host.post({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: result });
}

/* After a run of a tool with a view: the view (opened if need be) gets the arguments and the result. */
async function deliverToView(tool, args, result) {
  if (!tool.view || !result) return;
  if (!viewHost || viewHost.tool.name !== tool.name) await openView(tool);
  const host = viewHost;
  if (!host || host.tool.name !== tool.name) return;
  if (host.ready) sendToolResult(host, args, result); else host.pending = [args, result];
}

async function openView(tool) {
  const box = $("view-box"), status = $("view-status");
  if (!box || !status) return;
  closeView();
  status.textContent = "reading " + tool.view + "…";
  let contents;
  try {
    const read = await mcpClient().request("resources/read", { uri: tool.view });
    contents = ((read && read.contents) || [])[0];
  } catch (error) {
    status.textContent = "Could not read the view: " + error.message;
    return;
  }
  if (!contents || contents.mimeType !== APP_MIME || typeof contents.text !== "string") {
    status.textContent = "The server did not answer with an MCP Apps view (" + APP_MIME + ").";
    return;
  }
  const frame = el("iframe", { id: "view-frame", class: "view-frame", sandbox: "allow-scripts",
    referrerpolicy: "no-referrer", title: "View of " + tool.name, src: state.config.viewFramePath });
  const host = { tool, frame, status, html: contents.text, sent: false, ready: false, pending: null, loads: 0,
    post: (message) => { if (host === viewHost && frame.contentWindow) frame.contentWindow.postMessage(message, "*"); } };
  // Two loads: the frame's document, then the view written over it. A third is the view navigating
  // away (to a page that is not the view): stop talking to it.
  frame.addEventListener("load", () => { host.loads += 1; if (host.loads > 2) closeView("The view left its frame: closed."); });
  viewHost = host;
  status.textContent = "starting the view…";
  box.replaceChildren(frame);
}

function closeView(message) {
  if (viewHost) { viewHost.frame.remove(); if (message) viewHost.status.textContent = message; }
  viewHost = null;
}

function viewCard(tool) {
  const open = el("button", { type: "button", id: "open-view", text: "Open view", onclick: () => openView(tool) });
  return el("section", { class: "card view-card", "aria-label": "View of " + tool.name },
    el("div", { class: "card-head" }, el("h3", { text: "View" }), el("span", { class: "chip", text: tool.view }),
      el("span", { class: "spacer" }), open),
    el("p", { class: "meta", id: "view-status", role: "status",
      text: "This tool has an MCP Apps view. It opens after a run, or now, without a result." }),
    el("div", { id: "view-box", class: "view-box" }));
}
