# apcore-mcp as a container: the apcore-mcp command, every setting from APCORE_MCP_* env.
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
    APCORE_MCP_EXTENSIONS_DIR=/app/examples/extensions \
    APCORE_MCP_WORKERS=1
# APCORE_MCP_WORKERS: one process uses one core. For more, set a number, or `auto`: the CPUs the
# container may use (its cpuset, or its --cpus quota rounded up). The worker processes share
# one port and their state (docs/workers.md says what changes with several).
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"]
# The CLI's server, as the uvicorn flags used to give it: forwarded headers never rewritten by
# uvicorn (the app names the client from X-Forwarded-For/Forwarded itself, believing only
# APCORE_MCP_FORWARDED_ALLOW_IPS, unset here: the socket peer is the client), no access log,
# asyncio's loop (APCORE_MCP_EVENT_LOOP; docs/performance.md says why not uvloop), httptools
# (the speed extra, APCORE_MCP_HTTP_PARSER=auto) with a deadline on request headers
# (APCORE_MCP_HEADER_TIMEOUT) and their size bound; on SIGTERM calls in flight get
# APCORE_MCP_SHUTDOWN_TIMEOUT to finish, then streams end.
CMD ["apcore-mcp", "--transport", "streamable-http", "--host", "0.0.0.0", "--port", "8000"]
