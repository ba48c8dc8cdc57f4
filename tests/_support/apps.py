"""Modules with MCP Apps views, written as files and found by apcore's discovery (as a user's would be)."""

from __future__ import annotations

from pathlib import Path

from apcore import Registry

VIEW_PAGE = "<!doctype html><title>shown</title><p id='shown'>a view</p>"

MODULE = """
from typing import Any

from pydantic import BaseModel

from apcore_mcp import View


class LengthIn(BaseModel):
    text: str = ""


class LengthOut(BaseModel):
    length: int


class Length:
    description = "The length of a text"
    input_schema = LengthIn
    output_schema = LengthOut
    tags = {tags!r}
    view = {view}

    def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        return {{"length": len(inputs.get("text", ""))}}
"""


def write_module(root: Path, module_id: str, view: str | None, *, tags: tuple[str, ...] = ()) -> Path:
    """``root/<a>/<b>.py`` for ``module_id`` ``a.b``, its ``view`` attribute the Python expression ``view``."""
    package, name = module_id.split(".")
    folder = root / package
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(MODULE.format(view=view or "None", tags=list(tags)))
    return folder


def discovered(root: Path, expected: int) -> Registry:
    registry = Registry(extensions_dir=str(root))
    assert registry.discover() == expected
    return registry


PROBE_MODULE = """
from pathlib import Path
from typing import Any

from apcore import ModuleAnnotations
from pydantic import BaseModel


class TouchIn(BaseModel):
    marker: str


class TouchOut(BaseModel):
    touched: bool


class Touch:
    description = "Writes its marker file (so a test sees that it ran)"
    input_schema = TouchIn
    output_schema = TouchOut
    view = "probe.html"
    annotations = ModuleAnnotations(destructive={destructive})

    def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        Path(inputs["marker"]).write_text("ran")
        return {"touched": True}
"""

PROBE_VIEW = """<!doctype html>
<html><head><meta charset="utf-8"><title>probe</title></head><body>
<p id="probe"></p><p id="call"></p><p id="ready"></p>
<script>
"use strict";
const seen = {};
function attempt(name, read) {
  try { seen[name] = String(read()); } catch (error) { seen[name] = "blocked"; }
}
attempt("dom", () => parent.document.title);
attempt("explorerState", () => parent.state.token);
attempt("cookie", () => document.cookie);
attempt("localStorage", () => localStorage.length);
attempt("sessionStorage", () => sessionStorage.length);
attempt("origin", () => origin);
document.getElementById("probe").textContent = JSON.stringify(seen);
const waiting = new Map();
let last = 0;
window.received = [];
addEventListener("message", (event) => {
  const message = event.data;
  window.received.push(JSON.stringify(message));
  if (event.source === parent && message && waiting.has(message.id)) waiting.get(message.id)(message);
});
function ask(method, params) {
  last += 1;
  const id = last;
  parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  return new Promise((resolve) => waiting.set(id, resolve));
}
window.callTool = async (name, args) => {
  const answer = await ask("tools/call", { name, arguments: args });
  const said = answer.error ? "error: " + answer.error.message : "result: " + JSON.stringify(answer.result.structuredContent);
  document.getElementById("call").textContent = said;
  return said;
};
window.fetchPage = () => fetch("/explorer/config").then(() => "fetched", () => "blocked");
ask("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "probe", version: "1" }, appCapabilities: {} })
  .then(() => {
    parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }, "*");
    document.getElementById("ready").textContent = "ready";
  });
</script></body></html>
"""


def probe_registry(root: Path, *, destructive: bool = False) -> Registry:
    """``probe.touch``: writes its marker; its view probes what the frame can reach and calls tools on demand."""
    folder = root / "probe"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "touch.py").write_text(PROBE_MODULE.replace("{destructive}", str(destructive)))
    (folder / "probe.html").write_text(PROBE_VIEW)
    return discovered(root, 1)
