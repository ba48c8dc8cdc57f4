"""Who is calling: the authenticated principal, its apcore ``Identity``, and the scopes it holds.

Pure functions and plain data, no web framework: the HTTP edge (``http/auth.py``) makes a
``Principal`` from a bearer token and stores it in the ASGI scope; every edge that builds a
call reads it back with ``identity_of(scope)``. stdio has no bearer: the operator-configured
identity (``stdio_identity``) applies there.

The entry grammars parsed here are shared by the settings checks and the app factory:

- scope rules ``PATTERN=SCOPE[ SCOPE...]`` (a path prefix for routes, a glob for tools);
- API keys ``SHA256HEX:ID[:ROLE ROLE...[:SCOPE SCOPE...]]`` (the key itself is never stored;
  roles hold no colon, scopes may).
"""

from __future__ import annotations

import fnmatch
import re
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from apcore import Identity

if TYPE_CHECKING:
    from apcore_mcp.settings import Settings

PRINCIPAL_KEY = "apcore_mcp.calls.principal"
"""ASGI scope key under which the auth middleware stores the request's ``Principal``."""

# RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ): no space, no quote, no backslash.
_SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
_ROLE = re.compile(r"^[^\s:]+$")

ScopeRules = tuple[tuple[str, frozenset[str]], ...]


class BearerCredential:
    """A handle on the bearer token a request was authenticated with, for token exchange only.

    An upstream configured for token exchange (RFC 8693, ``upstream.token_exchange``) needs
    the caller's validated token as the ``subject_token`` of its request to the authorization
    server; nothing else may see it. So the token is not an attribute of this handle: it is
    held in a module-level weak map keyed by the handle, lives exactly as long as the request's
    ``Principal`` (which carries the handle), and is read only through ``reveal()``. Its repr,
    a log line, a copy of the call context or a walk of a module's context show no token.
    """

    __slots__ = ("__weakref__",)

    def __init__(self, token: str) -> None:
        _HELD[self] = token

    def reveal(self) -> str | None:
        """The token (``None`` once forgotten). Only for a token exchange request's ``subject_token``."""
        return _HELD.get(self)

    def __repr__(self) -> str:
        return "BearerCredential(***)"


_HELD: weakref.WeakKeyDictionary[BearerCredential, str] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: its apcore identity, the scopes it was granted, and where it came from.

    ``client_id``, ``issuer`` and ``identity.id`` (the subject) together name the principal
    that owns a session. The token is not kept on it: ``credential`` is only a handle on it,
    for upstream token exchange (see ``BearerCredential``), outside equality and repr.
    """

    identity: Identity
    scopes: frozenset[str] = frozenset()
    client_id: str = ""
    issuer: str | None = None
    expires_at: int | None = None
    audience: str | None = None
    credential: BearerCredential | None = field(default=None, repr=False, compare=False)


def identity_of(scope: Mapping[str, Any] | None) -> Identity | None:
    """The caller's identity stored in an ASGI ``scope`` by the auth middleware, or ``None``."""
    principal = principal_of(scope)
    return principal.identity if principal is not None else None


def principal_of(scope: Mapping[str, Any] | None) -> Principal | None:
    """The ``Principal`` stored in an ASGI ``scope`` by the auth middleware, or ``None``."""
    found = scope.get(PRINCIPAL_KEY) if scope is not None else None
    return found if isinstance(found, Principal) else None


def request_identity(request: object, default: Identity | None = None) -> Identity | None:
    """The identity behind an MCP handler's ``ctx.request``.

    Over HTTP ``request`` is the Starlette request that carried the message: its principal's
    identity (``None`` when auth is off). Without an HTTP request (stdio, in memory) there is
    no bearer, so ``default`` (the operator-configured identity) applies.
    """
    scope = getattr(request, "scope", None)
    if not isinstance(scope, Mapping):
        return default
    return identity_of(scope)


def stdio_identity(settings: Settings) -> Identity | None:
    """The identity calls run as where no bearer exists (stdio, in memory): ``stdio_identity`` or none."""
    if settings.stdio_identity is None:
        return None
    return Identity(id=settings.stdio_identity, type=settings.stdio_identity_type, roles=settings.stdio_roles)


# -- claims -> identity ------------------------------------------------------------------------


def claim(claims: Mapping[str, Any], path: str) -> object:
    """The value at a dotted claim path (``realm_access.roles``), or ``None``."""
    value: object = claims
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def names_in(value: object) -> tuple[str, ...]:
    """A claim holding names: a space-separated string (``scope``) or a list of strings (``roles``)."""
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list | tuple):
        return tuple(item for item in value if isinstance(item, str) and item)
    return ()


