"""Benchmarks of apcore-mcp against a bare MCP SDK server and the reference apcore-mcp 0.23.3.

Run ``python -m bench`` (``--quick``, ``--only WORKLOAD``); see ``bench/run.py``.
"""
