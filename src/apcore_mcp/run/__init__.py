"""Running a server: stdio, uvicorn, serve(), MCPServer, graceful shutdown."""