def token_scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """Scopes granted by a JWT: ``scope`` (RFC 9068, space-separated) or ``scp`` (a list, as some issuers send)."""
    return frozenset(names_in(claims.get("scope")) or names_in(claims.get("scp")))


def identity_from_claims(claims: Mapping[str, Any], *, id_claim: str, roles_claim: str) -> Identity:
    """An apcore ``Identity`` from verified claims; ``type`` is always ``user`` (never taken from a token).

    Raises:
        ValueError: the id claim is missing or not a non-empty string.
    """
    subject = claim(claims, id_claim)
    if not isinstance(subject, str) or not subject:
        raise ValueError(f"token has no usable {id_claim!r} claim")
    roles = names_in(claim(claims, roles_claim))
    attrs = {"issuer": claims.get("iss"), "scopes": tuple(sorted(token_scopes(claims)))}
    return Identity(id=subject, type="user", roles=roles, attrs=attrs)


# -- scope rules -------------------------------------------------------------------------------


def check_scopes(names: Iterable[str], what: str) -> frozenset[str]:
    """``names`` as a set, each a valid RFC 6749 scope token.

    Raises:
        ValueError: an invalid scope name.
    """
    scopes = frozenset(names)
    for name in scopes:
        if not _SCOPE_TOKEN.match(name):
            raise ValueError(f"{what}: {name!r} is not a valid scope name")
    return scopes


def parse_scope_rules(entries: Sequence[str], what: str) -> ScopeRules:
    """``PATTERN=SCOPE[ SCOPE...]`` entries as ``((pattern, scopes), ...)``.

    Raises:
        ValueError: an entry without ``=``, an empty pattern or scope list, or a bad scope name.
    """
    rules = []
    for entry in entries:
        pattern, sep, names = entry.partition("=")
        pattern = pattern.strip()
        if not sep or not pattern or not names.split():
            raise ValueError(f"{what} entries must look like PATTERN=SCOPE[ SCOPE...], got {entry!r}")
        rules.append((pattern, check_scopes(names.split(), what)))
    return tuple(rules)


def route_scopes(rules: ScopeRules, path: str) -> frozenset[str]:
    """Scopes the rules require for a request path: every rule whose prefix is the path or a parent of it."""
    needed: set[str] = set()
    for prefix, scopes in rules:
        base = prefix.rstrip("/")
        if path == base or path.startswith(base + "/"):
            needed |= scopes
    return frozenset(needed)


def tool_scopes(rules: ScopeRules, name: str) -> frozenset[str]:
    """Scopes the rules require to call tool ``name``: every rule whose glob (``admin.*``) matches it."""
    needed: set[str] = set()
    for pattern, scopes in rules:
        if fnmatch.fnmatchcase(name, pattern):
            needed |= scopes
    return frozenset(needed)


# -- API keys ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One accepted API key: the SHA-256 of the key, and the principal it stands for."""

    digest: bytes
    principal: Principal


def parse_api_key(entry: str, what: str) -> ApiKey:
    """``SHA256HEX:ID[:ROLE ROLE...[:SCOPE SCOPE...]]`` as an ``ApiKey`` (identity type ``service``).

    Raises:
        ValueError: a malformed entry (the message never repeats the hash).
    """
    parts = entry.strip().split(":", 3)  # scopes, last, may hold colons (``tools:call``)
    if len(parts) < 2:
        raise ValueError(f"{what} entries must look like SHA256HEX:ID[:ROLES[:SCOPES]]")
    digest, key_id = parts[0].strip().lower(), parts[1].strip()
    if not _SHA256_HEX.match(digest):
        raise ValueError(f"{what}: the key hash must be 64 hexadecimal characters (a SHA-256 of the key)")
    if not key_id or any(ch.isspace() for ch in key_id):
        raise ValueError(f"{what}: the identity after the hash must be a non-empty word")
    roles = tuple(parts[2].split()) if len(parts) > 2 else ()
    scopes = check_scopes(parts[3].split(), what) if len(parts) > 3 else frozenset()
    identity = Identity(id=key_id, type="service", roles=roles, attrs={"scopes": tuple(sorted(scopes))})
    return ApiKey(bytes.fromhex(digest), Principal(identity=identity, scopes=scopes, client_id=key_id))


def parse_api_keys(lines: Iterable[str], what: str) -> tuple[ApiKey, ...]:
    """Entries one a line; blank lines and ``#`` comments skipped.

    Raises:
        ValueError: a malformed entry (named by its line number).
    """
    keys = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            keys.append(parse_api_key(text, what))
        except ValueError as exc:
            raise ValueError(f"{exc} (line {number})") from None
    return tuple(keys)
