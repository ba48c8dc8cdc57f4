"""An HTTP API described by OpenAPI, mounted like an upstream MCP server: reading the document
(``document``), its operations as tools (``operations``), one call (``call``), command-line entries
(``entries``) and the mount itself (``mount``)."""
