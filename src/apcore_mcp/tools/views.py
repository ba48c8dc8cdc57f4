"""Module views: the MCP Apps extension (``io.modelcontextprotocol/ui``) for apcore modules.

A module declares a view with a class attribute ``view``: the name of an HTML file next to the
module's own file (``view = "stats.html"``), or a ``View`` (a file or inline HTML, and the
origins the page may reach). The server then serves the page as the resource
``ui://<module id>/view`` (MIME type ``text/html;profile=mcp-app``, ``_meta.ui.csp`` naming the
declared origins, none by default) and links the tool to it with ``_meta.ui.resourceUri``, so
hosts that render MCP Apps show it. The view is read once, when the catalog builds the module's
record; a view that cannot be served (a missing file, a path leaving the module's directory, a
page over ``MAX_VIEW_BYTES``) leaves the module served without it, and the catalog logs why.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, ResourceCsp

__all__ = ["APP_MIME_TYPE", "EXTENSION_ID", "MAX_VIEW_BYTES", "ServedView", "View", "ViewError", "module_view"]

VIEW_ATTRIBUTE = "view"
VIEW_SCHEME = "ui://"
VIEW_SUFFIX = "/view"
MAX_VIEW_BYTES = 1024 * 1024
"""The largest view served (UTF-8 bytes): a page is sent whole in every ``resources/read``."""

_ORIGIN = re.compile(r"https://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?")
"""An origin a view may name: https, a host (optionally ``*.`` for its subdomains), a port."""


class ViewError(ValueError):
    """A declared view that cannot be served; the message says why."""


@dataclass(frozen=True)
class View:
    """A module's view, when a file name alone does not say enough.

    Exactly one of ``file`` (relative to the module's file, inside its directory) and ``html``
    (the page itself). ``connect_domains`` are the origins the page may fetch from,
    ``resource_domains`` those it may load scripts, styles, images and fonts from; both empty
    by default, so a host lets the page reach nothing outside itself.
    """

    file: str | None = None
    html: str | None = None
    title: str | None = None
    connect_domains: Sequence[str] = ()
    resource_domains: Sequence[str] = ()
    prefers_border: bool | None = None


@dataclass(frozen=True)
class ServedView:
    """A view as served: its ``ui://`` URI, its page and its ``_meta.ui`` for the resource."""

    uri: str
    html: str
    name: str
    ui: dict[str, Any]

    def tool_meta(self) -> dict[str, Any]:
        """What the extension asks a tool to carry in ``_meta`` to link it to this view."""
        return {"ui": {"resourceUri": self.uri}}

    def contents(self) -> dict[str, Any]:
        """The one ``resources/read`` contents entry (wire dict)."""
        return {"uri": self.uri, "mimeType": APP_MIME_TYPE, "text": self.html, "_meta": {"ui": self.ui}}


def view_uri(module_id: str) -> str:
    return f"{VIEW_SCHEME}{module_id}{VIEW_SUFFIX}"


def viewed_module(uri: str) -> str | None:
    """The module id whose view ``uri`` names, or None when it is not a view URI."""
    if not (uri.startswith(VIEW_SCHEME) and uri.endswith(VIEW_SUFFIX)):
        return None
    module_id = uri[len(VIEW_SCHEME) : -len(VIEW_SUFFIX)]
    return module_id or None


def module_view(module: object, module_id: str) -> ServedView | None:
    """The view ``module`` declares (its ``view`` attribute), read and checked; None without one.

    Raises:
        ViewError: the declaration is malformed, the file is missing, unreadable, outside the
            module's directory or not UTF-8, or the page is larger than ``MAX_VIEW_BYTES``.
    """
    declared = getattr(module, VIEW_ATTRIBUTE, None)
    if declared is None:
        return None
    if isinstance(declared, str):
        declared = View(file=declared)
    if not isinstance(declared, View):
        raise ViewError(f"its view must be a file name or an apcore_mcp.View, not {type(declared).__name__}")
    if (declared.file is None) == (declared.html is None):
        raise ViewError("its View needs exactly one of file= and html=")
    html = declared.html if declared.html is not None else _read_file(module, declared.file or "")
    if len(html.encode()) > MAX_VIEW_BYTES:
        raise ViewError(f"its view is larger than {MAX_VIEW_BYTES} bytes")
    csp = ResourceCsp(
        connect_domains=_origins(declared.connect_domains, "connect_domains"),
        resource_domains=_origins(declared.resource_domains, "resource_domains"),
    )
    ui: dict[str, Any] = {"csp": csp.model_dump(by_alias=True, exclude_none=True)}
    if declared.prefers_border is not None:
        ui["prefersBorder"] = declared.prefers_border
    return ServedView(view_uri(module_id), html, declared.title or f"{module_id} view", ui)


def _read_file(module: object, name: str) -> str:
    base = _module_directory(module)
    if base is None:
        raise ViewError(f"its view file {name!r} cannot be found: the module's own file is unknown")
    if not name or Path(name).is_absolute():
        raise ViewError(f"its view file {name!r} must be a path relative to the module's file")
    path = (base / name).resolve()
    if not path.is_relative_to(base):
        raise ViewError(f"its view file {name!r} is outside the module's directory {base}")
    if not path.is_file():
        raise ViewError(f"its view file {path} does not exist")
    if path.stat().st_size > MAX_VIEW_BYTES:
        raise ViewError(f"its view file {path} is larger than {MAX_VIEW_BYTES} bytes")
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ViewError(f"its view file {path} cannot be read as UTF-8: {exc}") from None


def _module_directory(module: object) -> Path | None:
    owner = module if inspect.isclass(module) else type(module)
    filename: str | None = None
    with contextlib.suppress(TypeError, OSError):
        filename = inspect.getsourcefile(owner)
    if filename is None:
        execute = getattr(owner, "execute", None)
        code = getattr(inspect.unwrap(execute), "__code__", None) if callable(execute) else None
        filename = getattr(code, "co_filename", None)
    if not filename or filename.startswith("<"):
        return None
    return Path(filename).resolve().parent


def _origins(values: Sequence[str], field: str) -> list[str]:
    if isinstance(values, str):
        raise ViewError(f"its View {field} must be a list of origins, not a string")
    for value in values:
        # An origin goes into a host's Content-Security-Policy: anything else could add directives.
        if not isinstance(value, str) or not _ORIGIN.fullmatch(value):
            raise ViewError(f"its View {field} holds {value!r}, not an https origin (https://host[:port])")
    return list(values)
