/* ---------- a small MCP client (Streamable HTTP, both protocol eras) ----------
   Handshake era (2025-11-25): initialize, a session header on every later request, server requests
   (elicitation) arrive on the call's event stream and are answered by POSTing a JSON-RPC response.
   2026-07-28: no session; every request carries the version, capabilities and client info in _meta
   and as headers; a call that needs the user ends "input_required" and is retried with the answers. */
const MCP_MODERN = "2026-07-28";
const MCP_HANDSHAKE = "2025-11-25";
const MCP_META = "io.modelcontextprotocol/";
const MCP_CLIENT_INFO = { name: "apcore-mcp explorer", version: "1.0" };
// Form elicitation and (empty) roots only: the page has no model, so it does not offer sampling.
const MCP_CAPABILITIES = { elicitation: { form: {} }, roots: {} };
const NAME_BEARING = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri" };
const MAX_INPUT_ROUNDS = 10;

/* A header value as the SDK encodes it: printable ASCII as is, anything else base64-wrapped. */
function mcpHeaderValue(value) {
  const text = String(value);
  if (/^[\x20-\x7E]*$/.test(text) && text === text.trim() && !/^=\?base64\?.*\?=$/.test(text)) return text;
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  bytes.forEach((b) => { binary += String.fromCharCode(b); });
  return "=?base64?" + btoa(binary) + "?=";
}

/* Mcp-Param-* headers a tools/call mirrors from arguments whose schema property carries x-mcp-header. */
function mcpParamHeaders(schema, args) {
  const headers = {};
  (function walk(node, value, depth) {
    if (!node || typeof node !== "object" || depth > 16 || !node.properties) return;
    for (const [key, sub] of Object.entries(node.properties)) {
      const v = value && typeof value === "object" && !Array.isArray(value) ? value[key] : undefined;
      if (sub && typeof sub["x-mcp-header"] === "string" && v !== undefined && v !== null &&
          ["string", "number", "boolean"].includes(typeof v)) {
        headers["Mcp-Param-" + sub["x-mcp-header"]] = mcpHeaderValue(typeof v === "boolean" ? String(v) : v);
      }
      walk(sub, v, depth + 1);
    }
  })(schema, args, 0);
  return headers;
}

function mcpError(message, fields) {
  return Object.assign(new Error(message), fields || {});
}

/* Reads a text/event-stream body as it arrives; calls onEvent({data, id, event}) per event.
   Resolves to {id, retry}: the last event id and reconnection delay the server gave, for a resume. */
async function readEventStream(response, onEvent, finished) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", data = [], id = null, event = "", retry = null;
  const dispatch = () => {
    if (data.length) onEvent({ data: data.join("\n"), id, event: event || "message" });
    data = []; event = "";
  };
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    const lines = buffer.split(/\r\n|\r|\n/);
    buffer = done ? "" : lines.pop();
    for (const line of lines) {
      if (line === "") { dispatch(); continue; }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") data.push(text);
      else if (field === "id") id = text;
      else if (field === "event") event = text;
      else if (field === "retry" && /^\d+$/.test(text)) retry = Number(text);
    }
    if (done) { dispatch(); return { id, retry }; }
    // Once the answer is in, nothing more on this stream matters (a resumed GET stream may stay open).
    if (finished && finished()) { reader.cancel().catch(() => {}); return { id, retry }; }
  }
}

