"""Bearer authentication for every HTTP route: pure ASGI middleware in front of the app.

What it does to a request, in order:

1. A token in the query string (``?access_token=``) is refused (400) on every route: URLs
   end up in logs and proxies, so such a token is never accepted.
2. ``Authorization`` is taken out of the request before anything else sees it: no route,
   module or upstream ever receives the caller's token (no token passthrough).
3. Open routes pass: ``/health``, ``/ready``, ``/.well-known/...`` (the metadata documents),
   the explorer's page and config, and ``/metrics`` when ``auth_metrics`` is off. With public
   tools (``auth_public_tools``), a request without credentials to a route that serves tools
   (``/mcp``, SSE, the explorer's ``{prefix}/mcp``, a toolset's, ``/openai/tools``) and has no
   route scope rule passes as the anonymous principal (``calls/signin.py``), which lists and
   calls the public tools only; ``http/challenge.py`` answers its call of another with a 401.
4. Every other route needs a valid token for its resource (the audience check: a token
   issued for another server is refused): 401 with ``WWW-Authenticate: Bearer
   resource_metadata="..."`` (and ``error="invalid_token"`` when one was sent), 403
   ``insufficient_scope`` naming the scopes needed (global, per route, per tool when the
   request names one: ``Mcp-Name`` on a 2026-07-28 call, on ``/mcp`` or the explorer's; not
   per tool with ``auth_filter_tools``, where a tool the caller lacks scopes for is hidden and
   the call router answers it as an absent one).
   The explorer's MCP endpoint (``{prefix}/mcp``) is the explorer's resource (its URL is under
   it, which OAuth clients check, and the page holds the explorer's token) with every scope
   ``/mcp`` needs: its route rules too, and ``Mcp-Name``'s tool scopes.
5. The principal goes into the ASGI scope three ways: ours (``principal.PRINCIPAL_KEY``,
   read by ``identity_of``), and the MCP SDK's ``scope["user"]``/``scope["auth"]``. The
   SDK's transports bind each Streamable HTTP and SSE session to that user (another
   principal presenting the session id gets 404), and its ``AuthContextMiddleware`` (which
   runs after this) lets ``requestState`` sealing bind the principal. Reusing those keeps
   one definition of "the same principal" across the stack.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.middleware import Middleware
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from apcore_mcp.calls import signin
from apcore_mcp.calls.authorization import Authorization
from apcore_mcp.calls.principal import (
    PRINCIPAL_KEY,
    ApiKey,
    BearerCredential,
    Principal,
    parse_api_key,
    parse_api_keys,
    parse_scope_rules,
    route_scopes,
    tool_scopes,
)
from apcore_mcp.calls.signin import MCP_RESOURCE, SSE_RESOURCE, Resource, anonymous_principal, resources_for
from apcore_mcp.http.body import send_json
from apcore_mcp.http.challenge import ToolChallenges, challenges_apply
from apcore_mcp.http.jwks import JwksCache
from apcore_mcp.http.resource_metadata import metadata_routes
from apcore_mcp.http.server_card import is_discovery_path
from apcore_mcp.http.tokens import (
    ApiKeyVerifier,
    JwtVerifier,
    KeySource,
    StaticKey,
    TokenRejected,
    Verifier,
    VerifierUnavailable,
    load_static_key,
)
from apcore_mcp.settings import SettingError, Settings
from apcore_mcp.settings.upstreams import TOOLSETS_PREFIX

logger = logging.getLogger(__name__)

OPENAI_TOOLS_PATH = "/openai/tools"
MAX_TOKEN_BYTES = 16 * 1024
RETRY_AFTER_SECONDS = 30


@dataclass(frozen=True)
class AuthPolicy:
    """Which requests need a token, for which resource, and with which scopes."""

    resources: dict[str, Resource]
    open_paths: frozenset[str]
    global_scopes: frozenset[str]
    route_rules: tuple[tuple[str, frozenset[str]], ...]
    tool_rules: tuple[tuple[str, frozenset[str]], ...]
    explorer_prefix: str | None
    anonymous: bool = False
    """Public tools are on: a request without credentials may reach the routes that serve tools."""

    @classmethod
    def for_settings(cls, settings: Settings) -> AuthPolicy:
        resources = resources_for(settings)
        prefix = settings.explorer_prefix if settings.explorer else None
        open_paths = {"/health", "/ready"}
        if not settings.auth_metrics:
            open_paths.add("/metrics")
        if prefix is not None:
            open_paths |= {prefix, f"{prefix}/", f"{prefix}/config"}  # the page asks for the token itself
        return cls(
            resources=resources,
            open_paths=frozenset(open_paths),
            global_scopes=frozenset(settings.auth_scopes),
            route_rules=parse_scope_rules(settings.auth_route_scopes, "auth_route_scopes"),
            tool_rules=_precheck_rules(settings),
            explorer_prefix=prefix,
            anonymous=bool(settings.auth_public_tools),
        )

    def is_open(self, path: str) -> bool:
        # Everything under /.well-known/ is public by nature: an unknown document there is a 404, not a 401.
        return path in self.open_paths or path.startswith("/.well-known/") or is_discovery_path(path)

    def admits_anonymous(self, path: str) -> bool:
        """Whether a request without credentials may reach ``path`` as the anonymous principal."""
        if not self.anonymous or route_scopes(self.route_rules, path):
            return False
        prefix = self.explorer_prefix
        return (
            path in (MCP_RESOURCE, SSE_RESOURCE, OPENAI_TOOLS_PATH)
            or path.startswith("/messages/")
            or (path.startswith(TOOLSETS_PREFIX + "/") and path.endswith(MCP_RESOURCE))
            or (prefix is not None and path == prefix + MCP_RESOURCE)
        )

    def resource_for(self, path: str) -> Resource:
        if path == "/sse" or path.startswith("/messages/"):
            return self.resources["sse"]
        prefix = self.explorer_prefix
        if prefix is not None and (path == prefix or path.startswith(prefix + "/")):
            return self.resources["explorer"]
        return self.resources["mcp"]

    def tool_of(self, scope: Scope) -> str | None:
        """The tool a request calls, when its URL or headers name one."""
        path: str = scope["path"]
        prefix = self.explorer_prefix
        if path == MCP_RESOURCE or (prefix is not None and path == prefix + MCP_RESOURCE):
            headers = dict(scope["headers"])
            if headers.get(b"mcp-method") == b"tools/call" and b"mcp-name" in headers:
                name: bytes = headers[b"mcp-name"]
                return name.decode("latin-1")
        return None

    def required(self, scope: Scope) -> frozenset[str]:
        path: str = scope["path"]
        needed = self.global_scopes | route_scopes(self.route_rules, path)
        if self.explorer_prefix is not None and path == self.explorer_prefix + MCP_RESOURCE:
            # The /mcp app under another path: a rule on /mcp cannot be walked around through it.
            needed |= route_scopes(self.route_rules, MCP_RESOURCE)
        tool = self.tool_of(scope)
        return needed | tool_scopes(self.tool_rules, tool) if tool is not None else needed


def _precheck_rules(settings: Settings) -> tuple[tuple[str, frozenset[str]], ...]:
    """The tool scope rules the pre-check refuses by: none with ``auth_filter_tools``, nor in the
    ``tool-result`` challenge form.

    Filtered, a tool the caller lacks scopes for is hidden, and a hidden tool is answered as an
    absent one by the call router (``calls/authorization.py``): a 403 here would tell it exists.
    In the ``tool-result`` form the router answers it, with the challenge in the tool error.
    """
    rules = parse_scope_rules(settings.auth_tool_scopes, "auth_tool_scopes")
    return () if settings.auth_filter_tools or settings.auth_challenge != "http" else rules


class BearerAuth:
    """Pure ASGI middleware enforcing an ``AuthPolicy`` with a ``Verifier`` (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        policy: AuthPolicy,
        verifier: Verifier,
        on_reject: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        self.policy = policy
        self.verifier = verifier
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        resource = self.policy.resource_for(scope["path"])
        if _token_in_query(scope):
            await self._refuse(
                send, 400, "token_in_query", resource, "invalid_request", "Tokens in the URL are refused"
            )
            return
        credentials = [value for key, value in scope["headers"] if key == b"authorization"]
        scope = {**scope, "headers": [(key, value) for key, value in scope["headers"] if key != b"authorization"]}
        if self.policy.is_open(scope["path"]):
            await self.app(scope, receive, send)
            return
        needed = self.policy.required(scope)
        if len(credentials) > 1:
            await self._refuse(send, 400, "malformed", resource, "invalid_request", "One Authorization header only")
            return
        if not credentials and self.policy.admits_anonymous(scope["path"]):
            # No user for the SDK: a session opened anonymously serves no token holder, and back.
            scope[PRINCIPAL_KEY] = anonymous_principal()
            await self.app(scope, receive, send)
            return
        token = _bearer(credentials[0]) if credentials else None
        if token is None:
            await self._refuse(send, 401, "unauthenticated", resource, scopes=needed)
            return
        try:
            principal = await self.verifier.verify(token, resource.audiences)
        except TokenRejected as exc:
            logger.info("Refused a bearer token on %s: %s", scope["path"], exc)
            await self._refuse(send, 401, "invalid_token", resource, "invalid_token", str(exc), scopes=needed)
            return
        except VerifierUnavailable as exc:
            logger.warning("Cannot check a bearer token on %s: %s", scope["path"], exc)
            await self._unavailable(send)
            return
        missing = needed - principal.scopes
        if missing:
            logger.info("Refused %r on %s: missing scopes %s", principal.identity.id, scope["path"], sorted(missing))
            await self._refuse(send, 403, "insufficient_scope", resource, "insufficient_scope", None, scopes=needed)
            return
        # A handle on the token, not the token: only an upstream token exchange reads it (calls/principal.py).
        principal = dataclasses.replace(principal, credential=BearerCredential(token))
        scope[PRINCIPAL_KEY] = principal
        scope["user"] = AuthenticatedUser(to_access_token(principal))
        scope["auth"] = AuthCredentials(sorted(principal.scopes))
        await self.app(scope, receive, send)

    async def _refuse(
        self,
        send: Send,
        status: int,
        reason: str,
        resource: Resource,
        error: str | None = None,
        description: str | None = None,
        *,
        scopes: frozenset[str] = frozenset(),
    ) -> None:
        if self.on_reject is not None:
            self.on_reject(reason)
        header = challenge(resource, error=error, description=description, scopes=scopes)
        body = {"error": error or "unauthorized", "error_description": description or "A bearer token is required"}
        if status == 403:
            body["error_description"] = f"This needs the scopes: {' '.join(sorted(scopes))}"
        await send_json(send, status, body, headers={"WWW-Authenticate": header, "Cache-Control": "no-store"})

    async def _unavailable(self, send: Send) -> None:
        if self.on_reject is not None:
            self.on_reject("auth_unavailable")
        body = {"error": "temporarily_unavailable", "error_description": "Tokens cannot be checked right now"}
        await send_json(send, 503, body, headers={"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"})


def challenge(
    resource: Resource,
    *,
    error: str | None = None,
    description: str | None = None,
    scopes: frozenset[str] = frozenset(),
) -> str:
    """The ``WWW-Authenticate`` value for ``resource`` (RFC 6750 section 3, RFC 9728 section 5.1)."""
    return signin.challenge(resource.metadata_url, error=error, description=description, scopes=scopes)


def to_access_token(principal: Principal) -> AccessToken:
    """The SDK's view of the principal, for its session binding and ``get_access_token()``.

    ``token`` is left empty on purpose: the caller's token stays at the edge.
    """
    return AccessToken(
        token="",
        client_id=principal.client_id,
        scopes=sorted(principal.scopes),
        expires_at=principal.expires_at,
        resource=principal.audience,
        subject=principal.identity.id,
        claims={"iss": principal.issuer} if principal.issuer is not None else None,
    )


def _token_in_query(scope: Scope) -> bool:
    query = scope.get("query_string", b"")
    return b"access_token" in query and any(
        key == "access_token" for key, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    )


def _bearer(value: bytes) -> str | None:
    """The token of ``Bearer <token>`` (scheme case-insensitive), or ``None`` for anything else."""
    scheme, _, token = value.decode("latin-1").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_BYTES or " " in token:
        return None
    return token


# -- assembly ----------------------------------------------------------------------------------


@dataclass
class Auth:
    """What the app factory adds when auth is on: middleware and the metadata routes."""

    policy: AuthPolicy
    verifier: Verifier
    routes: list[BaseRoute]

    def middleware(self, on_reject: Callable[[str], None] | None = None) -> list[Middleware]:
        return [
            Middleware(BearerAuth, policy=self.policy, verifier=self.verifier, on_reject=on_reject),
            Middleware(AuthContextMiddleware),
        ]

    def inner_middleware(self, authorization: Authorization) -> list[Middleware]:
        """The layers that read the body (after ``BodyGuard``): 401/403 for a call, when HTTP may say it."""
        if not challenges_apply(authorization):
            return []
        return [Middleware(ToolChallenges, policy=self.policy, authorization=authorization)]


def build_auth(settings: Settings, verifier: Verifier | None = None) -> Auth | None:
    """The auth pieces for ``settings`` (``None`` when ``auth`` is ``none``).

    Raises:
        SettingError: a key or key file cannot be read or used.
    """
    if settings.auth == "none":
        return None
    policy = AuthPolicy.for_settings(settings)
    routes = metadata_routes(policy.resources.values(), settings)
    auth = Auth(policy, verifier or build_verifier(settings), routes)
    mcp = policy.resources["mcp"]
    logger.info("Authentication on (%s): MCP resource %s, metadata at %s", settings.auth, mcp.url, mcp.metadata_url)
    if settings.auth_public_tools:
        logger.info("Public tools (no credentials needed): %s", ", ".join(settings.auth_public_tools))
    return auth


def build_verifier(settings: Settings) -> Verifier:
    """The verifier ``settings`` describe: JWTs against a JWKS or a static key, or API keys."""
    if settings.auth == "api-key":
        return ApiKeyVerifier(_api_keys(settings))
    keys: KeySource
    algorithms: Sequence[str] = settings.auth_algorithms
    if settings.auth_jwks_url:
        keys = JwksCache(settings.auth_jwks_url, ttl=settings.auth_jwks_ttl)
    else:
        field = "auth_jwt_key" if settings.auth_jwt_key else "auth_jwt_key_file"
        text = settings.auth_jwt_key or _read(settings.auth_jwt_key_file, field)
        try:
            key, algorithms = load_static_key(text, settings.auth_algorithms)
        except ValueError as exc:
            raise SettingError(field, f"{field}: {exc}") from None
        keys = StaticKey(key)
    assert settings.auth_issuer is not None  # checked by Settings
    return JwtVerifier(
        keys,
        issuer=settings.auth_issuer,
        algorithms=algorithms,
        id_claim=settings.auth_id_claim,
        roles_claim=settings.auth_roles_claim,
    )


def _api_keys(settings: Settings) -> list[ApiKey]:
    keys = [parse_api_key(entry, "auth_api_keys") for entry in settings.auth_api_keys]
    if settings.auth_api_keys_file:
        text = _read(settings.auth_api_keys_file, "auth_api_keys_file")
        try:
            keys += parse_api_keys(text.splitlines(), "auth_api_keys_file")
        except ValueError as exc:
            raise SettingError("auth_api_keys_file", str(exc)) from None
    if not keys:
        raise SettingError("auth_api_keys_file", "auth_api_keys_file holds no key")
    return keys


def _read(path: str | None, field: str) -> str:
    try:
        return Path(str(path)).read_text("utf-8")
    except OSError as exc:
        raise SettingError(field, f"{field}: cannot read {path}: {exc.strerror or exc}") from None
