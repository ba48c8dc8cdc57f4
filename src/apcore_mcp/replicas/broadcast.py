"""Registry changes relayed between replicas over a Redis channel.

Each replica tells its own clients about changes to its own registry (``ListChangedNotifier``).
With broadcasting on, it also publishes each change on ``<prefix>changes``; every replica
subscribes, and re-announces the changes other replicas published to *its* clients: the
handshake-era connections it holds and its ``subscriptions/listen`` streams. A listener
therefore hears of a change whichever replica its stream happens to be on.

The messages carry no module: each replica still lists its own registry. Broadcasting is for
deployments where a change reaches every replica's registry (each one reloads, or an admin
registers on all of them) but the listeners sit on one replica each.

Redis away: changes reach this replica's own clients only (the WARNING says so). When the
subscription comes back, the replica announces a change to its clients at once, since it
cannot know what it missed meanwhile; ``list_changed`` is a hint to refetch, so a spare
one costs a list call and a missed one costs stale tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from typing import Any

from redis.exceptions import RedisError

from apcore_mcp.mcp.notifier import ListChange, ListChangedNotifier
from apcore_mcp.replicas.link import RedisLink

logger = logging.getLogger(__name__)

MESSAGE_VERSION = 1
CHANNEL = "changes"
USER = "change broadcast"
FALLBACK = "registry changes reach this replica's own clients only"
PUBLISH_USER = "change publishing"
PUBLISH_FALLBACK = "this replica's registry changes reach its own clients only"
OUTBOX_SIZE = 1024
POLL_SECONDS = 1.0
RETRY_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)


def encode_change(change: ListChange, origin: str) -> bytes:
    message = {"v": MESSAGE_VERSION, "origin": origin, "tools": change.tools, "resources": change.resources}
    message["updated"] = list(change.updated)
    return json.dumps(message, separators=(",", ":")).encode()


def decode_change(data: bytes | str) -> tuple[str, ListChange] | None:
    """``(origin, change)`` of a message, or ``None`` for anything that is not one of ours."""
    try:
        message = json.loads(data)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("v") != MESSAGE_VERSION:
        return None
    origin, updated = message.get("origin"), message.get("updated", [])
    if not isinstance(origin, str) or not isinstance(updated, list):
        return None
    uris = tuple(uri for uri in updated if isinstance(uri, str))
    return origin, ListChange(bool(message.get("tools")), bool(message.get("resources")), uris)


class ChangeBroadcaster:
    """Publishes this replica's changes and re-announces the other replicas' ones.

    ``local_change()`` is safe from any thread; ``run()`` does the work until cancelled.
    """

    def __init__(self, link: RedisLink, notifier: ListChangedNotifier, *, origin: str | None = None) -> None:
        self.link = link
        self.notifier = notifier
        self.origin = origin or secrets.token_hex(8)
        self.channel = link.key(CHANNEL)
        self._failures = 0  # consecutive failed subscription attempts: the retry delay grows with them
        self._loop: asyncio.AbstractEventLoop | None = None
        self._outbox: asyncio.Queue[ListChange] = asyncio.Queue(OUTBOX_SIZE)

    def local_change(self, change: ListChange) -> None:
        """Queue ``change`` for the other replicas (dropped before ``run()`` started: no one listens yet)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._enqueue, change)
        except RuntimeError:  # the loop closed between the check and the call
            logger.debug("Change not broadcast: the event loop is closed")

    def _enqueue(self, change: ListChange) -> None:
        try:
            self._outbox.put_nowait(change)
        except asyncio.QueueFull:
            logger.warning("Change broadcast backlog full (%d): a change is not relayed", OUTBOX_SIZE)

    async def run(self) -> None:
        """Publish and subscribe until cancelled; Redis failures are retried, never raised."""
        self._loop = asyncio.get_running_loop()
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._publish_forever())
            tasks.create_task(self._subscribe_forever())

    async def _publish_forever(self) -> None:
        failing = False
        while True:
            change: ListChange | None = None
            with contextlib.suppress(TimeoutError):  # while publishing fails, a ping each POLL_SECONDS
                change = await asyncio.wait_for(self._outbox.get(), POLL_SECONDS if failing else None)
            try:
                if change is None:
                    await self.link.client.ping()
                else:
                    await self.link.client.publish(self.channel, encode_change(change, self.origin))
            except (RedisError, OSError) as exc:
                self.link.failed(PUBLISH_USER, exc, PUBLISH_FALLBACK)
                failing = True
            else:
                if failing:  # else /ready would stay degraded until the next change
                    self.link.succeeded(PUBLISH_USER)
                    failing = False

    async def _subscribe_forever(self) -> None:
        while True:
            try:
                await self._subscribed()
            except (RedisError, OSError) as exc:
                self.link.failed(USER, exc, FALLBACK)
            await asyncio.sleep(RETRY_SECONDS[min(self._failures, len(RETRY_SECONDS) - 1)])
            self._failures += 1

    async def _subscribed(self) -> None:
        pubsub = self.link.client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self.channel)
            self._failures = 0
            if self.link.succeeded(USER):
                self.notifier.announce(ListChange(tools=True, resources=True))  # what changed meanwhile is unknown
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=POLL_SECONDS)
                if message is not None:
                    self._receive(message)
        finally:
            await _close_quietly(pubsub)

    def _receive(self, message: dict[str, Any]) -> None:
        decoded = decode_change(message.get("data", b""))
        if decoded is None:
            logger.debug("Ignoring a message on %s that is not a change", self.channel)
            return
        origin, change = decoded
        if origin == self.origin:
            return  # our own clients heard of it already
        self.notifier.announce(change)


async def _close_quietly(pubsub: Any) -> None:
    try:
        await pubsub.aclose()
    except (RedisError, OSError):
        logger.debug("Closing a broken Redis subscription failed", exc_info=True)
