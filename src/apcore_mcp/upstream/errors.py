"""What can go wrong with an upstream, as apcore ``ModuleError``s (so middleware and metrics see failures).

Messages name the server and what happened, never a URL, header or variable value: they reach
the log and the server-side error of a call, and the MCP edge shows the code only (``Module
error: UPSTREAM_...``). A stdio process that exited is described there by its command line,
exit code and last stderr lines, redacted (``upstream.exits``).

Each error also has a ``public`` form, what ``/ready`` shows (it is open without
authentication, for probes): the server and what happened in our own words, the exit code,
never the command, the stderr or a dependency's exception text. It is the message itself
unless the raiser (``upstream.connection``, where the two are told apart) gives a shorter one.
"""

from __future__ import annotations

from apcore.errors import ModuleError


class UpstreamError(ModuleError):  # type: ignore[misc]  # apcore ships no type information
    """Base of the upstream failures; ``server`` names the upstream."""

    code_name = "UPSTREAM_ERROR"

    def __init__(
        self, server: str, message: str, *, retryable: bool = False, public: str | None = None, **details: object
    ) -> None:
        super().__init__(
            code=self.code_name, message=message, details={"server": server, **details}, retryable=retryable
        )
        self.server = server
        self.public = message if public is None else public
        """What anyone may be shown (``/ready``): see the module doc."""


class UpstreamUnavailable(UpstreamError):
    """The server could not be started or reached, or is backing off after failures."""

    code_name = "UPSTREAM_UNAVAILABLE"

    def __init__(self, server: str, message: str, *, public: str | None = None, **details: object) -> None:
        super().__init__(server, message, retryable=True, public=public, **details)


class UpstreamTimeout(UpstreamError):
    """The server did not answer within its ``timeout``."""

    code_name = "UPSTREAM_TIMEOUT"

    def __init__(self, server: str, message: str, *, public: str | None = None, **details: object) -> None:
        super().__init__(server, message, retryable=True, public=public, **details)


class UpstreamsDisabled(UpstreamError):
    """A toolset needs upstream servers while upstreams are switched off (``no_upstreams``)."""

    code_name = "UPSTREAMS_DISABLED"


class ConnectionLost(UpstreamUnavailable):
    """The connection ended under a call (the process exited, the stream closed)."""


class SessionLost(UpstreamUnavailable):
    """The server no longer knows our session (it restarted): initialise again and retry once."""


class UpstreamMessageTooLarge(UpstreamError):
    """The server sent a message larger than ``upstream_max_message_bytes``.

    It was refused unread; the calls waiting on that connection fail with this error and the
    server is restarted on next use. Not retryable: the same call would likely do it again.
    """

    code_name = "UPSTREAM_MESSAGE_TOO_LARGE"


class UpstreamBadReply(UpstreamError):
    """The server answered with something that is not a valid reply: malformed, or under an id never asked."""

    code_name = "UPSTREAM_BAD_REPLY"


class UpstreamCredentialsError(UpstreamError):
    """A call to an upstream that acts as the caller (``auth``: token exchange) got no credentials for it.

    Its message is for that caller alone (``UpstreamSource`` answers it as a tool error): the
    server, what went wrong and the authorization server's error code, never a token.
    """

    code_name = "UPSTREAM_CREDENTIALS"


class UpstreamCredentialsRefused(UpstreamCredentialsError):
    """The authorization server refused the exchange (``invalid_grant``...), or the call carried no token."""

    code_name = "UPSTREAM_CREDENTIALS_REFUSED"


class UpstreamCredentialsUnavailable(UpstreamCredentialsError):
    """The authorization server did not answer the exchange usably (down, slow, 5xx, a bad reply)."""

    code_name = "UPSTREAM_CREDENTIALS_UNAVAILABLE"

    def __init__(self, server: str, message: str) -> None:
        super().__init__(server, message, retryable=True)
