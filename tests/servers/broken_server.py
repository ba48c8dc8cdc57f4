"""A server that never becomes ready, for the readiness tests: ``broken_server.py exit|hang MARKER``.

``exit``: writes MARKER to stderr and exits with code 3. ``hang``: writes MARKER to stderr,
then sleeps (bounded) without ever answering.
"""

import sys
import time


def main(mode: str, marker: str) -> None:
    print(f"{marker}: starting up", file=sys.stderr, flush=True)
    if mode == "exit":
        print(f"{marker}: cannot open the database", file=sys.stderr, flush=True)
        sys.exit(3)
    time.sleep(120)


if __name__ == "__main__":  # never on import: module discovery may import every file it finds
    main(sys.argv[1], sys.argv[2])
