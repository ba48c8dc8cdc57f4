"""``${VAR}`` / ``${VAR:-default}`` expansion in parsed config values, and redaction of what it produced.

Expansion runs on values after JSON parsing, never on the raw file text, so a quote or a
backslash in a secret cannot change the document's structure. ``$VAR`` without braces is
left alone (as Claude Code does). Every value taken from the environment is remembered by a
``Redactor``, which replaces it with ``***`` in any text about to be logged or shown.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
MASK = "***"
MIN_SECRET_LENGTH = 4
"""Values shorter than this are not masked: replacing every ``1`` in a log line protects nothing."""


@dataclass
class Expansion:
    """The result of expanding one value: the text, the variables it missed and the secrets it took in."""

    text: str
    missing: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)


def expand(value: str, environ: Mapping[str, str]) -> Expansion:
    """Replace each ``${VAR}`` by its value and each ``${VAR:-default}`` by its value or the default.

    As in the shell, ``:-`` also applies when the variable is set but empty. A missing
    variable without a default is listed in ``missing`` and left as written.
    """
    result = Expansion(text="")

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found:
            result.secrets.append(found)
            return found
        if default is not None:
            return default
        if found is not None:
            return found  # set but empty, and no default: the empty value is what was asked for
        result.missing.append(name)
        return match.group(0)

    result.text = PLACEHOLDER.sub(substitute, value)
    return result


class Redactor:
    """Masks every secret it was told about; shared by the config, the pool and the log filter."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: tuple[str, ...] = ()
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        with self._lock:
            known = set(self._secrets) | {value for value in secrets if len(value) >= MIN_SECRET_LENGTH}
            # Longest first: a secret containing another is masked whole.
            self._secrets = tuple(sorted(known, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self._secrets)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values masked (to merge into another redactor; never to log)."""
        return self._secrets

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in a record's rendered message (and drops its args)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.redactor:
            return True
        message = record.getMessage()
        cleaned = self.redactor.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            text = str(record.exc_info[1])
            if self.redactor.redact(text) != text:
                # The traceback would print the secret; keep the fact, drop the text.
                record.msg = f"{record.msg} ({type(record.exc_info[1]).__name__}, details redacted)"
                record.exc_info = None
                record.exc_text = None
        return True


# Loggers that can see upstream URLs, headers or messages: ours, the SDK client's, its HTTP stack.
WATCHED_LOGGER_PREFIXES = ("apcore_mcp", "mcp", "httpx", "httpcore", "httpx2", "httpcore2", "uvicorn", "apcore")


def install_filter(redactor: Redactor) -> RedactingFilter:
    """Attach one ``RedactingFilter`` to every existing logger under ``WATCHED_LOGGER_PREFIXES``.

    A logger's filters only see records created on that very logger, so the filter is attached
    to each one by name; loggers are module-level and exist once their module is imported.
    """
    flt = RedactingFilter(redactor)
    for name in _watched_names():
        logging.getLogger(name).addFilter(flt)
    return flt


def remove_filter(flt: RedactingFilter) -> None:
    for name in _watched_names():
        logging.getLogger(name).removeFilter(flt)


def _watched_names() -> list[str]:
    names = [name for name in logging.root.manager.loggerDict if name.split(".")[0] in WATCHED_LOGGER_PREFIXES]
    return sorted({*names, *WATCHED_LOGGER_PREFIXES})
