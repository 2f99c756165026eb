"""Client.command / Client.server_version (issue 28): kazoo's four-letter words from a
connected client, sent to the server that holds the session, with typed errors for a word the
server refuses, a client that is not connected, and bad input."""

from __future__ import annotations

import re

import pytest
from support import Factory, needs_local_jvm

import aiocoord
from aiocoord import Client, State
from aiocoord.errors import (
    BadArgumentsError,
    ConnectionLossError,
    FourLetterWordError,
    InvalidTypeError,
)
from aiocoord.testing import FaultProxy, ServerHandle, ZooKeeperServer, four_letter


async def test_command_reaches_the_server_of_the_session(zk_client: Client) -> None:
    assert await zk_client.command("ruok") == "imok"
    assert await zk_client.command() == "imok"
    # cons lists the server's connections: ours is there, under our session id.
    cons = await zk_client.command("cons")
    assert f"sid=0x{zk_client.session_id:x}" in cons
    assert "Mode: standalone" in await zk_client.command("srvr")


async def test_server_version_is_the_servers(zk_client: Client, zookeeper: ServerHandle) -> None:
    srvr = four_letter("127.0.0.1", zookeeper.port, "srvr")
    found = re.search(r"Zookeeper version: (\d+)\.(\d+)\.(\d+)", srvr)
    assert found is not None
    version = await zk_client.server_version()
    assert version == tuple(int(g) for g in found.groups())
    assert version >= (3, 5, 0)


@needs_local_jvm
async def test_a_word_off_the_whitelist_is_a_typed_error(zk_connect: Factory) -> None:
    # ruok stays on the list: the server's start waits for its answer.
    whitelist = {"4lw.commands.whitelist": "srvr,ruok"}
    async with ZooKeeperServer(extra_config=whitelist) as server:
        client = await aiocoord.connect(server.connect_string, session_timeout=10)
        try:
            with pytest.raises(FourLetterWordError, match="whitelist"):
                await client.command("cons")
            assert (await client.server_version())[0] == 3  # srvr is whitelisted
        finally:
            await client.close()


async def test_not_connected_is_a_connection_loss(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string)
    zk_fault_proxy.refuse()
    zk_fault_proxy.drop()
    try:
        await client.wait_for(State.SUSPENDED, timeout=10)
        with pytest.raises(ConnectionLossError, match="not connected"):
            await client.command("ruok")
    finally:
        zk_fault_proxy.accept()
    await client.wait_for(State.CONNECTED, timeout=20)
    assert await client.command("ruok") == "imok"


async def test_bad_words_are_refused_before_anything_is_sent(zk_client: Client) -> None:
    for word in ("RUOK", "ruo", "ruokk", "ru k", ""):
        with pytest.raises(BadArgumentsError):
            await zk_client.command(word)
    with pytest.raises(InvalidTypeError):
        await zk_client.command(b"ruok")  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        await zk_client.command("ruok", timeout=-1)
