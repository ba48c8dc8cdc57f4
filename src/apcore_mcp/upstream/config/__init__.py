"""``mcp.json``: parsing the ``mcpServers`` map and toolsets into frozen specs (``parse``) and the
checks of each entry (``checks``)."""
