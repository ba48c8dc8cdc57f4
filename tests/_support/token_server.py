"""An authorization server in miniature for the token exchange tests: a Starlette app on a loopback port.

Its one route, ``POST /token``, does RFC 8693 token exchange: it checks the client's HTTP
Basic credentials, verifies the ``subject_token`` (a JWT of the tests' inbound ``Issuer``
whose audience is the bridge's MCP resource) and issues a JWT of its own whose ``aud`` is
the requested ``audience`` and whose ``sub`` is the subject token's. ``mode`` switches it
to failing: ``refuse`` (400 ``invalid_grant``), ``error`` (500), ``slow`` (answers after
``SLOW_SECONDS``); ``refuse_subjects`` refuses some callers only. Every request's form and headers are recorded in ``requests``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import jwt
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from apcore_mcp.run.serving import bind_socket

from tests._support.auth import Issuer, rsa_key

AS_ISSUER = "https://as.example.test"
CLIENT_ID = "apcore-bridge"
CLIENT_SECRET = "as-client-secret-5f1e9a77-never-shown"
GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
SLOW_SECONDS = 3.0


@dataclass
class TokenServer:
    """The server's state: what it checks subject tokens against, how it behaves, what it was asked."""

    inbound: Issuer
    bridge_resource: str
    mode: str = "ok"
    lifetime: int = 300
    signer: Issuer = field(default_factory=lambda: Issuer(keys=[rsa_key("as-1")], name=AS_ISSUER))
    refuse_subjects: set[str] = field(default_factory=set)
    """Subjects whose exchanges are refused (``invalid_grant``) whatever the mode."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)

    def public_pem(self) -> str:
        return self.signer.keys[0].public_pem()

    async def token(self, request: Request) -> JSONResponse:
        form = dict(await request.form())
        self.requests.append({"form": form, "headers": dict(request.headers)})
        if self.mode == "slow":
            await asyncio.sleep(SLOW_SECONDS)
        if self.mode == "error":
            return JSONResponse({"error": "server_error"}, status_code=500)
        if not self._client_ok(request.headers.get("authorization", "")):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if self.mode == "refuse" or form.get("grant_type") != GRANT:
            return JSONResponse({"error": "invalid_grant", "error_description": "refused"}, status_code=400)
        subject = self._subject(str(form.get("subject_token", "")))
        if subject is None or subject in self.refuse_subjects:
            return JSONResponse({"error": "invalid_grant", "error_description": "bad subject token"}, status_code=400)
        issued = self.signer.token(str(form["audience"]), sub=subject, lifetime=self.lifetime, client_id=CLIENT_ID)
        self.issued.append(issued)
        answer = {
            "access_token": issued,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer",
            "expires_in": self.lifetime,
        }
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    def _client_ok(self, header: str) -> bool:
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        return header == f"Basic {expected}"

    def _subject(self, token: str) -> str | None:
        try:
            claims = jwt.decode(
                token,
                self.inbound.keys[0].public_pem(),
                algorithms=["RS256"],
                audience=self.bridge_resource,
                issuer=self.inbound.name,
            )
        except jwt.PyJWTError:
            return None
        subject = claims.get("sub")
        return subject if isinstance(subject, str) else None

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/token", self.token, methods=["POST"])])


@contextlib.asynccontextmanager
async def serving(app: ASGIApp, sock: Any = None) -> AsyncIterator[str]:
    """``app`` on uvicorn in this event loop on 127.0.0.1 (a free port, or ``sock``); yields its base URL."""
    sock = sock or bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                assert not task.done(), task
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()
