"""Resources served by modules, and the documentation resources of every tool.

A module becomes a resource instead of a tool when its metadata says so::

    metadata = {"mcp_resource": {"uri": "weather://{city}/today", "mime_type": "application/json",
                                 "name": "Today's weather", "complete": {"city": ["paris", "berlin"]}}}

A URI with ``{variables}`` (RFC 6570) is a resource template: reading a matching URI calls the
module through the Executor with the variables as its inputs. The output becomes the
resource's contents: its ``text`` field, or its ``blob`` field (base64), or else the whole
output as JSON. Modules with ``documentation`` are also ``docs://{module_id}`` resources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from apcore_mcp.tools.content import dump_json, to_json_value
from apcore_mcp.tools.views import VIEW_SCHEME

RESOURCE_META_KEY = "mcp_resource"
DOCS_SCHEME = "docs://"
DOCS_TEMPLATE = "docs://{module_id}"


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A module's resource declaration, parsed once."""

    uri: str
    name: str
    description: str
    mime_type: str | None
    template: UriTemplate | None = field(compare=False)
    complete: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def match(self, uri: str) -> dict[str, str] | None:
        """The module inputs for ``uri``, or ``None`` when it is not this resource's."""
        if self.template is None:
            return {} if uri == self.uri else None
        found = self.template.match(uri)
        if found is None:
            return None
        return {name: value if isinstance(value, str) else ",".join(value) for name, value in found.items()}

    def completions(self, variable: str, prefix: str) -> list[str]:
        lowered = prefix.lower()
        return [value for value in self.complete.get(variable, ()) if value.lower().startswith(lowered)]


def resource_spec(module_id: str, description: str, metadata: Mapping[str, Any] | None) -> ResourceSpec | None:
    """The ``mcp_resource`` declaration of a module, or ``None``.

    Raises:
        ValueError: the declaration is malformed (the message names the field).
    """
    declared = (metadata or {}).get(RESOURCE_META_KEY)
    if declared is None:
        return None
    if not isinstance(declared, Mapping) or not isinstance(declared.get("uri"), str) or not declared["uri"]:
        raise ValueError(f"{RESOURCE_META_KEY}.uri must be a non-empty string")
    uri = declared["uri"]
    if uri.startswith(VIEW_SCHEME):
        # ui:// is the module views' (tools/views.py): reading one never runs a module.
        raise ValueError(f"{RESOURCE_META_KEY}.uri may not use {VIEW_SCHEME}, kept for module views (a view attribute)")
    template = None
    if UriTemplate.is_template(uri):
        try:
            template = UriTemplate.parse(uri)
        except InvalidUriTemplate as exc:
            raise ValueError(f"{RESOURCE_META_KEY}.uri is not a valid URI template: {exc}") from None
    mime_type = declared.get("mime_type")
    if mime_type is not None and not isinstance(mime_type, str):
        raise ValueError(f"{RESOURCE_META_KEY}.mime_type must be a string")
    complete = declared.get("complete", {})
    if not isinstance(complete, Mapping) or not all(
        isinstance(values, list | tuple) and all(isinstance(v, str) for v in values) for values in complete.values()
    ):
        raise ValueError(f"{RESOURCE_META_KEY}.complete must map variable names to lists of strings")
    return ResourceSpec(
        uri=uri,
        name=str(declared.get("name") or module_id),
        description=str(declared.get("description") or description or module_id),
        mime_type=mime_type,
        template=template,
        complete={str(name): tuple(values) for name, values in complete.items()},
    )


def contents_of(uri: str, output: object, mime_type: str | None) -> dict[str, Any]:
    """A module output as one ``resources/read`` contents entry (wire dict)."""
    plain = to_json_value(output)
    if isinstance(plain, dict) and isinstance(plain.get("text"), str):
        return {"uri": uri, "mimeType": plain.get("mime_type") or mime_type or "text/plain", "text": plain["text"]}
    if isinstance(plain, dict) and isinstance(plain.get("blob"), str):
        blob_type = plain.get("mime_type") or mime_type or "application/octet-stream"
        return {"uri": uri, "mimeType": blob_type, "blob": plain["blob"]}
    return {"uri": uri, "mimeType": mime_type or "application/json", "text": dump_json(plain)}
