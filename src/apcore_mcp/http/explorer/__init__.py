"""The browser explorer: its page (``page``), its MCP door (``mcp``) and the frame that shows a
tool's MCP Apps view (``views``)."""
