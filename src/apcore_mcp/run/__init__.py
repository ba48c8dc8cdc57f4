"""Running a server: stdio, uvicorn, serve(), BackgroundServer, graceful shutdown."""
