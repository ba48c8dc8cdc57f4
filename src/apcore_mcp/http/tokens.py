"""Bearer token verification: JWTs (PyJWT) against a key source, and static API keys.

A verifier turns the token a request presented into a ``Principal`` or refuses it with
``TokenRejected`` (whose description is safe to send back). Neither the token nor any part
of it is kept: the principal carries identity, scopes and issuer only.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from jwt.algorithms import AllowedPublicKeys

from apcore_mcp.calls.principal import ApiKey, Principal, identity_from_claims, token_scopes
from apcore_mcp.settings.auth import MIN_HMAC_SECRET

logger = logging.getLogger(__name__)

LEEWAY_SECONDS = 30
"""Clock skew tolerated on ``exp``, ``nbf`` and ``iat``."""
REQUIRED_CLAIMS = ("exp", "iss", "aud")
_CURVES = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
_JWT_PUBLIC_KEYS = (rsa.RSAPublicKey, ec.EllipticCurvePublicKey, ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)

VerificationKey: TypeAlias = AllowedPublicKeys | jwt.PyJWK | bytes
"""What checks a JWT's signature: a public key, a key of a JWKS, or an HS secret."""


class TokenRejected(Exception):
    """The token is not acceptable; the message is a short reason that may be sent to the client."""


class VerifierUnavailable(Exception):
    """Tokens cannot be checked right now (the issuer's keys could not be fetched): answer 503."""


class Verifier(Protocol):
    """Turns a bearer token into a ``Principal`` for a resource accepting ``audiences``."""

    async def verify(self, token: str, audiences: Sequence[str]) -> Principal:
        """Raises ``TokenRejected`` or ``VerifierUnavailable``."""
        ...  # pragma: no cover - a Protocol


class KeySource(Protocol):
    """Where a JWT's verification key comes from: a JWKS, or one static key."""

    async def key(self, kid: str | None, alg: str) -> VerificationKey | None:
        """The key for this key id and algorithm, or ``None`` when there is none."""
        ...  # pragma: no cover - a Protocol


class StaticKey:
    """One configured key (a public key object or an HS secret), whatever the ``kid``."""

    def __init__(self, key: VerificationKey) -> None:
        self._key = key

    async def key(self, kid: str | None, alg: str) -> VerificationKey:
        return self._key


def load_static_key(text: str, algorithms: Sequence[str]) -> tuple[VerificationKey, tuple[str, ...]]:
    """The key object and the algorithms it can verify, from PEM text or an HS secret.

    An HS secret read from a file loses its final line break; the minimum length applies to it
    as to one given inline.

    Raises:
        ValueError: not a PEM public key (a private key is refused: it does not belong on a
            resource server), no configured algorithm fits the key, or an HS secret is too short.
    """
    if all(alg.startswith("HS") for alg in algorithms):
        secret = text.rstrip("\r\n")
        if len(secret) < MIN_HMAC_SECRET:
            raise ValueError(f"an HS secret must be at least {MIN_HMAC_SECRET} characters")
        return secret.encode(), tuple(algorithms)
    try:
        key = load_pem_public_key(text.strip().encode())
    except (ValueError, TypeError) as exc:
        raise ValueError("the static key must be a PEM public key (BEGIN PUBLIC KEY)") from exc
    usable = tuple(alg for alg in algorithms if key_fits(key, alg))
    if not usable or not isinstance(key, _JWT_PUBLIC_KEYS):  # a key that fits is one of these: for mypy
        raise ValueError(f"the static key fits none of the algorithms {', '.join(algorithms)}")
    return key, usable


def key_fits(key: object, alg: str) -> bool:
    """Whether a public key can verify ``alg`` (family, and curve for ECDSA)."""
    if alg[:2] in ("RS", "PS"):
        return isinstance(key, rsa.RSAPublicKey)
    if alg in _CURVES:
        return isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == _CURVES[alg]
    if alg == "EdDSA":
        return isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey)
    return False


class JwtVerifier:
    """Signed JWT access tokens: algorithm allow-list, signature, ``iss``, ``aud``, ``exp``/``nbf``.

    ``alg: none`` is never accepted (it is not in any allow-list), nor an algorithm the token
    claims but the key was not made for.
    """

    def __init__(
        self,
        keys: KeySource,
        *,
        issuer: str,
        algorithms: Sequence[str],
        id_claim: str = "sub",
        roles_claim: str = "roles",
        leeway: float = LEEWAY_SECONDS,
    ) -> None:
        self.keys = keys
        self.issuer = issuer
        self.algorithms = frozenset(algorithms)
        self.id_claim = id_claim
        self.roles_claim = roles_claim
        self.leeway = leeway

    async def verify(self, token: str, audiences: Sequence[str]) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("The access token is malformed") from None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise TokenRejected("The access token's algorithm is not accepted")
        if kid is not None and not isinstance(kid, str):
            raise TokenRejected("The access token is malformed")
        key = await self.keys.key(kid, alg)
        if key is None:
            raise TokenRejected("The access token was signed with an unknown key")
        claims = self._decode(token, key, alg, audiences)
        try:
            identity = identity_from_claims(claims, id_claim=self.id_claim, roles_claim=self.roles_claim)
        except ValueError as exc:
            raise TokenRejected(f"The access token is not usable: {exc}") from None
        return Principal(
            identity=identity,
            scopes=token_scopes(claims),
            client_id=_client_id(claims, identity.id),
            issuer=str(claims["iss"]),
            expires_at=int(claims["exp"]),
            audience=_matched(claims.get("aud"), audiences),
        )

    def _decode(self, token: str, key: VerificationKey, alg: str, audiences: Sequence[str]) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=list(audiences),
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": list(REQUIRED_CLAIMS)},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRejected("The access token expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRejected("The access token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise TokenRejected("The access token was not issued for this resource") from None
        except jwt.InvalidIssuerError:
            raise TokenRejected("The access token's issuer is not accepted") from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRejected(f"The access token has no {exc.claim!r} claim") from None
        except jwt.PyJWTError:
            # Bad signature, bad encoding, a key of the wrong kind: one answer for all of them.
            raise TokenRejected("The access token is invalid") from None


def _client_id(claims: Mapping[str, Any], subject: str) -> str:
    """RFC 9068 ``client_id``, else the OIDC ``azp``, else the subject itself."""
    for name in ("client_id", "azp"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return subject


def _matched(aud: object, audiences: Sequence[str]) -> str | None:
    presented = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    return next((value for value in audiences if value in presented), None)


class ApiKeyVerifier:
    """Static API keys, stored as SHA-256 digests and compared in constant time.

    Every stored digest is compared on every request (no early exit), so the time taken says
    nothing about which key, or how much of one, matched.
    """

    def __init__(self, keys: Sequence[ApiKey]) -> None:
        self.keys = tuple(keys)

    async def verify(self, token: str, audiences: Sequence[str]) -> Principal:
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        found: ApiKey | None = None
        for key in self.keys:
            if hmac.compare_digest(digest, key.digest) and found is None:
                found = key
        if found is None:
            raise TokenRejected("The API key is not valid")
        return found.principal


def hash_api_key(key: str) -> str:
    """The hex SHA-256 of an API key: what ``auth_api_keys`` entries start with."""
    return hashlib.sha256(key.encode()).hexdigest()
