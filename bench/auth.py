"""Workload 7: what authentication costs per call.

- Token verification alone, in process: a JWT (RS256, ES256) verified against a JWKS that was
  fetched once and is now cached, and an API key; median per verification.
- The same tools/call over Streamable HTTP (uvicorn on 127.0.0.1, the official client in the
  handshake era) to two servers at once, one without auth and one with JWT auth, alternating
  call by call so machine noise lands on both alike; the difference of the medians is the
  overhead per call. The JWKS is served by a loopback HTTP server in this process, fetched once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from apcore import Registry
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.principal import parse_api_key
from apcore_mcp.http.jwks import JwksCache
from apcore_mcp.http.tokens import ApiKeyVerifier, JwtVerifier, hash_api_key
from apcore_mcp.run.serving import bind_socket, serving_http
from apcore_mcp.settings import Settings
from bench.common import median
from bench.inproc import discover
from bench.modules import ECHO_ID
from bench.rows import Config, row

ISSUER = "https://issuer.bench.invalid"
NO_AUTH = "no auth"


class Keys:
    """An RSA and an EC signing key, their JWKS, and tokens."""

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = RSAAlgorithm.to_jwk(self.rsa.public_key(), as_dict=True)
        ec_jwk = ECAlgorithm.to_jwk(self.ec.public_key(), as_dict=True)
        return {
            "keys": [
                {**rsa_jwk, "kid": "rsa", "alg": "RS256", "use": "sig"},
                {**ec_jwk, "kid": "ec", "alg": "ES256", "use": "sig"},
            ]
        }

    def token(self, audience: str, alg: str = "RS256") -> str:
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "sub": "bench",
            "aud": audience,
            "iat": now,
            "exp": now + 3600,
            "jti": uuid.uuid4().hex,
        }
        key, kid = (self.rsa, "rsa") if alg == "RS256" else (self.ec, "ec")
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


@contextlib.contextmanager
def jwks_server(keys: Keys) -> Iterator[str]:
    body = json.dumps(keys.jwks()).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
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
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


async def verify_times(jwks_url: str, keys: Keys, count: int) -> dict[str, float]:
    """Median ms per verification: RS256 and ES256 JWTs (cached JWKS) and an API key."""
    audience = "http://127.0.0.1/mcp"
    cache = JwksCache(jwks_url, ttl=3600)
    verifier = JwtVerifier(cache, issuer=ISSUER, algorithms=["RS256", "ES256"])
    api_keys = ApiKeyVerifier([parse_api_key(f"{hash_api_key(f'key-{i}')}:user{i}", "bench") for i in range(10)])
    figures: dict[str, float] = {}
    for name, verify, token in [
        ("RS256", verifier.verify, keys.token(audience, "RS256")),
        ("ES256", verifier.verify, keys.token(audience, "ES256")),
        ("api-key", api_keys.verify, "key-9"),
    ]:
        await verify(token, [audience])  # warm: the JWKS fetch and key construction happen here
        times = []
        for _ in range(count):
            started = time.perf_counter()
            await verify(token, [audience])
            times.append((time.perf_counter() - started) * 1000)
        figures[name] = median(times)
    figures["jwks_fetches"] = cache.fetches
    return figures


@contextlib.asynccontextmanager
async def serving(registry: Registry, jwks_url: str | None) -> AsyncIterator[str]:
    """Our app on a free 127.0.0.1 port in this loop, with JWT auth when ``jwks_url`` is given."""
    sock = bind_socket("127.0.0.1", 0)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    auth: dict[str, Any] = {}
    if jwks_url is not None:
        auth = {"auth": "jwt", "public_url": base, "auth_issuer": ISSUER, "auth_jwks_url": jwks_url}
    bridge = Bridge.build(registry, Settings(**auth))
    async with serving_http(bridge, sock):
        yield base


@contextlib.asynccontextmanager
async def connected(base: str, token: str | None) -> AsyncIterator[Any]:
    """The official client (handshake era) on ``base``, sending ``token`` as a bearer when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        async with Client(transport, mode="legacy", cache=None) as client:
            yield client


async def timed_call(client: Any, payload: str, limit: float) -> float:
    started = time.perf_counter()
    async with asyncio.timeout(limit):
        result = await client.call_tool(ECHO_ID, {"text": payload})
    elapsed = (time.perf_counter() - started) * 1000
    assert not result.is_error
    assert json.loads(result.content[0].text)["text"] == payload
    return elapsed


async def http_calls(cfg: Config, registry: Registry, jwks_url: str, keys: Keys) -> dict[str, list[float]]:
    """Both servers up at once; calls alternate between them (the order flips every call)."""
    times: dict[str, list[float]] = {NO_AUTH: [], "jwt": []}
    async with serving(registry, None) as plain_base, serving(registry, jwks_url) as auth_base:
        token = keys.token(f"{auth_base}/mcp")
        async with connected(plain_base, None) as plain, connected(auth_base, token) as authed:
            clients = [(NO_AUTH, plain), ("jwt", authed)]
            for i in range(cfg.roundtrip_calls + 10):
                for name, client in clients if i % 2 else reversed(clients):
                    elapsed = await timed_call(client, f"p{i}", cfg.call_timeout)
                    if i >= 10:  # warm-up: connections, sessions, the JWKS fetch
                        times[name].append(elapsed)
    return times


def auth(cfg: Config) -> list[dict[str, Any]]:
    keys = Keys()
    registry = discover(cfg.extensions(cfg.small))
    with jwks_server(keys) as jwks_url:
        verified = asyncio.run(verify_times(jwks_url, keys, cfg.calls))
        trips = asyncio.run(http_calls(cfg, registry, jwks_url, keys))
    none_ms, jwt_ms = median(trips[NO_AUTH]), median(trips["jwt"])
    calls = len(trips["jwt"])
    return [
        row(
            "7 auth",
            f"JWT verification, RS256, cached JWKS (in process, {cfg.calls} tokens, median)",
            "ms",
            verified["RS256"],
            {"ES256": verified["ES256"], "api-key (10 keys)": verified["api-key"]},
            target="< 0.5 ms",
            met=verified["RS256"] < 0.5 and verified["ES256"] < 0.5,
            details=verified,
        ),
        row(
            "7 auth",
            f"tools/call over Streamable HTTP with JWT auth (RS256, cached JWKS; {calls} calls, median)",
            "ms",
            jwt_ms,
            {NO_AUTH: none_ms},
            details={"jwt_median_ms": jwt_ms, "no_auth_median_ms": none_ms, "calls": calls},
        ),
        row(
            "7 auth",
            "auth overhead per call beyond no auth (difference of the medians above)",
            "ms",
            jwt_ms - none_ms,
        ),
    ]
