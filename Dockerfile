# apcore-mcp as a container: uvicorn serving app:create_app (settings from APCORE_MCP_* env).
#
#   docker build -t apcore-mcp .
#   docker run --rm -p 127.0.0.1:8000:8000 apcore-mcp
#
# Behind a reverse proxy, set APCORE_MCP_FORWARDED_ALLOW_IPS to the proxy's address as the
# container sees it (an IP or a CIDR network; nothing clients can reach port 8000 from directly)
# and list the public host name in APCORE_MCP_ALLOWED_HOSTS. See docker-compose.yml and deploy/.

# ---- build: install the package and its pinned dependencies into a virtualenv ----
FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY constraints.txt pyproject.toml README.md ./
COPY src/ src/
# the wheel force-includes static/explorer.html (pyproject.toml)
COPY static/ static/
# with redis-py, for replicas that share state (APCORE_MCP_REDIS_URL)
RUN pip install --no-cache-dir -c constraints.txt ".[redis,speed]"

# ---- runtime ----
FROM python:3.11-slim
RUN groupadd --system --gid 10001 apcore \
 && useradd --system --uid 10001 --gid apcore --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin apcore
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY app/ app/
COPY examples/ examples/
COPY static/ static/
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    APCORE_MCP_HOST=0.0.0.0 \
    APCORE_MCP_EXTENSIONS_DIR=/app/examples/extensions
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"]
# --no-proxy-headers: the app names the client from X-Forwarded-For/Forwarded itself, believing
# only APCORE_MCP_FORWARDED_ALLOW_IPS (unset here: the socket peer is the client). uvicorn's own
# rewrite would trust any loopback peer.
# --http: uvicorn's httptools protocol (the speed extra) with a deadline on request headers
# (APCORE_MCP_HEADER_TIMEOUT) and their size bound; asyncio's loop, not uvloop (docs/performance.md says why).
CMD ["uvicorn", "app:create_app", "--factory", "--host", "0.0.0.0", "--port", "8000", "--no-proxy-headers", "--timeout-graceful-shutdown", "5", "--no-access-log", "--loop", "asyncio", "--http", "apcore_mcp.run.protocol:TimedHttpToolsProtocol"]
