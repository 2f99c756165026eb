"""Shared test set-up. Server fixtures come from the aiocoord pytest plugin (pytest11).

Every test fails if asyncio logged a write to a dead socket while it ran ("socket.send()
raised exception."): a request was handed to a transport that could no longer send it, and
it must have been refused as NotSentError instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

DEAD_SOCKET_WRITE = "socket.send() raised exception"


class _DeadWrites(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if DEAD_SOCKET_WRITE in message:
            self.seen.append(message)


_DEAD_WRITES = _DeadWrites()
logging.getLogger("asyncio").addHandler(_DEAD_WRITES)


@pytest.fixture(autouse=True)
def _no_write_to_a_dead_socket() -> Iterator[None]:
    start = len(_DEAD_WRITES.seen)
    yield
    seen = _DEAD_WRITES.seen[start:]
    if seen:
        pytest.fail(f"asyncio wrote to a dead socket during this test: {seen[0]!r}")
