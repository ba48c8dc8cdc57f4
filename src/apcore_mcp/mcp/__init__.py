"""The MCP protocol edge: the low-level server, its handlers, results and notifications."""
