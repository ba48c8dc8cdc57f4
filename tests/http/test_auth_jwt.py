"""Token verification: locally signed JWTs against a JWKS served through respx (and once over loopback).

The verifier is driven directly here; ``test_auth_http.py`` checks what a client receives.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import httpx
import jwt
import pytest
import respx

from apcore_mcp.calls.principal import parse_api_key
from apcore_mcp.http.jwks import JwksCache
from apcore_mcp.http.tokens import (
    ApiKeyVerifier,
    JwtVerifier,
    StaticKey,
    TokenRejected,
    VerifierUnavailable,
    load_static_key,
)

from tests._support.auth import (
    ALICE_KEY,
    BOB_KEY,
    ISSUER,
    JWKS_URL,
    Issuer,
    api_key_entry,
    ec_key,
    mock_jwks,
    rsa_key,
    serve_jwks,
)

AUD = "https://mcp.example.test/sub/mcp"


class Clock:
    """A monotonic clock the test moves by hand (no sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def jwks_verifier(clock: Clock | None = None, *, ttl: float = 600, **options: Any) -> tuple[JwtVerifier, JwksCache]:
    cache = JwksCache(JWKS_URL, ttl=ttl, clock=clock or Clock())
    return JwtVerifier(cache, issuer=ISSUER, algorithms=["RS256", "ES256"], **options), cache


async def test_rs256_and_es256_tokens_become_principals_with_one_fetch() -> None:
    issuer = Issuer()
    verifier, cache = jwks_verifier()
    with mock_jwks(issuer) as route:
        for key in issuer.keys:
            token = issuer.token(AUD, key=key, scope="tools:call files:read", roles=["writer"], client_id="app-1")
            principal = await verifier.verify(token, [AUD])
            assert principal.identity.id == "alice"
            assert principal.identity.type == "user"
            assert principal.identity.roles == ("writer",)
            assert principal.scopes == {"tools:call", "files:read"}
            assert (principal.client_id, principal.issuer, principal.audience) == ("app-1", ISSUER, AUD)
    assert route.call_count == 1 and cache.fetches == 1  # the JWKS is cached across tokens and key types


def _unsigned(payload: dict[str, Any], header: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part(payload)}."


def _claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISSUER, "sub": "alice", "aud": AUD, "iat": now, "exp": now + 300, **changes}


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda i: i.token(AUD, lifetime=-120), "The access token expired"),
        (lambda i: i.token(AUD, nbf=int(time.time()) + 600), "The access token is not valid yet"),
        (lambda i: i.token("https://other.example.test/mcp"), "The access token was not issued for this resource"),
        (lambda i: i.token(AUD + "/"), "The access token was not issued for this resource"),
        (lambda i: i.token(AUD, iss="https://evil.example.test"), "The access token's issuer is not accepted"),
        (lambda i: i.token(AUD, sub=""), "The access token is not usable: token has no usable 'sub' claim"),
        # Signed by another key under a known key id: the signature does not verify.
        (lambda i: i.token(AUD, key=type(rsa_key())("rsa-1", "RS256", rsa_key("other").private)), "The access token is invalid"),
        (lambda i: _unsigned(_claims(), {"alg": "none", "typ": "JWT", "kid": "rsa-1"}), "The access token's algorithm is not accepted"),
        (lambda i: "not-a-jwt", "The access token is malformed"),
        (lambda i: i.token(AUD, key=ec_key("ghost")), "The access token was signed with an unknown key"),
    ],
    ids=["expired", "not-yet-valid", "wrong-audience", "audience-not-exact", "wrong-issuer", "no-subject",
         "bad-signature", "alg-none", "malformed", "unknown-kid"],
)  # fmt: skip
async def test_bad_tokens_are_rejected_with_their_reason(make: Any, reason: str) -> None:
    issuer = Issuer()
    verifier, _ = jwks_verifier()
    with mock_jwks(issuer), pytest.raises(TokenRejected) as refused:
        await verifier.verify(make(issuer), [AUD])
    assert str(refused.value) == reason


