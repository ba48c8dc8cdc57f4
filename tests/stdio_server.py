"""Serve the test registry over stdio.

``python tests/stdio_server.py [--dynamic] [--prefix P] [--role-acl] [--stdio-identity ID] [--stdio-roles R]``:
``--role-acl`` serves the auth tests' registry (``demo.*`` needs the ``writer`` role); the identity
flags set the operator-configured identity stdio calls run as.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from apcore_mcp import serve

from support import make_executor


def value(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--role-acl" in args:
        from auth_support import role_executor

        executor = role_executor()
    else:
        executor = make_executor()
    roles = value(args, "--stdio-roles")
    serve(
        executor,
        transport="stdio",
        dynamic="--dynamic" in args,
        prefix=value(args, "--prefix"),
        stdio_identity=value(args, "--stdio-identity"),
        stdio_roles=tuple(roles.split(",")) if roles else (),
        log_level="WARNING",
    )
