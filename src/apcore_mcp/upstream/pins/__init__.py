"""Pinned upstream tools: each mounted tool's definition held to the hash it had when first seen.

- ``canonical``: a tool's definition and its pin, SHA-256 of its RFC 8785 (JCS) canonical JSON;
- ``store``: the pins file (``<config stem>.pins.json``), read and written atomically;
- ``keeper``: ``PinKeeper``, which admits the tools that match their pins and holds the others;
- ``gate``: ``pins diff`` and ``pins approve``, the CI gate over the live upstreams.
"""
