"""Our input checks against the real server's: a path we accept, the server accepts; a path
we refuse, the server refuses too (sent raw, past our checks); a connect string naming only
ports where nothing listens fails at once, naming the refusal."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiocoord import (
    BadArgumentsError,
    Client,
    CoordinationError,
    Election,
    LeaderLatch,
    Lock,
    NodeExistsError,
    NonBlockingLease,
    PersistentNode,
    Semaphore,
    SetPartitioner,
    connect,
)
from aiocoord._validation import validate_path
from aiocoord._wire.writes import CreateRequest
from aiocoord.acl import wire_acl
from aiocoord.errors import DataTooLargeError, InvalidPathError, NoServersError
from aiocoord.recipes.discovery import ServiceDiscovery, ServiceInstance
from aiocoord.testing import session_of

# Characters around every edge of ZooKeeper's rules (controls, C1, surrogates, the private
# use area, the specials block, beyond the BMP), plus ordinary ones.
EDGES = "\x00\x1f\x20\x7e\x7f\x9f\xa0\ud7ff\ue000\uf8ff\uf900\uffef\ufff0\ufffd\U00010000\U0001f600"
SEGMENT = st.text(alphabet=st.sampled_from(list(EDGES) + list("az.-_é中")), min_size=1, max_size=4)


async def _server_accepts(client: Client, path: str) -> bool:
    """Whether the server creates ``path`` (under the namespace), sent past our checks."""
    full = session_of(client).chroot + path
    try:
        full.encode("utf-8")
    except UnicodeEncodeError:
        return False  # a lone surrogate cannot even be put on the wire
    provider = client.acl_provider
    acl = wire_acl(provider(path) if provider is not None else None)
    try:
        await session_of(client).request(CreateRequest(path=full, data=b"", acl=acl, flags=0))
    except NodeExistsError:
        return True
    except CoordinationError:
        return False  # the server's refusal, whatever its code
    return True


def _sample_segments(n: int) -> list[str]:
    """``n`` path segments drawn by hypothesis (deterministically), without repeats."""
    seen: dict[str, None] = {}

    @settings(max_examples=n, deadline=None, derandomize=True, database=None)
    @given(segment=SEGMENT)
    def draw(segment: str) -> None:
        seen[segment] = None

    draw()
    return list(seen)


async def test_paths_we_accept_are_exactly_the_paths_the_server_accepts(
    zk_client: Client,
) -> None:
    segments = _sample_segments(300)
    assert len(segments) > 100
    disagree = []
    for segment in segments:
        path = "/p" + segment
        try:
            validate_path(path)
            ours = True
        except InvalidPathError:
            ours = False
        if ours != await _server_accepts(zk_client, path):
            disagree.append((ascii(path), ours))
    assert disagree == []


async def test_a_path_outside_the_basic_multilingual_plane_is_refused_unsent(
    zk_client: Client,
) -> None:
    before = sum(session_of(zk_client).sent.values())
    with pytest.raises(InvalidPathError):
        await zk_client.create("/emoji-\U0001f600", b"")
    assert sum(session_of(zk_client).sent.values()) == before


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


async def test_every_host_refusing_fails_at_once_naming_the_refusal() -> None:
    port = _refused_port()
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(NoServersError, match="refused"):
        await connect(f"127.0.0.1:{port},127.0.0.1:{port}", connect_timeout=10)
    assert loop.time() - start < 1.0


def test_cli_tree_against_a_refused_port_fails_fast() -> None:
    port = _refused_port()
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "aiocoord", "tree", "/", "--connect", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0
    assert "refused" in (done.stdout + done.stderr)
    assert time.monotonic() - start < 4.0


async def test_strings_without_a_utf8_form_and_oversized_nodes_are_refused_unsent(
    zk_client: Client,
) -> None:
    # A lone surrogate has no UTF-8 form: a typed BadArgumentsError before anything is
    # sent, never a bare UnicodeEncodeError from deep in a request.
    lone = "x\ud800"
    before = sum(session_of(zk_client).sent.values())
    makers = [
        lambda: ServiceInstance.build("api", address=lone),
        lambda: ServiceInstance.build("api", payload={"k": lone}),
        lambda: ServiceInstance.build("api", payload=[lone]),
        lambda: NonBlockingLease(zk_client, "/lease", 60, identifier=lone),
        lambda: SetPartitioner(zk_client, "/part", ["a"], identifier=lone),
        lambda: Lock(zk_client, "/lock", identifier=lone),
        lambda: Semaphore(zk_client, "/sem", 2, identifier=lone),
        lambda: Election(zk_client, "/el", identifier=lone),
        lambda: LeaderLatch(zk_client, "/latch", identifier=lone),
    ]
    for make in makers:
        with pytest.raises(BadArgumentsError):
            make()
    # Data within 1 MiB whose create request is over the server's packet limit (the path
    # and the protected name's prefix push it over): refused at construction, not retried
    # for ever by the task that keeps the node.
    data = b"x" * (1024 * 1024 - 40)
    with pytest.raises(DataTooLargeError):
        PersistentNode(zk_client, "/big", data, protected=True)
    node = PersistentNode(zk_client, "/small", b"")
    with pytest.raises(DataTooLargeError):
        await node.set_data(data)
    discovery = ServiceDiscovery(zk_client, "/services")
    with pytest.raises(DataTooLargeError):
        await discovery.register(
            ServiceInstance.build("api", payload="x" * (1024 * 1024 - 300)), timeout=5
        )
    # A reconfig naming no server, or a host with a control or astral character.
    for joining in ([""], [" , "], "server.4=a\x1bb:1:2;3", "server.4=\U0001f600:1:2;3"):
        with pytest.raises(BadArgumentsError):
            await zk_client.reconfig(joining=joining)
    assert sum(session_of(zk_client).sent.values()) == before