/* logLevel (optional): the server's log messages at or above it come with each call (notifications/message). */
function createMcpClient({ endpoint, era, headers, onTraffic, logLevel }) {
  const modern = era === MCP_MODERN;
  let sessionId = null, seq = 0, connected = null;
  const client = { era, endpoint, serverInfo: null, capabilities: null, protocolVersion: null, instructions: null };

  const log = (opts, entry) => {
    const full = { at: performance.now(), ...entry };
    if (onTraffic) onTraffic(full);
    if (opts && opts.onTraffic) opts.onTraffic(full);
  };

  function stamp(method, params) {
    if (!modern) return params;
    const out = { ...(params || {}) };
    out._meta = { ...(out._meta || {}), [MCP_META + "protocolVersion"]: MCP_MODERN,
      [MCP_META + "clientCapabilities"]: MCP_CAPABILITIES, [MCP_META + "clientInfo"]: MCP_CLIENT_INFO };
    // 2026 logging is asked for per request; the discovery request has no log to send.
    if (logLevel && method !== "server/discover" && !(MCP_META + "logLevel" in out._meta)) out._meta[MCP_META + "logLevel"] = logLevel;
    return out;
  }

  function requestHeaders(message, extra) {
    const h = { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...(headers ? headers() : {}) };
    if (modern) {
      h["MCP-Protocol-Version"] = MCP_MODERN;
      if (message.method) h["Mcp-Method"] = message.method;
      const nameKey = NAME_BEARING[message.method];
      if (nameKey && message.params && typeof message.params[nameKey] === "string") h["Mcp-Name"] = mcpHeaderValue(message.params[nameKey]);
    } else {
      if (client.protocolVersion) h["MCP-Protocol-Version"] = client.protocolVersion;
      if (sessionId) h["Mcp-Session-Id"] = sessionId;
    }
    return { ...h, ...(extra || {}) };
  }

  /* Answers one request the server made of the page (handshake era, or one 2026 input request). */
  async function answer(method, params, opts) {
    if (method === "ping") return { result: {} };
    if (method === "roots/list") return { result: { roots: [] }, note: "the page offers no roots" };
    if (method === "sampling/createMessage") {
      return { error: { code: -1, message: "Declined: the explorer page has no model to sample from" },
        note: "sampling declined: the page has no model" };
    }
    if (method === "elicitation/create" && opts.onServerRequest) {
      try { return { result: await opts.onServerRequest(method, params || {}) }; }
      catch (error) { return { error: { code: error.code || -32603, message: error.message } }; }
    }
    if (method === "elicitation/create") return { result: { action: "decline" }, note: "nobody to ask: declined" };
    return { error: { code: -32601, message: "Method not found: " + method } };
  }

  /* POSTs one JSON-RPC message. For a request, resolves to {reply, status}: the response on a JSON body or
     the one that ends the event stream; server requests and notifications met on the way are handled. */
  async function post(message, opts) {
    opts = opts || {};
    const isRequest = message.method && message.id !== undefined;
    log(opts, { dir: "out", kind: isRequest ? "request" : message.method ? "notification" : "response", message });
    let response;
    try {
      response = await fetch(endpoint, { method: "POST", headers: requestHeaders(message, opts.headers),
        body: JSON.stringify(message), cache: "no-store", signal: opts.signal });
    } catch (error) {
      log(opts, { dir: "in", kind: "transport", note: error.name === "AbortError" ? "request aborted" : "network error: " + error.message });
      throw error.name === "AbortError" ? error : mcpError("Network error: " + error.message, { httpStatus: 0 });
    }
    const type = (response.headers.get("content-type") || "").toLowerCase();
    // ``answers`` names the request this status belongs to; a notification's or a response's POST is only
    // acknowledged (202), which says nothing of how the call it was sent during went.
    log(opts, { dir: "in", kind: "http", status: response.status, answers: isRequest ? message.method : null,
      note: "HTTP " + response.status + (type ? " · " + type.split(";")[0] : "") });
    if (message.method === "initialize" && response.headers.get("mcp-session-id")) sessionId = response.headers.get("mcp-session-id");
    if (!isRequest) {
      if (response.status >= 400) {
        const text = await response.text().catch(() => "");
        throw mcpError("HTTP " + response.status + (text ? ": " + text.slice(0, 300) : ""), { httpStatus: response.status });
      }
      return { reply: null, status: response.status };
    }
    if (response.status === 202) {
      // 202 acknowledges a notification or a response; a request is answered with a body, never with this.
      throw mcpError("The server acknowledged the request (HTTP 202) but sent no response", { httpStatus: 202 });
    }
    let reply = null;
    const seen = (msg) => {
      if (msg && msg.id === message.id && ("result" in msg || "error" in msg) && !msg.method) {
        log(opts, { dir: "in", kind: "response", message: msg });
        reply = msg;
      } else if (msg && msg.method && msg.id !== undefined) {
        log(opts, { dir: "in", kind: "server-request", message: msg });
        respond(msg, opts); // not awaited: the stream keeps being read while the person answers
      } else if (msg && msg.method) {
        log(opts, { dir: "in", kind: "notification", message: msg });
        if (opts.onNotification) opts.onNotification(msg);
      } else log(opts, { dir: "in", kind: "message", message: msg });
    };
    if (type.startsWith("text/event-stream") && response.body) {
      const onEvent = (ev) => {
        if (ev.data === "") return; // a priming event (an id to resume from), no message
        let parsed;
        try { parsed = JSON.parse(ev.data); } catch (e) { log(opts, { dir: "in", kind: "transport", note: "unreadable event: " + ev.data.slice(0, 200) }); return; }
        seen(parsed);
      };
      let stream = response;
      for (let resumes = 0; ; resumes++) {
        let last;
        try { last = await readEventStream(stream, onEvent, () => reply !== null); }
        catch (error) {
          log(opts, { dir: "in", kind: "transport", note: error.name === "AbortError" ? "stream closed by the page" : "stream broke: " + error.message });
          throw error.name === "AbortError" ? error : mcpError("The response stream broke: " + error.message, { httpStatus: response.status });
        }
        // Handshake era: a stream the server closed before answering is resumed from its last event.
        if (reply || modern || !sessionId || !last.id || resumes >= 5) break;
        stream = await resume(last, opts, message.method);
      }
    } else {
      const text = await response.text();
      let parsed = null;
      try { parsed = JSON.parse(text); } catch (e) { parsed = null; }
      if (parsed && parsed.jsonrpc) {
        // An error refused before the request was read carries no id (or a placeholder): it is this request's.
        if (parsed.error && !parsed.method && parsed.id !== message.id) parsed = { ...parsed, id: message.id };
        seen(parsed);
      } else {
        log(opts, { dir: "in", kind: "body", note: text.slice(0, 2000) });
        const why = parsed && (parsed.error_description || (typeof parsed.error === "string" && parsed.error));
        throw mcpError(why || "HTTP " + response.status + (text ? ": " + text.slice(0, 300) : ""), { httpStatus: response.status });
      }
    }
    if (!reply) throw mcpError("The server ended the response without answering", { httpStatus: response.status });
    return { reply, status: response.status };
  }

  /* GET with Last-Event-ID, after the delay the server asked for (bounded). */
  async function resume(last, opts, method) {
    const wait = Math.min(last.retry === null ? 500 : last.retry, 5000);
    log(opts, { dir: "note", kind: "note", note: "the server closed the stream; resuming after event " + last.id + " in " + wait + " ms" });
    await new Promise((done) => setTimeout(done, wait));
    if (opts.signal && opts.signal.aborted) throw Object.assign(new Error("aborted"), { name: "AbortError" });
    const h = requestHeaders({}, { Accept: "text/event-stream", "Last-Event-ID": last.id });
    delete h["Content-Type"];
    log(opts, { dir: "out", kind: "http", note: "GET Last-Event-ID: " + last.id });
    const response = await fetch(endpoint, { method: "GET", headers: h, cache: "no-store", signal: opts.signal });
    log(opts, { dir: "in", kind: "http", status: response.status, answers: method, note: "HTTP " + response.status });
    const type = (response.headers.get("content-type") || "").toLowerCase();
    if (!response.ok || !type.startsWith("text/event-stream") || !response.body) {
      const text = await response.text().catch(() => "");
      let parsed = null;
      try { parsed = JSON.parse(text); } catch (e) { parsed = null; }
      const e = parsed && parsed.error && typeof parsed.error === "object" ? parsed.error : {};
      throw mcpError(e.message || "Could not resume the stream: HTTP " + response.status, { code: e.code, data: e.data, httpStatus: response.status });
    }
    return response;
  }

  async function respond(msg, opts) {
    const out = await answer(msg.method, msg.params, opts);
    if (out.note) log(opts, { dir: "note", kind: "note", note: out.note });
    const reply = out.error ? { jsonrpc: "2.0", id: msg.id, error: out.error } : { jsonrpc: "2.0", id: msg.id, result: out.result };
    try { await post(reply, { onTraffic: opts.onTraffic }); } catch (error) { /* logged by post */ }
  }

  function failure(reply, status) {
    const e = reply.error || {};
    return mcpError(e.message || "Error " + e.code, { code: e.code, data: e.data, httpStatus: status });
  }

  /* One exchange: request → result, sending notifications/cancelled (handshake era) or closing the
     stream (2026) when opts.signal aborts. */
  async function exchange(method, params, opts) {
    const id = ++seq;
    const message = { jsonrpc: "2.0", id, method, params: stamp(method, params) };
    const abort = new AbortController();
    const onAbort = async () => {
      if (!modern && sessionId) {
        const note = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "cancelled in the explorer" } };
        const timer = new AbortController();
        const bound = setTimeout(() => timer.abort(), 3000);
        try { await post(note, { onTraffic: opts.onTraffic, signal: timer.signal }); } catch (error) { /* logged */ }
        clearTimeout(bound);
      } else log(opts, { dir: "note", kind: "note", note: "closing the response stream cancels the call" });
      abort.abort();
    };
    if (opts.signal) {
      if (opts.signal.aborted) throw mcpError("Cancelled", { name: "AbortError", cancelled: true });
      opts.signal.addEventListener("abort", onAbort, { once: true });
    }
    try {
      const { reply, status } = await post(message, { ...opts, signal: abort.signal });
      if (reply.error) throw failure(reply, status);
      return reply.result;
    } catch (error) {
      if (error.name === "AbortError" || (opts.signal && opts.signal.aborted)) throw mcpError("Cancelled", { cancelled: true });
      if (!modern && sessionId && error.httpStatus === 404 && method !== "initialize") {
        // The server no longer knows the session (it restarted, or the session was ended): start anew.
        sessionId = null; connected = null; client.protocolVersion = null;
        error.sessionExpired = true;
      }
      throw error;
    } finally {
      if (opts.signal) opts.signal.removeEventListener("abort", onAbort);
    }
  }

  client.connect = (opts) => {
    if (!connected) {
      connected = (async () => {
        if (modern) {
          const result = await exchange("server/discover", {}, opts || {});
          const versions = result.supportedVersions || [];
          if (versions.length && !versions.includes(MCP_MODERN)) throw mcpError("The server does not speak " + MCP_MODERN);
          client.protocolVersion = MCP_MODERN;
          client.capabilities = result.capabilities || {};
          client.serverInfo = (result._meta || {})[MCP_META + "serverInfo"] || null;
          client.instructions = result.instructions || null;
        } else {
          const result = await exchange("initialize", { protocolVersion: era, capabilities: MCP_CAPABILITIES,
            clientInfo: MCP_CLIENT_INFO }, opts || {});
          client.protocolVersion = result.protocolVersion;
          client.capabilities = result.capabilities || {};
          client.serverInfo = result.serverInfo || null;
          client.instructions = result.instructions || null;
          await post({ jsonrpc: "2.0", method: "notifications/initialized" }, opts || {});
          // Handshake-era logging is set once for the session.
          if (logLevel && client.capabilities.logging) await exchange("logging/setLevel", { level: logLevel }, opts || {});
        }
        return client;
      })();
      connected.catch(() => { connected = null; });
    }
    return connected;
  };

  client.request = async (method, params, opts) => {
    opts = opts || {};
    try { return await requestOnce(method, params, opts); }
    catch (error) {
      if (!error.sessionExpired) throw error;
      log(opts, { dir: "note", kind: "note", note: "the session is gone on the server; starting a new one" });
      return await requestOnce(method, params, opts);
    }
  };

  async function requestOnce(method, params, opts) {
    await client.connect({ onTraffic: opts.onTraffic, signal: opts.signal });
    let result = await exchange(method, params, opts);
    // 2026: the server asks by ending the call "input_required"; answer each request, then retry.
    for (let round = 1; modern && result && result.resultType === "input_required"; round++) {
      if (round > MAX_INPUT_ROUNDS) throw mcpError("The server kept asking for input past " + MAX_INPUT_ROUNDS + " rounds");
      const responses = {};
      for (const [key, req] of Object.entries(result.inputRequests || {})) {
        log(opts, { dir: "in", kind: "input-request", key, message: req });
        const out = await answer(req.method, req.params, opts);
        if (out.note) log(opts, { dir: "note", kind: "note", note: out.note });
        if (out.error) throw mcpError(out.error.message, { code: out.error.code });
        log(opts, { dir: "out", kind: "input-response", key, message: out.result });
        responses[key] = out.result;
      }
      const retry = { ...(params || {}), inputResponses: responses };
      if (result.requestState !== undefined) retry.requestState = result.requestState;
      result = await exchange(method, retry, opts);
    }
    return result;
  }

  client.close = () => {
    if (!modern && sessionId) {
      const h = requestHeaders({});
      const id = sessionId;
      sessionId = null;
      log(null, { dir: "out", kind: "http", note: "DELETE session " + id });
      fetch(endpoint, { method: "DELETE", headers: h, keepalive: true, cache: "no-store" }).catch(() => {});
    }
    connected = null;
  };

  client.sessionId = () => sessionId;
  return client;
}
