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
service is started.

Values the upstream config took from the environment (``${VAR}``) are known only to it, and an
upstream can echo one back in anything a third-party library logs (``sse_starlette`` writes each
event it streams at DEBUG). ``mask_every_record`` applies such a filter where every record is
made (``logging.setLogRecordFactory``): whatever logger, level or handler, whoever added the
handler and when.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
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
        mask_message(record, redact)
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


def mask_message(record: logging.LogRecord, mask: Callable[[str], str]) -> None:
    """``record``'s message with ``mask`` applied: its arguments one by one when that is enough
    (a formatter may unpack them), else the rendered message in their place."""
    try:
        message = record.getMessage()
    except (TypeError, ValueError):  # a malformed call: logging reports it, with what we leave
        record.msg, record.args = mask(str(record.msg)), None
        return
    if mask(message) == message:
        return
    args = _masked_args(record.args, mask)
    if args is not None:
        original = record.args
        record.args = args
        try:
            rendered = record.getMessage()
            if mask(rendered) == rendered:
                return
        except (TypeError, ValueError):
            pass
        record.args = original
    record.msg, record.args = mask(message), None


def _masked_args(args: object, mask: Callable[[str], str]) -> tuple[object, ...] | dict[str, object] | None:
    if isinstance(args, tuple):
        return tuple(mask(arg) if isinstance(arg, str) else arg for arg in args)
    if isinstance(args, Mapping):
        return {key: mask(value) if isinstance(value, str) else value for key, value in args.items()}
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


# -- at the making of every record -----------------------------------------------------------------


class _RecordMasks:
    """The filters every new record goes through, in a record factory wrapped around the one before.

    Filters on loggers see only records made on that very logger, and filters on handlers only
    the handlers that existed when they were attached; the record factory sees every record, and
    only those a logger is enabled for. With no filter it only calls the factory it wraps.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._filters: tuple[logging.Filter, ...] = ()
        self._wrapped: Callable[..., logging.LogRecord] | None = None

    def add(self, flt: logging.Filter) -> None:
        with self._lock:
            if self._wrapped is None:
                self._wrapped = logging.getLogRecordFactory()
                logging.setLogRecordFactory(self._make)
            self._filters = (*self._filters, flt)

    def remove(self, flt: logging.Filter) -> None:
        with self._lock:
            self._filters = tuple(known for known in self._filters if known is not flt)
            # Unwrapped only if no one wrapped ours since; otherwise it stays, passing records through.
            if not self._filters and self._wrapped is not None and logging.getLogRecordFactory() == self._make:
                logging.setLogRecordFactory(self._wrapped)
                self._wrapped = None

    def _make(self, *args: object, **kwargs: object) -> logging.LogRecord:
        wrapped: Callable[..., logging.LogRecord] = self._wrapped or logging.LogRecord
        record = wrapped(*args, **kwargs)
        for flt in self._filters:
            try:
                flt.filter(record)
            except Exception:  # noqa: BLE001 - an edge: a message that cannot be rendered cannot be checked
                # Withheld rather than raised into the logging call (logging itself would print its arguments).
                record.msg, record.args = "(a log message that could not be rendered, withheld)", None
        return record


_RECORD_MASKS = _RecordMasks()
"""Process-wide, as the record factory it installs is."""


def mask_every_record(flt: logging.Filter) -> None:
    """Apply ``flt`` to every log record made from now on, until ``stop_masking(flt)``.

    ``flt`` must only change a record (its return value is not a verdict: nothing is dropped).
    """
    _RECORD_MASKS.add(flt)


def stop_masking(flt: logging.Filter) -> None:
    _RECORD_MASKS.remove(flt)
