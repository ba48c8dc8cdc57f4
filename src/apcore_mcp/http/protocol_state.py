"""Keys of the lifespan state the app shares with the server's HTTP protocol.

The app's lifespan yields them (``http.app``); ``run.protocol.TimedH11Protocol`` reads them
from the state uvicorn hands its protocols, so the deadline and the size limit on request
headers follow the app's settings and refusals count in its metrics.
"""

HEADER_TIMEOUT_STATE = "apcore_mcp.header_timeout"
"""Lifespan-state key: the seconds a client gets to send its request headers."""
MAX_HEADER_BYTES_STATE = "apcore_mcp.max_header_bytes"
"""Lifespan-state key: the largest request head accepted, in bytes."""
REJECT_STATE = "apcore_mcp.reject"
"""Lifespan-state key: ``reject(reason)``, counting a refused request in the app's metrics."""