async def test_hs256_signed_with_the_public_key_is_refused() -> None:
    # The algorithm-confusion attack: HMAC "signed" with the RSA public key the server trusts.
    issuer = Issuer()
    header = {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}
    unsigned = _unsigned(_claims(), header)[:-1]
    mac = hmac.new(issuer.keys[0].public_pem().encode(), unsigned.encode(), hashlib.sha256).digest()
    forged = unsigned + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    verifier, _ = jwks_verifier()
    with mock_jwks(issuer), pytest.raises(TokenRejected, match="algorithm is not accepted"):
        await verifier.verify(forged, [AUD])


async def test_missing_required_claims_are_refused() -> None:
    issuer = Issuer()
    key = issuer.keys[0]
    verifier, _ = jwks_verifier()
    for dropped in ("exp", "aud", "iss"):
        claims = {name: value for name, value in _claims().items() if name != dropped}
        token = jwt.encode(claims, key.private, algorithm=key.alg, headers={"kid": key.kid})
        with mock_jwks(issuer), pytest.raises(TokenRejected) as refused:
            await verifier.verify(token, [AUD])
        assert str(refused.value) == f"The access token has no {dropped!r} claim"


async def test_unknown_kid_refetches_once_for_key_rotation_and_is_rate_limited() -> None:
    issuer = Issuer(keys=[rsa_key("rsa-1")])
    clock = Clock()
    verifier, cache = jwks_verifier(clock)
    with mock_jwks(issuer) as route:
        assert (await verifier.verify(issuer.token(AUD), [AUD])).identity.id == "alice"
        assert route.call_count == 1

        # The issuer rotates: a new key signs, the old one is gone.
        issuer.keys = [rsa_key("rsa-2")]
        clock.now += 31
        rotated = issuer.token(AUD, sub="bob")
        assert (await verifier.verify(rotated, [AUD])).identity.id == "bob"
        assert route.call_count == 2

        # Made-up key ids right after: refused without asking the issuer again...
        ghost = issuer.token(AUD, key=rsa_key("ghost"))
        for _ in range(5):
            with pytest.raises(TokenRejected, match="unknown key"):
                await verifier.verify(ghost, [AUD])
        assert route.call_count == 2
        # ...until the minimum interval has passed: then one more fetch.
        clock.now += 31
        with pytest.raises(TokenRejected, match="unknown key"):
            await verifier.verify(ghost, [AUD])
        assert route.call_count == 3 == cache.fetches
        # The old key's tokens no longer verify once it left the set.
        with pytest.raises(TokenRejected, match="unknown key"):
            await verifier.verify(issuer.token(AUD, key=rsa_key("rsa-1")), [AUD])


async def test_jwks_is_fetched_again_after_its_ttl() -> None:
    issuer = Issuer()
    clock = Clock()
    verifier, _ = jwks_verifier(clock, ttl=60)
    with mock_jwks(issuer) as route:
        await verifier.verify(issuer.token(AUD), [AUD])
        clock.now += 59
        await verifier.verify(issuer.token(AUD), [AUD])
        assert route.call_count == 1
        clock.now += 2
        await verifier.verify(issuer.token(AUD), [AUD])
        assert route.call_count == 2


async def test_jwks_outage_is_503_without_keys_and_stale_keys_otherwise() -> None:
    issuer = Issuer()
    clock = Clock()
    verifier, _ = jwks_verifier(clock, ttl=60)
    with respx.mock(assert_all_called=False) as router:
        route = router.get(JWKS_URL).mock(return_value=httpx.Response(502))
        with pytest.raises(VerifierUnavailable):
            await verifier.verify(issuer.token(AUD), [AUD])
        with pytest.raises(VerifierUnavailable):  # and no second request to the failing issuer yet
            await verifier.verify(issuer.token(AUD), [AUD])
        assert route.call_count == 1
        clock.now += 31
        route.mock(return_value=httpx.Response(200, json=issuer.jwks()))
        assert (await verifier.verify(issuer.token(AUD), [AUD])).identity.id == "alice"
        route.mock(side_effect=httpx.ConnectError("issuer down"))
        clock.now += 61  # the TTL is over, the refresh fails: the keys held keep working
        assert (await verifier.verify(issuer.token(AUD), [AUD])).identity.id == "alice"
        assert route.call_count == 3


