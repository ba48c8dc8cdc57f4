"""The checks of a url entry's ``auth`` object (token exchange, RFC 8693): each problem names its place.

An ``auth`` entry makes the bridge call the upstream as each caller: it never sends the
caller's token, it exchanges it at ``tokenEndpoint`` for one whose audience is the upstream.
So it needs a connection per caller (``sharing`` ``per-principal`` by default; ``shared``
would put one caller's token under every caller's calls and is refused) and a url server
(a stdio process has no request to carry a bearer).
"""

from __future__ import annotations

from typing import Any

from apcore_mcp.upstream.specs import ACCESS_TOKEN_TYPE, Problem, TokenExchangeSpec

AUTH_KEYS = frozenset(
    {"tokenEndpoint", "audience", "resource", "scope", "clientId", "clientSecret"}
    | {"subjectTokenType", "requestedTokenType"}
)
_URLS = ("tokenEndpoint", "audience", "resource")
_SCHEMES = ("http://", "https://", "${")
"""What a URL field may start with (an audience may be any string the authorization server knows)."""
_TEXTS = ("scope", "clientId", "clientSecret", "subjectTokenType", "requestedTokenType")


def check_token_exchange(raw: dict[str, Any], where: str, problems: list[Problem]) -> TokenExchangeSpec | None:
    """The entry's ``auth`` as a spec (``None`` without one, or with problems, which are added)."""
    if "auth" not in raw:
        return None
    before = len(problems)
    if "command" in raw or "openapi" in raw:
        problems.append(Problem(f"{where}.auth", "only for url servers (a stdio server or an API has no bearer)"))
    if raw.get("sharing") == "shared":
        problems.append(
            Problem(
                f"{where}.sharing",
                '"shared" cannot go with "auth": one connection would carry one caller\'s token for every caller '
                '(leave it out: "auth" means per-principal)',
            )
        )
    body = raw["auth"]
    if not isinstance(body, dict):
        problems.append(Problem(f"{where}.auth", "must be an object with at least tokenEndpoint"))
        return None
    for key in sorted(set(body) - AUTH_KEYS):
        problems.append(Problem(f"{where}.auth.{key}", "unknown field"))
    values: dict[str, str | None] = {}
    for key in (*_URLS, *_TEXTS):
        value = body.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            problems.append(Problem(f"{where}.auth.{key}", "must be a non-empty string"))
            value = None
        elif key in _URLS and key != "audience" and value is not None and not value.startswith(_SCHEMES):
            problems.append(Problem(f"{where}.auth.{key}", "must start with http:// or https://"))
        values[key] = value
    if values["tokenEndpoint"] is None and "tokenEndpoint" not in body:
        problems.append(Problem(f"{where}.auth.tokenEndpoint", "is required: the authorization server's token URL"))
    if (values["clientId"] is None) != (values["clientSecret"] is None):
        problems.append(Problem(f"{where}.auth", "clientId and clientSecret go together (HTTP Basic client auth)"))
    if len(problems) > before or values["tokenEndpoint"] is None:
        return None
    return TokenExchangeSpec(
        token_endpoint=values["tokenEndpoint"],
        audience=values["audience"],
        resource=values["resource"],
        scope=values["scope"],
        client_id=values["clientId"],
        client_secret=values["clientSecret"],
        subject_token_type=values["subjectTokenType"] or ACCESS_TOKEN_TYPE,
        requested_token_type=values["requestedTokenType"],
    )
