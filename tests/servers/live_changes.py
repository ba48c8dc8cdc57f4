"""A live-changing registry for the nginx deployment tests: ``python -m tests.servers.live_changes PORT``.

``util.echo`` and ``util.register`` (the tests' shared Echo and Registering: ``{"text": "add"}``
registers ``demo.added``, ``{"text": "remove"}`` removes it), served by ``apcore_mcp.create_app``
under uvicorn, trusting proxy headers from 127.0.0.1 and answering ``Host: mcp.example.test``.
"""

import sys

import uvicorn
from apcore import Registry

import apcore_mcp

from tests._support.modules import Echo, Registering


def main(port: int) -> None:
    registry = Registry()
    registry.register("util.echo", Echo())
    registry.register("util.register", Registering(registry))
    settings = apcore_mcp.Settings(dynamic=True, allowed_hosts=("mcp.example.test",))
    app = apcore_mcp.create_app(registry, settings)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        proxy_headers=True,
        forwarded_allow_ips="127.0.0.1",
        timeout_graceful_shutdown=5,
        access_log=False,
    )


if __name__ == "__main__":  # never on import: module discovery may import every file it finds
    main(int(sys.argv[1]))
