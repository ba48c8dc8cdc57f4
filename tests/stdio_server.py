"""Serve the test registry over stdio: ``python tests/stdio_server.py [--dynamic] [--prefix P]``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from apcore_mcp import serve

from support import make_executor

if __name__ == "__main__":
    args = sys.argv[1:]
    prefix = args[args.index("--prefix") + 1] if "--prefix" in args else None
    serve(make_executor(), transport="stdio", dynamic="--dynamic" in args, prefix=prefix, log_level="WARNING")
