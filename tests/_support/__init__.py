"""What the project's tests share: modules, registries, clients, processes, servers.

Imported as ``tests._support.<module>`` (the repository root is on ``sys.path`` through pytest's
``pythonpath``; scripts under ``tests/`` run as ``python -m tests.<script>`` from the root).
"""
