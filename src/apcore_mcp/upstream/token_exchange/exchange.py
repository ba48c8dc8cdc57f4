"""Token exchange (RFC 8693): a token for the upstream, in the caller's name, for the caller's token.

An upstream entry with ``auth`` is called as each caller without passing their token on: the
caller's validated bearer is the ``subject_token`` of a form POST to the authorization
server's ``tokenEndpoint`` (section 2.1: ``grant_type``, ``subject_token``,
``subject_token_type``, ``audience``, ``resource``, ``scope``, ``requested_token_type``;
the client authenticated with HTTP Basic), and the ``access_token`` of its answer (section
2.2) is what that caller's upstream connection sends.

The request follows no redirect, is bounded in time (the server's ``timeout``) and its
answer in size (``MAX_RESPONSE_BYTES``). Exchanged tokens are kept per caller until they
expire (less ``EXPIRY_SKEW_SECONDS``), in a bounded LRU keyed by a hash of the caller and
their token (``caller_key``): never by a token itself. Concurrent calls of one caller share
one exchange. Failures are ``UpstreamCredentials*`` errors naming the server and the
authorization server's error code, never a token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
from pydantic import BaseModel, ConfigDict, ValidationError

from apcore_mcp.upstream.errors import UpstreamCredentialsRefused, UpstreamCredentialsUnavailable
from apcore_mcp.upstream.specs import TokenExchangeSpec

logger = logging.getLogger(__name__)

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
MAX_RESPONSE_BYTES = 64 * 1024
EXPIRY_SKEW_SECONDS = 30.0
"""An exchanged token is renewed this long before it expires, so none expires on the way to the upstream."""
DEFAULT_LIFETIME_SECONDS = 60.0
"""How long to keep a token whose answer gave no ``expires_in`` (RFC 8693 only recommends it)."""
MAX_CACHED = 1024
_ERROR_CODE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


@dataclass(frozen=True, repr=False)
class ExchangedToken:
    """An access token for the upstream, for one caller; ``fingerprint`` names it where a key or a log needs to."""

    access_token: str
    expires_at: float
    fingerprint: str

    def __repr__(self) -> str:
        return f"ExchangedToken(fingerprint={self.fingerprint!r})"


class _Answer(BaseModel):
    """The fields of a section 2.2 answer we use; the others are ignored."""

    model_config = ConfigDict(extra="ignore")
    access_token: str
    token_type: str
    issued_token_type: str | None = None
    expires_in: float | None = None


def caller_key(principal: Any, token: str) -> str:
    """The cache key of a caller presenting ``token``: a SHA-256 over who they are and the token."""
    identity = getattr(principal, "identity", None)
    parts = (getattr(principal, "issuer", None) or "", getattr(identity, "id", "") or "", token)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


class TokenExchanger:
    """The exchanges of one upstream entry, cached per caller (see the module doc)."""

    def __init__(
        self,
        server: str,
        spec: TokenExchangeSpec,
        *,
        audience: str,
        timeout: float,
        max_cached: int = MAX_CACHED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self.spec = spec
        self.audience = spec.audience or audience
        self.timeout = timeout
        self.max_cached = max_cached
        self.clock = clock
        """Seconds, for expiry (``time.monotonic``; a test moves it on)."""
        self._cache: OrderedDict[str, ExchangedToken] = OrderedDict()
        self._pending: dict[str, anyio.Lock] = {}
        self.exchanges = 0
        """How many exchange requests were sent (for tests and metrics)."""

    @property
    def cached(self) -> int:
        return len(self._cache)

    async def token_for(self, key: str, subject_token: str) -> ExchangedToken:
        """A token for the caller ``key`` (``caller_key``), exchanged now or kept from an earlier exchange.

        Raises:
            UpstreamCredentialsRefused: the authorization server refused the exchange.
            UpstreamCredentialsUnavailable: it could not be reached or answered unusably.
        """
        found = self._fresh(key)
        if found is not None:
            return found
        lock = self._pending.setdefault(key, anyio.Lock())
        try:
            async with lock:
                found = self._fresh(key)
                if found is not None:
                    return found
                token = await self._exchange(subject_token)
                self._keep(key, token)
                return token
        finally:
            if not lock.statistics().tasks_waiting and self._pending.get(key) is lock:
                del self._pending[key]

    def _fresh(self, key: str) -> ExchangedToken | None:
        token = self._cache.get(key)
        if token is None:
            return None
        if token.expires_at - EXPIRY_SKEW_SECONDS <= self.clock():
            del self._cache[key]
            return None
        self._cache.move_to_end(key)
        return token

    def _keep(self, key: str, token: ExchangedToken) -> None:
        self._cache[key] = token
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_cached:
            self._cache.popitem(last=False)

    # -- the request -----------------------------------------------------------------------------

    def form(self, subject_token: str) -> dict[str, str]:
        """The section 2.1 request body."""
        spec = self.spec
        body = {
            "grant_type": GRANT_TYPE,
            "subject_token": subject_token,
            "subject_token_type": spec.subject_token_type,
            "audience": self.audience,
        }
        optional = {"resource": spec.resource, "scope": spec.scope, "requested_token_type": spec.requested_token_type}
        return {**body, **{name: value for name, value in optional.items() if value}}

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.spec.client_id is not None and self.spec.client_secret is not None:
            # RFC 6749 section 2.3.1: each part form-encoded, then Basic.
            pair = f"{quote(self.spec.client_id, safe='')}:{quote(self.spec.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        return headers

    async def _exchange(self, subject_token: str) -> ExchangedToken:
        self.exchanges += 1
        started = self.clock()
        try:
            status, body = await self._post(self.form(subject_token))
        except httpx2.TimeoutException:
            raise self._unavailable(f"no answer within {self.timeout:g}s") from None
        except httpx2.HTTPError as exc:
            raise self._unavailable(f"unreachable ({type(exc).__name__})") from None
        if status in (400, 401, 403):
            raise self._refused(status, body)
        if status != 200:
            raise self._unavailable(f"HTTP {status}")
        try:
            answer = _Answer.model_validate_json(body)
        except ValidationError:
            raise self._unavailable("its answer is not a token exchange response") from None
        if answer.token_type.lower() not in ("bearer", "n_a") or not answer.access_token:
            raise self._unavailable(f"it issued a token of type {answer.token_type[:32]!r}, not a bearer token")
        lifetime = answer.expires_in if answer.expires_in is not None else DEFAULT_LIFETIME_SECONDS
        token = ExchangedToken(answer.access_token, started + lifetime, fingerprint(answer.access_token))
        logger.debug("Upstream %r: token exchanged (%s, %gs)", self.server, token.fingerprint, lifetime)
        return token

    async def _post(self, form: dict[str, str]) -> tuple[int, bytes]:
        async with (
            httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as http,
            http.stream("POST", self.spec.token_endpoint, data=form, headers=self._headers()) as response,
        ):
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_RESPONSE_BYTES:
                    raise self._unavailable(f"its answer is larger than {MAX_RESPONSE_BYTES} bytes")
            return response.status_code, bytes(body)

    def _refused(self, status: int, body: bytes) -> UpstreamCredentialsRefused:
        code = _error_code(body)
        logger.info("Upstream %r: the authorization server refused the token exchange (%s)", self.server, code)
        return UpstreamCredentialsRefused(
            self.server,
            f"upstream {self.server!r}: the authorization server refused the token exchange ({code})",
            as_error=code,
            status=status,
        )

    def _unavailable(self, why: str) -> UpstreamCredentialsUnavailable:
        logger.warning("Upstream %r: token exchange failed: %s", self.server, why)
        return UpstreamCredentialsUnavailable(
            self.server, f"upstream {self.server!r}: the authorization server could not exchange the token: {why}"
        )


def _error_code(body: bytes) -> str:
    """The ``error`` of an RFC 6749 section 5.2 answer when it is a plain code, else ``unrecognised error``."""
    try:
        value = json.loads(body).get("error")
    except (ValueError, AttributeError):
        value = None
    return value if isinstance(value, str) and _ERROR_CODE.match(value) else "unrecognised error"
