"""``${VAR}`` / ``${VAR:-default}`` expansion in parsed config values, and redaction of what it produced.

Expansion runs on values after JSON parsing, never on the raw file text, so a quote or a
backslash in a secret cannot change the document's structure. ``$VAR`` without braces is
left alone (as Claude Code does). Every value taken from the environment is remembered by a
``Redactor``, which replaces it with ``***`` in any text about to be logged or shown, however the
text spells it (as is, escaped in JSON, inside a ``repr``: an upstream's answer reaches the logs
in all three).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from apcore_mcp._redaction import mask_every_record, mask_message, stop_masking

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
        self._pattern: re.Pattern[str] | None = None
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        with self._lock:
            known = set(self._secrets) | {value for value in secrets if len(value) >= MIN_SECRET_LENGTH}
            self._secrets = tuple(sorted(known))
            forms = {form for secret in known for form in spellings(secret)}
            # One pass for any number of secrets; longest first, so a secret containing another is masked whole.
            ordered = sorted(forms, key=len, reverse=True)
            self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values masked (to merge into another redactor; never to log)."""
        return self._secrets

    def redact(self, text: str) -> str:
        pattern = self._pattern
        return pattern.sub(MASK, text) if pattern is not None else text


def spellings(secret: str) -> set[str]:
    """The ways a log line may spell ``secret``: as is, escaped in JSON, inside the ``repr`` of a str or bytes."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    return forms | {repr(form)[1:-1] for form in forms} | {repr(form.encode())[2:-1] for form in forms}


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in a record's message (arguments kept when masking them is enough).

    A traceback whose text holds a secret is left out, the record saying so: its exception type stays.
    """

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.redactor:
            return True
        mask_message(record, self.redactor.redact)
        if record.exc_info and record.exc_info[1] is not None:
            text = record.exc_text or _FORMATTER.formatException(record.exc_info)
            if self.redactor.redact(text) != text:
                record.msg = f"{record.msg} ({type(record.exc_info[1]).__name__}, details redacted)"
                record.exc_info = None
                record.exc_text = None
        if record.stack_info:
            record.stack_info = self.redactor.redact(record.stack_info)
        return True


_FORMATTER = logging.Formatter()


def install_filter(redactor: Redactor) -> RedactingFilter:
    """Mask ``redactor``'s secrets in every log record made from now on, of any logger at any level.

    Applied where records are made (``redaction.mask_every_record``), not per logger: an upstream
    can echo a secret into whatever a third-party library logs. Undone by ``remove_filter``.
    """
    flt = RedactingFilter(redactor)
    mask_every_record(flt)
    return flt


def remove_filter(flt: RedactingFilter) -> None:
    stop_masking(flt)
