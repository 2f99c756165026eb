"""A long-lived client in a web service: connect at startup, close at shutdown (ASGI lifespan).

``app`` below is a plain ASGI application, servable by any ASGI server (``uvicorn
asgi_service:app``). At the lifespan's startup it opens one client for the whole process with
``client = await aiocoord.connect(...)``, and closes it at shutdown; every request uses that
client. ``POST /jobs`` runs a job under a lock (one at a time across every instance of the
service) and answers with the fencing token; ``GET /jobs`` counts the jobs done.

To run to completion without installing a server, this script drives the app itself, as an
ASGI test client does: lifespan startup, ten concurrent ``POST /jobs``, one ``GET /jobs``,
lifespan shutdown. Run a ZooKeeper first (``python -m aiocoord server``), then::

    python examples/asgi_service.py [--connect 127.0.0.1:2181]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiocoord

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

COUNTER = "/examples/asgi/done"
LOCK = "/examples/asgi/lock"
HOSTS = os.environ.get("AIOCOORD_CONNECT", "127.0.0.1:2181")


class Service:
    """The ASGI app: one ZooKeeper client for the process's lifetime."""

    def __init__(self, hosts: str) -> None:
        self.hosts = hosts
        self.client: aiocoord.Client | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
        elif scope["type"] == "http":
            await self.http(scope, send)

    async def lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.client = await aiocoord.connect(self.hosts, session_timeout=10)
                await self.client.ensure_path(COUNTER)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.client is not None:
                    await self.client.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def http(self, scope: Scope, send: Send) -> None:
        client = self.client
        assert client is not None, "the lifespan startup runs first"
        if scope["method"] == "POST":
            async with aiocoord.Lock(client, LOCK) as lock:
                data, stat = await client.get(COUNTER)
                done = int(data or b"0") + 1
                await client.set(COUNTER, str(done).encode(), version=stat.version)
                body = {"job": done, "fencing_token": lock.fencing_token}
        else:
            data, _ = await client.get(COUNTER)
            body = {"done": int(data or b"0")}
        payload = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": payload})


#: What an ASGI server serves: ``uvicorn asgi_service:app``.
app = Service(HOSTS)


async def call(app: Service, scope: Scope) -> Any:
    """Run one ASGI call in-process; returns the decoded JSON body (None for lifespan)."""
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    await inbox.put({"type": "http.request", "body": b"", "more_body": False})
    await app(scope, inbox.get, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return json.loads(body)


async def main(hosts: str) -> int:
    service = Service(hosts)
    lifespan: asyncio.Queue[Message] = asyncio.Queue()
    replies: asyncio.Queue[Message] = asyncio.Queue()

    running = asyncio.ensure_future(service({"type": "lifespan"}, lifespan.get, replies.put))
    await lifespan.put({"type": "lifespan.startup"})
    assert (await replies.get())["type"] == "lifespan.startup.complete"
    try:
        before = (await call(service, {"type": "http", "method": "GET", "path": "/jobs"}))["done"]
        posts = [{"type": "http", "method": "POST", "path": "/jobs"} for _ in range(10)]
        jobs = await asyncio.gather(*(call(service, scope) for scope in posts))
        after = (await call(service, {"type": "http", "method": "GET", "path": "/jobs"}))["done"]
        assert service.client is not None
        await service.client.delete("/examples/asgi", recursive=True)
    finally:
        await lifespan.put({"type": "lifespan.shutdown"})
        await running
    tokens = [job["fencing_token"] for job in sorted(jobs, key=lambda j: j["job"])]
    increasing = all(a < b for a, b in itertools.pairwise(tokens))
    print(f"client open from startup to shutdown; closed: {service.client.closed}")
    print(f"jobs done: {after - before} of {len(jobs)}, tokens increasing: {increasing}")
    return 0 if after - before == len(jobs) and increasing and service.client.closed else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--connect",
        default=HOSTS,
        help="ZooKeeper connect string (default $AIOCOORD_CONNECT or 127.0.0.1:2181)",
    )
    sys.exit(asyncio.run(main(parser.parse_args().connect)))
