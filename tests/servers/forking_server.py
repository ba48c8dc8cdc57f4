"""Starts a helper child in its own process group, records its PID, then becomes the scripted server.

``forking_server.py PID_FILE SCRIPT ARGS...``: a server that leaves a process behind unless its
whole group is stopped (the harness must stop the group, not just the leader).
"""

import os
import subprocess
import sys


def main(pid_file: str, script: str, *args: str) -> None:
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(pid_file, "w") as out:
        out.write(str(helper.pid))
    os.execv(sys.executable, [sys.executable, "-m", "apcore_mcp.testing.scripted", script, *args])


if __name__ == "__main__":  # never on import: module discovery may import every file it finds
    main(*sys.argv[1:])
