"""What the auth tests share: an issuer with locally generated keys, tokens, API keys, clients with headers.

Keys are generated per test session (RSA 2048 and EC P-256); nothing is read from disk or
fetched. The JWKS is served through ``respx`` (``mock_jwks``) or a real loopback HTTP server
(``serve_jwks``).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import jwt
import respx
from apcore import Executor, ModuleAnnotations
from apcore.acl import ACL, ACLRule
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import BaseModel

from apcore_mcp.http.tokens import hash_api_key

from tests._support.modules import Echo, make_registry

ISSUER = "https://issuer.example.test"
JWKS_URL = f"{ISSUER}/jwks.json"
ALICE_KEY = "alice-key-" + "a" * 32
BOB_KEY = "bob-key-" + "b" * 32


@dataclass(frozen=True)
class SigningKey:
    kid: str
    alg: str
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            data = RSAAlgorithm.to_jwk(public, as_dict=True)
        else:
            data = ECAlgorithm.to_jwk(public, as_dict=True)
        return {**data, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def public_pem(self) -> str:
        public = self.private.public_key()
        return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


@cache
def _rsa_private(kid: str) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def rsa_key(kid: str = "rsa-1") -> SigningKey:
    return SigningKey(kid, "RS256", _rsa_private(kid))


def ec_key(kid: str = "ec-1") -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


@dataclass
class Issuer:
    """An OAuth issuer in miniature: signing keys, their JWKS, and tokens."""

    keys: list[SigningKey] = field(default_factory=lambda: [rsa_key(), ec_key()])
    name: str = ISSUER

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.jwk() for key in self.keys]}

    def token(
        self,
        audience: str | list[str],
        *,
        sub: str = "alice",
        key: SigningKey | None = None,
        scope: str | None = None,
        roles: list[str] | None = None,
        lifetime: int = 300,
        **claims: Any,
    ) -> str:
        key = key or self.keys[0]
        now = int(time.time())
        payload: dict[str, Any] = {"iss": self.name, "sub": sub, "aud": audience, "iat": now, "exp": now + lifetime}
        payload["jti"] = uuid.uuid4().hex
        if scope is not None:
            payload["scope"] = scope
        if roles is not None:
            payload["roles"] = roles
        payload.update(claims)
        return jwt.encode(payload, key.private, algorithm=key.alg, headers={"kid": key.kid})


@contextlib.contextmanager
def mock_jwks(issuer: Issuer) -> Iterator[respx.Route]:
    """``JWKS_URL`` answered from ``issuer.keys`` at request time; every other host passes through."""
    with respx.mock(assert_all_called=False, assert_all_mocked=False) as router:
        route = router.get(JWKS_URL).mock(side_effect=lambda _request: httpx_response(issuer.jwks()))
        router.route().pass_through()
        yield route


def httpx_response(body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json=body)


@contextlib.contextmanager
def serve_jwks(issuer: Issuer) -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 serving the issuer's JWKS; yields its URL and the paths requested."""
    requested: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            body = json.dumps(issuer.jwks()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/keys", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def api_key_entry(key: str, identity: str, roles: str = "", scopes: str = "") -> str:
    return f"{hash_api_key(key)}:{identity}:{roles}:{scopes}"


# -- the registry: role-based ACL, and a module that reports everything it can see --------------


class SnoopOut(BaseModel):
    seen: str


class Snoop:
    """Returns every string reachable from its context and from the context variables it runs under."""

    description = "Report what a module can see"
    input_schema = Echo.input_schema
    output_schema = SnoopOut
    annotations = ModuleAnnotations(readonly=True)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        import contextvars

        roots = [context, *contextvars.copy_context().values()]
        return {"seen": "\n".join(reachable_strings(roots))}


def reachable_strings(roots: list[Any], limit: int = 50_000) -> list[str]:
    """Strings and bytes reachable from ``roots`` through attributes, dicts and sequences (bounded)."""
    found: list[str] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack and len(seen) < limit:
        node = stack.pop()
        if id(node) in seen or isinstance(node, type):
            continue
        seen.add(id(node))
        if isinstance(node, str | bytes | bytearray):
            found.append(node if isinstance(node, str) else bytes(node).decode("latin-1"))
        elif isinstance(node, dict):
            stack += [*node.keys(), *node.values()]
        elif isinstance(node, list | tuple | set | frozenset):
            stack += list(node)
        else:
            slots = getattr(node, "__slots__", ()) or ()
            for name in (slots,) if isinstance(slots, str) else slots:
                stack.append(getattr(node, name, None))
            stack += list(getattr(node, "__dict__", {}).values())
    return found


def role_executor() -> Executor:
    """The test registry plus ``demo.snoop`` and ``gated.echo``; external callers need the ``writer``
    role for ``demo.*``, and for ``gated.echo``, which the ACL also puts to a human each call."""
    registry = make_registry()
    registry.register("demo.snoop", Snoop())
    registry.register("gated.echo", Echo())
    writers = {"roles": ["writer"]}
    acl = ACL(
        [
            ACLRule(callers=["@external"], targets=["demo.*"], effect="allow", conditions=writers),
            ACLRule(
                callers=["@external"], targets=["gated.*"], effect="allow", conditions=writers, approval="required"
            ),
        ],
        default_effect="deny",
    )
    return Executor(registry, acl=acl)


# -- MCP clients carrying a bearer token --------------------------------------------------------


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str | None, *, mode: str = "legacy") -> AsyncIterator[Any]:
    """``endpoint_client`` on the server's ``/mcp``."""
    async with endpoint_client(f"{url}/mcp", token, mode) as client:
        yield client


@contextlib.asynccontextmanager
async def endpoint_client(endpoint: str, token: str | None, mode: str = "legacy") -> AsyncIterator[Client]:
    """``mcp.Client`` over Streamable HTTP at ``endpoint`` (``/mcp``, the explorer's door, a toolset's),
    every request carrying ``Authorization: Bearer`` (no token: a caller without credentials).

    The SDK client takes headers through the ``httpx2.AsyncClient`` it is given.
    """
    async with create_mcp_http_client(headers=bearer(token) if token else None) as http:
        async with Client(streamable_http_client(endpoint, http_client=http), mode=mode, cache=None) as client:
            yield client


@contextlib.asynccontextmanager
async def sse_session(url: str, token: str, on_session_created: Any = None) -> AsyncIterator[Any]:
    """A legacy SSE session whose GET stream and message POSTs all carry the token."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        sse_client(f"{url}/sse", headers=headers, on_session_created=on_session_created) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
