"""Credentials kept out of logs: query values, bearer tokens and secret fields masked in every record.

What a client sends can reach a log line by many ways: uvicorn's access log writes each
request's path with its query string (a refused ``?access_token=`` included), the MCP SDK
logs whole messages at DEBUG (a ``requestState`` included), exception texts quote URLs.
``redact`` masks, in any text:

- the value of every query parameter in a URL or path (``?access_token=***&strict=true``),
  except the app's own harmless ones (``HARMLESS_QUERY_NAMES``);
- the credentials of ``Bearer``/``Basic`` authorization values;
- the value of a field whose name says it is secret (``"requestState": "***"``,
  ``api_key=***``, ``'password': '***'``).

``RedactedLogs()`` installs a ``LogRedaction`` filter on every logger and handler that exist
(on loggers, so that handlers added later get masked records; on handlers, so that records of
loggers created later are masked) and removes it on exit; the app's lifespan runs inside it, whichever way the
service is started. Values the upstream config took from the environment (``${VAR}``) are
masked by ``upstream.expand``'s own filter.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from urllib.parse import unquote

MASK = "***"
HARMLESS_QUERY_NAMES = frozenset({"strict", "embed_annotations", "tags", "prefix"})
"""Query parameters of the app's own routes whose values carry nothing secret."""
SENSITIVE_NAMES = (
    "requestState|request_state|access_token|refresh_token|id_token|client_secret|api[_-]?key|x-api-key"
    "|password|passwd|secret|token|authorization|cookie|set-cookie"
)

_QUERY = re.compile(r"\?([^\s\"'<>#`]+)")
_PARAM = re.compile(r"([^&;=]*)=([^&;]*)")
_CREDENTIALS = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9\-._~+/=:%]{8,}")
_FIELD = re.compile(
    rf"""(?ix)
    (?<![\w-])(?P<key>(?:\\?["'])?(?:{SENSITIVE_NAMES})(?:\\?["'])?)
    (?P<sep>\s*[:=]\s*)
    (?P<value>\\"(?:[^"\\]|\\[^"])*\\"|b?"(?:[^"\\]|\\.)*"|b?'(?:[^'\\]|\\.)*'|[^\s,;&)}}\]"'\\]+)
    """
)


def redact(text: str) -> str:
    """``text`` with query values, bearer credentials and secret fields masked (idempotent)."""
    if "?" in text:
        text = _QUERY.sub(_redact_query, text)
    text = _CREDENTIALS.sub(lambda match: f"{match.group(1)}{match.group(2)}{MASK}", text)
    return _FIELD.sub(_redact_field, text)


def _redact_query(match: re.Match[str]) -> str:
    return "?" + _PARAM.sub(_redact_param, match.group(1))


def _redact_param(match: re.Match[str]) -> str:
    name, value = match.group(1), match.group(2)
    if not value or unquote(name).lower() in HARMLESS_QUERY_NAMES:
        return match.group(0)
    return f"{name}={MASK}"


def _redact_field(match: re.Match[str]) -> str:
    value = match.group("value")
    prefix = "b" if value.startswith(("b'", 'b"')) else ""  # a bytes literal
    value = value[len(prefix) :]
    quote = next((mark for mark in ('\\"', '"', "'") if value.startswith(mark)), "")
    return f"{match.group('key')}{match.group('sep')}{prefix}{quote}{MASK}{quote}"


class LogRedaction(logging.Filter):
    """Masks secrets (``redact``) in a record's message, arguments, traceback and stack; never drops one.

    Arguments are masked one by one when that is enough, so a formatter that reads them
    (uvicorn's access log formatter unpacks five) still gets them; otherwise the message is
    rendered, masked, and takes their place.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        # A record meets a filter on its logger and one on each handler (two of each while the CLI's
        # and the lifespan's ``RedactedLogs`` are both entered): mask it once, as the scan is costly.
        if getattr(record, _MASKED, False):
            return True
        _redact_message(record)
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact(record.exc_text or _FORMATTER.formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        setattr(record, _MASKED, True)
        return True


_FORMATTER = logging.Formatter()
_MASKED = "apcore_mcp_masked"
"""The attribute marking a record already masked (a ~1 MB DEBUG dump takes ~90 ms a pass)."""


def _redact_message(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except (TypeError, ValueError):  # a malformed call: logging reports it, with what we leave
        record.msg, record.args = redact(str(record.msg)), None
        return
    if redact(message) == message:
        return
    args = _redacted_args(record.args)
    if args is not None:
        original = record.args
        record.args = args
        try:
            rendered = record.getMessage()
            if redact(rendered) == rendered:
                return
        except (TypeError, ValueError):
            pass
        record.args = original
    record.msg, record.args = redact(message), None


def _redacted_args(args: object) -> tuple[object, ...] | dict[str, object] | None:
    if isinstance(args, tuple):
        return tuple(redact(arg) if isinstance(arg, str) else arg for arg in args)
    if isinstance(args, Mapping):
        return {key: redact(value) if isinstance(value, str) else value for key, value in args.items()}
    return None


class RedactedLogs:
    """A ``LogRedaction`` on every existing logger and handler (and ``logging.lastResort``) while entered.

    A context manager, plain or async (the app's lifespan enters it with the rest of its resources).
    """

    def __init__(self) -> None:
        self.filter = LogRedaction()
        self._targets: list[logging.Filterer] = []

    def __enter__(self) -> LogRedaction:
        loggers = [logging.getLogger(), *_existing_loggers()]
        handlers = {id(handler): handler for logger in loggers for handler in logger.handlers}
        if logging.lastResort is not None:
            handlers[id(logging.lastResort)] = logging.lastResort
        self._targets = [*loggers, *handlers.values()]
        for target in self._targets:
            target.addFilter(self.filter)
        return self.filter

    def __exit__(self, *exc_info: object) -> None:
        for target in self._targets:
            target.removeFilter(self.filter)
        self._targets = []

    async def __aenter__(self) -> LogRedaction:
        return self.__enter__()

    async def __aexit__(self, *exc_info: object) -> None:
        self.__exit__(*exc_info)


def _existing_loggers() -> list[logging.Logger]:
    manager = logging.Logger.manager
    return [logger for logger in list(manager.loggerDict.values()) if isinstance(logger, logging.Logger)]
