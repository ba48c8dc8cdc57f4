"""Long-running modules as MCP tasks: the record and its store interface (``records``), the
in-process store (``store``) and the runner that does the work (``runner``). The wire side is
``mcp/tasks.py``; the Redis store is ``replicas/tasks.py``.
"""
