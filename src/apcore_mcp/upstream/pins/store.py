"""The pins file: per server, per tool name, the pinned hash and the definition it was taken from.

It is meant to be committed beside ``mcp.json``, so it is written human-readable and sorted
(a change to one pin is a one-entry diff), atomically (a temporary file beside it, then
``os.replace``: a reader sees the old file or the new one, never half of one), mode 0644. The
definition is kept with the hash so ``pins diff`` can show what changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
MAX_PINS_BYTES = 16 * 1024 * 1024
"""A pins file larger than this is refused (it holds definitions, not data)."""
SUFFIX = ".pins.json"


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Hold the pins file's lock (``<file>.lock`` beside it) for a read-modify-write.

    Approvals may come from several processes at once (the workers' explorer, ``pins approve``):
    each reads the file, changes its entries and replaces it, so without the lock one would drop
    another's. Where ``fcntl`` is missing (Windows) the write is still atomic, only not serialised.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on the platforms we test
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


class PinsFileError(ValueError):
    """The pins file exists but cannot be used; the message names the file and the reason."""


@dataclass(frozen=True)
class Pin:
    sha256: str
    definition: dict[str, Any]


Pins = dict[str, dict[str, Pin]]
"""Server name -> tool name -> pin. A server present with no tools is pinned as having none."""
SKILLS_KEY = "skills"
"""The file's map of relayed skills' pins, server -> skill -> pin, beside ``servers`` (a file
without it, written before skills were pinned, loads as having no skill pinned)."""


def default_pins_path(mcp_config: str | None) -> Path | None:
    """``<config stem>.pins.json`` beside ``mcp_config`` (``None`` without a config file)."""
    if mcp_config is None:
        return None
    config = Path(mcp_config)
    return config.with_name(config.stem + SUFFIX)


def read_pins(path: Path) -> Pins:
    """The pins in ``path``; none when it does not exist.

    Raises:
        PinsFileError: unreadable, too large, not JSON, or not the expected shape.
    """
    return _parse(_raw(path), path)


def _raw(path: Path) -> Any:
    """The file's JSON, ``{"version": 1, "servers": {}}`` when it does not exist."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_PINS_BYTES + 1)
    except FileNotFoundError:
        return {"version": FORMAT_VERSION, "servers": {}}
    except OSError as exc:
        raise PinsFileError(f"{path}: cannot be read ({exc.strerror})") from None
    if len(data) > MAX_PINS_BYTES:
        raise PinsFileError(f"{path}: larger than {MAX_PINS_BYTES} bytes")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise PinsFileError(f"{path}: not JSON ({exc})") from None


def read_skill_pins(path: Path) -> Pins:
    """The relayed skills' pins in ``path`` (server -> skill name -> pin); none when absent.

    Raises:
        PinsFileError: as ``read_pins``, or its ``skills`` map is not the expected shape.
    """
    raw = _raw(path)
    _parse(raw, path)  # the same checks of the whole file
    skills = raw.get(SKILLS_KEY, {})
    if not isinstance(skills, dict):
        raise PinsFileError(f"{path}: {SKILLS_KEY} must be an object of servers")
    return _parse({"version": FORMAT_VERSION, "servers": skills}, path)


def _parse(raw: Any, path: Path) -> Pins:
    servers = raw.get("servers") if isinstance(raw, dict) else None
    if not isinstance(servers, dict) or raw.get("version") != FORMAT_VERSION:
        raise PinsFileError(f'{path}: expected {{"version": {FORMAT_VERSION}, "servers": {{...}}}}')
    pins: Pins = {}
    for server, tools in servers.items():
        if not isinstance(tools, dict):
            raise PinsFileError(f"{path}: servers.{server} must be an object of tools")
        pins[server] = {}
        for name, entry in tools.items():
            sha = entry.get("sha256") if isinstance(entry, dict) else None
            pinned = entry.get("definition") if isinstance(entry, dict) else None
            if not isinstance(sha, str) or not isinstance(pinned, dict):
                raise PinsFileError(f"{path}: servers.{server}.{name} needs a sha256 and a definition")
            pins[server][name] = Pin(sha, pinned)
    return pins


def render_pins(pins: Mapping[str, Mapping[str, Pin]], skills: Mapping[str, Mapping[str, Pin]] | None = None) -> str:
    """The file's text: sorted, indented, one trailing newline (a ``skills`` map only when one is pinned)."""
    document: dict[str, Any] = {"version": FORMAT_VERSION, "servers": _plain(pins)}
    if skills:
        document[SKILLS_KEY] = _plain(skills)
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _plain(pins: Mapping[str, Mapping[str, Pin]]) -> dict[str, Any]:
    return {
        server: {name: {"sha256": pin.sha256, "definition": pin.definition} for name, pin in named.items()}
        for server, named in pins.items()
    }


def write_pins(
    path: Path, pins: Mapping[str, Mapping[str, Pin]], skills: Mapping[str, Mapping[str, Pin]] | None = None
) -> None:
    """Replace ``path`` with ``pins`` atomically, mode 0644; ``skills`` ``None`` keeps the skills' pins
    the file has (a writer of tools' pins never drops them).

    Raises:
        PinsFileError: ``skills`` is ``None`` and the file's skills map cannot be read.
    """
    if skills is None:
        skills = read_skill_pins(path)
    text = render_pins(pins, skills).encode()
    fd, temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o644)  # committed, read by every worker: not a secret
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
