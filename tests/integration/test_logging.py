"""Log records about a session carry its id and server in ``extra`` (``zk_session_id``,
``zk_server``), loggers are named after their modules under ``aiocoord``, and a reconnect is
an ordinary event (INFO), not a warning."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from support import Factory

from aiocoord import Client, Lock, State
from aiocoord.testing import expire_session, session_of


async def test_a_reconnect_is_logged_at_info_with_the_session_in_extra(
    zk_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiocoord")
    session_id = f"0x{zk_client.session_id:x}"
    server = str(session_of(zk_client).server)
    changes = zk_client.state_changes()
    session_of(zk_client).drop_connection()
    async for change in changes:
        if change.state is State.RECONNECTED:
            break
    mine = [r for r in caplog.records if r.name.startswith("aiocoord")]
    assert mine, "the reconnect was not logged"
    assert all(r.levelno <= logging.INFO for r in mine), [r.getMessage() for r in mine]
    about_session = [r for r in mine if r.name == "aiocoord.session"]
    assert about_session
    for record in about_session:
        assert getattr(record, "zk_session_id") == session_id  # noqa: B009 - set by extra
        assert getattr(record, "zk_server") is not None  # noqa: B009
    assert any(getattr(r, "zk_server") == server for r in about_session)  # noqa: B009


async def test_a_lost_lock_is_logged_with_the_session_it_was_lost_with(
    zk_connect: Factory, zookeeper: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aiocoord")
    client = await zk_connect()
    lock = Lock(client, "/logged-lock")
    await lock.acquire()
    session_id = f"0x{client.session_id:x}"
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
    assert await lock.lost.wait(10) is State.LOST
    lost = [
        r for r in caplog.records if "lost" in r.getMessage() and "/logged-lock" in r.getMessage()
    ]
    assert lost and lost[0].levelno == logging.WARNING
    assert lost[0].name.startswith("aiocoord.recipes.")
    assert getattr(lost[0], "zk_session_id") == session_id  # noqa: B009
