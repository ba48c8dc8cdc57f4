"""Serve the test registry over stdio.

``python -m tests.stdio_server [--dynamic] [--prefix P] [--role-acl] [--stdio-identity ID] [--stdio-roles R]``:
``--role-acl`` serves the auth tests' registry (``demo.*`` needs the ``writer`` role); the identity
flags set the operator-configured identity stdio calls run as.
"""

import sys

from apcore_mcp import serve

from tests._support.modules import make_executor


def value(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--role-acl" in args:
        from tests._support.auth import role_executor

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
