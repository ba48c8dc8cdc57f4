"""The issuer's signing keys, fetched from its JWKS URL with httpx and cached.

- A fetched key set is reused for ``ttl`` seconds, then fetched again on the next token.
- A token naming a key id the set does not hold (the issuer rotated its keys) makes one
  early fetch, at most every ``min_refetch`` seconds, so a stream of made-up key ids cannot
  turn into a stream of requests to the issuer.
- When a fetch fails the keys already held stay in use (logged); with none held, the token
  cannot be checked and ``VerifierUnavailable`` says so (503, not 401: the token may be fine).
- One fetch at a time: callers arriving meanwhile wait for it and use its result.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
from jwt import PyJWK, PyJWTError

from apcore_mcp.http.tokens import VerifierUnavailable

logger = logging.getLogger(__name__)

MAX_JWKS_BYTES = 512 * 1024
FETCH_TIMEOUT_SECONDS = 5.0
MIN_REFETCH_SECONDS = 30.0


class JwksCache:
    """A ``KeySource`` backed by a JWKS URL."""

    def __init__(
        self,
        url: str,
        *,
        ttl: float,
        min_refetch: float = MIN_REFETCH_SECONDS,
        timeout: float = FETCH_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.ttl = ttl
        self.min_refetch = min_refetch
        self.timeout = timeout
        self.clock = clock
        self.fetches = 0
        """Fetches attempted so far (observable by tests and the bench)."""
        self._keys: dict[str, dict[str, Any]] | None = None
        self._built: dict[tuple[str, str], PyJWK | None] = {}
        self._expires = 0.0
        self._last_attempt: float | None = None
        self._generation = 0
        self._lock = anyio.Lock()

    async def key(self, kid: str | None, alg: str) -> PyJWK | None:
        if self._keys is None or self.clock() >= self._expires:
            await self._refresh()
            if self._keys is None:  # a fetch that failed while this request waited for it
                raise VerifierUnavailable("the issuer's keys could not be fetched")
        found = self._lookup(kid, alg)
        if found is None and kid is not None and self._may_refetch():
            logger.info("Key id %r not in the JWKS; fetching it again (key rotation)", kid[:64])
            await self._refresh()
            found = self._lookup(kid, alg)
        return found

    def _may_refetch(self) -> bool:
        return self._last_attempt is None or self.clock() - self._last_attempt >= self.min_refetch

    async def _refresh(self) -> None:
        seen = self._generation
        async with self._lock:
            if self._generation != seen:
                return  # another request refreshed while this one waited
            if self._keys is None and not self._may_refetch():
                raise VerifierUnavailable("the issuer's keys could not be fetched")
            self._last_attempt = self.clock()
            self.fetches += 1
            try:
                keys = await self._fetch()
            except VerifierUnavailable as exc:
                self._generation += 1
                if self._keys is None:
                    logger.warning("Cannot fetch the JWKS from %s: %s", self.url, exc)
                    raise
                logger.warning("Cannot refresh the JWKS from %s (%s); keeping the keys held", self.url, exc)
                self._expires = self.clock() + min(self.ttl, self.min_refetch)
                return
            self._keys, self._built = keys, {}
            self._expires = self.clock() + self.ttl
            self._generation += 1

    async def _fetch(self) -> dict[str, dict[str, Any]]:
        try:
            async with (
                httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as client,
                client.stream("GET", self.url, headers={"Accept": "application/json"}) as response,
            ):
                if response.status_code != 200:
                    raise VerifierUnavailable(f"the JWKS URL answered {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_JWKS_BYTES:
                        raise VerifierUnavailable(f"the JWKS is larger than {MAX_JWKS_BYTES} bytes")
        except httpx.HTTPError as exc:
            raise VerifierUnavailable(f"{type(exc).__name__}: {exc}") from None
        return parse_jwks(bytes(body))

    def _lookup(self, kid: str | None, alg: str) -> PyJWK | None:
        keys = self._keys or {}
        if kid is None:
            # Without a key id only an unambiguous set will do.
            if len(keys) != 1:
                return None
            kid = next(iter(keys))
        jwk = keys.get(kid)
        if jwk is None or jwk.get("alg", alg) != alg:
            return None
        if (kid, alg) not in self._built:
            self._built[(kid, alg)] = _build(jwk, alg)
        return self._built[(kid, alg)]


def parse_jwks(body: bytes) -> dict[str, dict[str, Any]]:
    """The signing keys of a JWKS document by key id (keys without ``kid`` under ``""``).

    Symmetric keys (``kty: oct``) and keys for another use are dropped: a resource server
    verifies signatures with public keys only.

    Raises:
        VerifierUnavailable: the body is not a JWKS.
    """
    try:
        document = json.loads(body)
    except ValueError:
        raise VerifierUnavailable("the JWKS is not JSON") from None
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise VerifierUnavailable("the JWKS has no 'keys' list")
    keys: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") in (None, "oct") or entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid", "")
        if isinstance(kid, str):
            keys[kid] = entry
    return keys


def _build(jwk: dict[str, Any], alg: str) -> PyJWK | None:
    try:
        return PyJWK(jwk, algorithm=alg)
    except (PyJWTError, KeyError, TypeError, ValueError) as exc:
        logger.warning("Unusable JWKS key %r for %s: %s", str(jwk.get("kid", ""))[:64], alg, exc)
        return None
