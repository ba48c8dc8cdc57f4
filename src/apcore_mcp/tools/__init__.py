"""The tool model: what a server serves, read once from a registry.

One ``ToolRecord`` per module (``records``), its cleaned schemas (``schema``), behaviour hints
(``behaviour``), views (``views``), resources and prompts, the catalog of them all (``catalog``),
loud discovery of an extensions directory (``discovery``, ``problems``), rich results
(``content``) and tool search (``search``). Nothing here runs a call: that is ``calls/``.
"""
