"""Serve a slow tool and an interactive one over stdio: ``python -m tests.servers.eof_stdio [shutdown_timeout]``.

``eof.sleep`` (``seconds``, ``marker``: the interactive tests' ``Sleeper``: writes the marker when it
finishes, ``<marker>.cancelled`` when cancelled) and ``eof.ask`` (elicits a name) for the tests of a
client that closes stdin right after its requests.
"""

import sys

from apcore import Registry

from apcore_mcp import serve

from tests._support.interactive import Ask, Sleeper

if __name__ == "__main__":
    registry = Registry()
    registry.register("eof.sleep", Sleeper())
    registry.register("eof.ask", Ask())
    timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    serve(registry, transport="stdio", shutdown_timeout=timeout, log_level="INFO")
