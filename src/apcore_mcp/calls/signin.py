"""Public and protected tools: who may call without credentials, and how a caller is asked to sign in.

With auth on, the operator opts in to public tools with ``auth_public_tools`` (globs of module
ids): the tools matching them, and the modules declaring ``metadata={"mcp_public": True}``, are
*public*: a caller without credentials may list and call them. A module's own ``mcp_public``
wins over the globs both ways (``False`` keeps a tool protected whatever a glob says), but only
the operator opens the door: with ``auth_public_tools`` empty no tool is public. A caller
without credentials is the *anonymous* principal, one principal for all of them: its apcore
identity has the id and type ``anonymous`` (an ACL rule can name it; no token ever yields that
type), and the rate limit and the concurrency share count it as one caller.

Every other tool is *protected*. A caller is asked to sign in with an RFC 6750 challenge naming
the resource's RFC 9728 metadata document and the scopes the tool needs: ``WWW-Authenticate``
on an HTTP 401 (no credentials) or 403 (``insufficient_scope``), which Claude's clients follow,
or, in the ``tool-result`` form ChatGPT's apps read, the same challenge in a tool error's
``_meta["mcp/www_authenticate"]``. Each tool says what it needs as ``securitySchemes``
(SEP-1488): ``noauth`` for a public tool, ``oauth2`` with its scopes for a protected one.

The resource URLs come from the configured ``public_url``, never from request headers: behind a
proxy the Host, scheme and path the app sees are not the ones the client used.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from apcore import Identity

from apcore_mcp.calls.principal import Principal, ScopeRules, parse_scope_rules, route_scopes, tool_scopes

if TYPE_CHECKING:
    from apcore_mcp.settings import Settings

ANONYMOUS = "anonymous"
"""The id and the identity type of the caller without credentials."""
CHALLENGE_META_KEY = "mcp/www_authenticate"
"""Where a tool error carries the sign-in challenge (the form ChatGPT's apps read)."""

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP_RESOURCE = "/mcp"
SSE_RESOURCE = "/sse"


def anonymous_principal() -> Principal:
    """The principal of a caller without credentials: no scopes, the ``anonymous`` identity."""
    identity = Identity(id=ANONYMOUS, type=ANONYMOUS, roles=(), attrs={"scopes": ()})
    return Principal(identity=identity, client_id=ANONYMOUS)


def is_anonymous(identity: Identity | None) -> bool:
    return identity is not None and identity.type == ANONYMOUS


# -- the resources and their metadata URLs ------------------------------------------------------


@dataclass(frozen=True)
class Resource:
    """One protected resource: its identifier, where its metadata is, and the audiences it accepts."""

    path: str
    """The app-local path the resource is served at (``/mcp``)."""
    url: str
    """The resource identifier clients use (``https://example.com/sub/mcp``): the default audience."""
    metadata_url: str
    """Where its metadata document is, as the client must fetch it (sent in ``WWW-Authenticate``)."""
    metadata_paths: tuple[str, ...]
    """The app-local paths serving that document."""
    audiences: tuple[str, ...]


def public_base(settings: Settings) -> str:
    """``public_url``, else ``http://HOST:PORT`` from the bind settings (no trailing slash)."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    return http_origin(settings.host, settings.port)


def http_origin(host: str, port: int) -> str:
    """``http://HOST:PORT``, an IPv6 address in brackets."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def make_resource(path: str, base: str, audiences: Iterable[str] = ()) -> Resource:
    """The resource served at app path ``path`` under the public ``base`` (RFC 9728 section 3.1)."""
    parts = urlsplit(base)
    origin, prefix = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    url = f"{base}{path}"
    local = tuple(dict.fromkeys((f"{WELL_KNOWN}{path}", f"{WELL_KNOWN}{prefix}{path}")))
    return Resource(
        path=path,
        url=url,
        metadata_url=f"{origin}{WELL_KNOWN}{prefix}{path}",
        metadata_paths=local,
        audiences=tuple(audiences) or (url,),
    )


def resources_for(settings: Settings) -> dict[str, Resource]:
    """``mcp`` (``/mcp``), ``sse`` (``/sse`` and ``/messages/``) and, when served, ``explorer``."""
    base = public_base(settings)
    paths = {"mcp": MCP_RESOURCE, "sse": SSE_RESOURCE}
    if settings.explorer:
        paths["explorer"] = settings.explorer_prefix
    return {name: make_resource(path, base, settings.auth_audience) for name, path in paths.items()}


def challenge(
    metadata_url: str,
    *,
    error: str | None = None,
    description: str | None = None,
    scopes: frozenset[str] = frozenset(),
) -> str:
    """The ``WWW-Authenticate`` value (RFC 6750 section 3, RFC 9728 section 5.1)."""
    params = [f'resource_metadata="{metadata_url}"']
    if error is not None:
        params.append(f'error="{error}"')
    if description is not None:
        params.append(f'error_description="{_quotable(description)}"')
    if scopes:
        params.append(f'scope="{" ".join(sorted(scopes))}"')
    return "Bearer " + ", ".join(params)


def _quotable(text: str) -> str:
    return "".join(ch for ch in text if ch not in '"\\' and 0x20 <= ord(ch) < 0x7F)


# -- the per-tool policy -----------------------------------------------------------------------


def _undeclared(_name: str) -> bool | None:
    return None


@dataclass(frozen=True)
class SignIn:
    """Which tools are public, which scopes each protected one needs, and the challenge for it."""

    metadata_urls: dict[str, str]
    """The resource metadata URL by call origin (``mcp``, ``explorer``); ``mcp`` for any other."""
    base_scopes: frozenset[str] = frozenset()
    """What every authenticated request to ``/mcp`` needs: ``auth_scopes`` and the route rules on it."""
    tool_rules: ScopeRules = ()
    public_patterns: tuple[str, ...] = ()
    declared: Callable[[str], bool | None] = _undeclared
    """A module's own ``mcp_public`` (``None``: it says nothing)."""
    always_public: frozenset[str] = frozenset()
    """Tools public whenever some are (search mode's meta-tools, which show each caller its own)."""
    form: str = "http"
    oauth: bool = True
    """Tokens come from an OAuth issuer (``jwt``): protected tools say ``oauth2``."""

    @classmethod
    def for_settings(
        cls, settings: Settings, declared: Callable[[str], bool | None], always_public: Iterable[str] = ()
    ) -> SignIn:
        resources = resources_for(settings)
        rules = parse_scope_rules(settings.auth_route_scopes, "auth_route_scopes")
        return cls(
            metadata_urls={name: resource.metadata_url for name, resource in resources.items()},
            base_scopes=frozenset(settings.auth_scopes) | route_scopes(rules, MCP_RESOURCE),
            tool_rules=parse_scope_rules(settings.auth_tool_scopes, "auth_tool_scopes"),
            public_patterns=tuple(settings.auth_public_tools),
            declared=declared,
            always_public=frozenset(always_public),
            form=settings.auth_challenge,
            oauth=settings.auth == "jwt",
        )

    @property
    def mixed(self) -> bool:
        """Whether the operator opened public tools (``auth_public_tools``): else every tool is protected."""
        return bool(self.public_patterns)

    def public(self, name: str) -> bool:
        if not self.mixed:
            return False
        if name in self.always_public:
            return True
        declared = self.declared(name)
        if declared is not None:
            return declared
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.public_patterns)

    def scopes(self, name: str) -> frozenset[str]:
        """The scopes an authenticated caller needs to call ``name``."""
        return self.base_scopes | tool_scopes(self.tool_rules, name)

    def schemes(self, name: str) -> list[dict[str, Any]]:
        """``securitySchemes`` (SEP-1488) of tool ``name``: ``noauth``, or ``oauth2`` with its scopes."""
        if self.public(name):
            return [{"type": "noauth"}]
        if not self.oauth:
            return []  # API keys: no scheme of SEP-1488 describes them
        return [{"type": "oauth2", "scopes": sorted(self.scopes(name))}]

    def challenge(self, origin: str, name: str, *, insufficient: bool) -> str:
        """The challenge for calling ``name``: to sign in, or (``insufficient``) for more scopes."""
        url = self.metadata_urls.get(origin, self.metadata_urls["mcp"])
        if insufficient:
            return challenge(url, error="insufficient_scope", scopes=self.scopes(name))
        return challenge(url, scopes=self.scopes(name))

    def challenge_meta(self, origin: str, name: str, *, insufficient: bool) -> dict[str, Any]:
        """A tool error's ``_meta`` carrying the challenge (the ``tool-result`` form)."""
        return {CHALLENGE_META_KEY: [self.challenge(origin, name, insufficient=insufficient)]}