@pytest.mark.parametrize("body", [b"<html>", b'{"keys": "no"}', b"[]"])
async def test_a_body_that_is_not_a_jwks_is_an_outage(body: bytes) -> None:
    verifier, _ = jwks_verifier()
    with respx.mock() as router:
        router.get(JWKS_URL).mock(return_value=httpx.Response(200, content=body))
        with pytest.raises(VerifierUnavailable):
            await verifier.verify(Issuer().token(AUD), [AUD])


async def test_jwks_from_a_real_loopback_server() -> None:
    issuer = Issuer()
    with serve_jwks(issuer) as (url, requested):
        verifier = JwtVerifier(JwksCache(url, ttl=600), issuer=ISSUER, algorithms=["ES256", "RS256"])
        for key in issuer.keys:
            assert (await verifier.verify(issuer.token(AUD, key=key), [AUD])).identity.id == "alice"
    assert requested == ["/keys"]


async def test_static_pem_key_verifies_only_its_own_algorithm_family() -> None:
    issuer = Issuer()
    rsa, ec = issuer.keys
    key, algorithms = load_static_key(rsa.public_pem(), ["RS256", "ES256"])
    assert algorithms == ("RS256",)
    verifier = JwtVerifier(StaticKey(key), issuer=ISSUER, algorithms=algorithms)
    assert (await verifier.verify(issuer.token(AUD, key=rsa), [AUD])).identity.id == "alice"
    with pytest.raises(TokenRejected, match="algorithm is not accepted"):
        await verifier.verify(issuer.token(AUD, key=ec), [AUD])


def test_static_key_must_be_a_public_key_that_fits() -> None:
    from cryptography.hazmat.primitives import serialization

    private_pem = rsa_key().private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(ValueError, match="PEM public key"):
        load_static_key(private_pem.decode(), ["RS256"])
    with pytest.raises(ValueError, match="fits none"):
        load_static_key(ec_key().public_pem(), ["RS256", "ES384"])


async def test_hs256_static_secret() -> None:
    secret = "s" * 40
    verifier = JwtVerifier(StaticKey(secret.encode()), issuer=ISSUER, algorithms=["HS256"])
    token = jwt.encode(_claims(roles="reader writer"), secret, algorithm="HS256")
    principal = await verifier.verify(token, [AUD])
    assert principal.identity.roles == ("reader", "writer")
    with pytest.raises(TokenRejected, match="invalid"):
        await verifier.verify(jwt.encode(_claims(), "t" * 40, algorithm="HS256"), [AUD])


async def test_configured_claims_give_the_identity() -> None:
    issuer = Issuer()
    verifier, _ = jwks_verifier(id_claim="email", roles_claim="realm_access.roles")
    token = issuer.token(AUD, email="alice@example.test", realm_access={"roles": ["admin", 7]}, scp=["a", "b"])
    with mock_jwks(issuer):
        principal = await verifier.verify(token, [AUD])
    assert principal.identity.id == "alice@example.test"
    assert principal.identity.roles == ("admin",)
    assert principal.scopes == {"a", "b"}
    assert principal.client_id == "alice@example.test"


async def test_api_keys_right_and_wrong() -> None:
    keys = [parse_api_key(api_key_entry(ALICE_KEY, "alice", "writer admin", "tools:call"), "auth_api_keys")]
    keys.append(parse_api_key(api_key_entry(BOB_KEY, "bob"), "auth_api_keys"))
    verifier = ApiKeyVerifier(keys)
    alice = await verifier.verify(ALICE_KEY, [AUD])
    assert (alice.identity.id, alice.identity.type, alice.identity.roles) == ("alice", "service", ("writer", "admin"))
    assert alice.scopes == {"tools:call"}
    assert (await verifier.verify(BOB_KEY, [AUD])).identity.id == "bob"
    for wrong in (ALICE_KEY[:-1], ALICE_KEY + "x", "", hashlib.sha256(ALICE_KEY.encode()).hexdigest()):
        with pytest.raises(TokenRejected, match="API key is not valid"):
            await verifier.verify(wrong, [AUD])
