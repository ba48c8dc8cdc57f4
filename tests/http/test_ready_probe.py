"""``/ready`` asks Redis itself: an outage shows before any call tried Redis, and so does its end.

Before, the ``degraded`` detail came only from a user of the link that had failed (a call's rate
limit, a task, the change broadcast), so an idle replica with Redis gone said it was fine.
A real ``redis-server``, stopped by PID and started again on the same port; no tool is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._support.hostile import serving, wait_until
from tests._support.replicas import new_key, redis_running

pytestmark = pytest.mark.redis


async def test_ready_reports_redis_away_and_back_without_any_call(tmp_path: Path) -> None:
    with redis_running(tmp_path / "redis") as redis:
        async with (
            serving(redis_url=redis.url, request_state_keys=[new_key()]) as (url, _),
            httpx.AsyncClient() as http,
        ):

            async def ready() -> dict[str, Any]:
                response = await http.get(f"{url}/ready")
                assert response.status_code == 200, response.text  # degraded, still serving
                body: dict[str, Any] = response.json()
                return body

            assert "degraded" not in await ready()
            redis.stop()
            seen: dict[str, Any] = {}

            async def degraded() -> bool:
                seen.update(await ready())
                return "degraded" in seen

            await wait_until(degraded, "/ready saying degraded with Redis stopped and no call made")
            assert seen["degraded"]["redis"].startswith("unreachable ("), seen
            redis.start()
            await wait_until(lambda: _ok(ready), "/ready without degraded once Redis is back")


async def _ok(ready: Any) -> bool:
    return "degraded" not in await ready()
