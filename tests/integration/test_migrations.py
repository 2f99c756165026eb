"""Versioned migrations against a real server, and against Curator's own hashing and records,
on each version of support.CURATOR_VERSIONS (curator-x-async is not packaged: the Java peer
does what its MigrationManager does with curator-framework's operations)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import (
    Factory,
    JavaPeers,
    ask_java_peer,
    java_line,
    start_java_peer,
)

import aiocoord
from aiocoord import BadArgumentsError, Client, NodeExistsError, TransactionFailedError
from aiocoord.acl import CREATOR_ALL_ACL
from aiocoord.errors import InvalidTypeError, MigrationChangedError
from aiocoord.recipes.migrations import Migration, MigrationManager, MigrationOp, MigrationSet

SEMANTICS = {
    "typed-state.md | Failure semantics | Migrations: two services migrate at once, or an "
    "operation fails": [
        "test_two_managers_at_once_apply_each_migration_once",
        "test_a_failing_operation_applies_and_records_nothing",
        "test_the_pending_migrations_of_a_run_are_one_transaction",
        "test_a_changed_applied_migration_is_refused_before_anything_is_written",
    ],
}

create, set_data, delete, check = (
    MigrationOp.create,
    MigrationOp.set,
    MigrationOp.delete,
    MigrationOp.check,
)

V1 = Migration("v1", [create("/app", b"{}"), create("/app/config", b'{"replicas":1}')])
V2 = Migration("v2", [set_data("/app/config", b'{"replicas":1,"hosts":[]}')])
V3 = Migration("v3", [create("/app/flags", b""), delete("/app/flags")])


def manager(client: Client, namespace: str | None = None) -> MigrationManager:
    return MigrationManager(client, "/migrations/locks", "/migrations/meta", namespace=namespace)


async def records(client: Client, set_id: str = "app") -> list[str]:
    return sorted(await client.children(f"/migrations/meta/{set_id}"))


async def test_a_set_is_applied_once_and_a_rerun_skips_it(zk_connect: Factory) -> None:
    client = await zk_connect()
    assert await manager(client).migrate(MigrationSet("app", [V1, V2])) == ["v1", "v2"]
    assert (await client.get("/app/config"))[0] == b'{"replicas":1,"hosts":[]}'
    assert await records(client) == ["meta-0000000000", "meta-0000000001"]
    assert await manager(client).migrate(MigrationSet("app", [V1, V2])) == []
    # A new migration at the end is applied alone.
    assert await manager(client).migrate(MigrationSet("app", [V1, V2, V3])) == ["v3"]
    assert len(await records(client)) == 3
    assert await client.exists("/app/flags") is None


async def test_two_managers_at_once_apply_each_migration_once(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    counting = Migration("count", [create("/counted", b"")])  # a second apply would fail
    applied = await asyncio.gather(
        manager(a).migrate(MigrationSet("app", [V1, counting]), timeout=30),
        manager(b).migrate(MigrationSet("app", [V1, counting]), timeout=30),
    )
    assert sorted(applied, key=len) == [[], ["v1", "count"]]
    assert len(await records(a)) == 2


async def test_a_changed_applied_migration_is_refused_before_anything_is_written(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    await manager(client).migrate(MigrationSet("app", [V1]))
    changed = Migration("v1", [create("/app", b"{}"), create("/app/config", b'{"replicas":2}')])
    with pytest.raises(MigrationChangedError, match="'v1'"):
        await manager(client).migrate(MigrationSet("app", [changed, V3]))
    assert await client.exists("/app/flags") is None  # V3 was not applied either
    assert len(await records(client)) == 1
    with pytest.raises(MigrationChangedError, match="1 migrations were applied, the set has 0"):
        await manager(client).migrate(MigrationSet("app", []))


async def test_a_failing_operation_applies_and_records_nothing(zk_connect: Factory) -> None:
    client = await zk_connect()
    await client.create("/app", b"taken")
    with pytest.raises(TransactionFailedError) as raised:
        await manager(client).migrate(MigrationSet("app", [V1]))
    assert isinstance(raised.value.cause, NodeExistsError)
    assert await client.exists("/app/config") is None
    assert await client.exists("/migrations/meta/app") is None or await records(client) == []


async def test_the_pending_migrations_of_a_run_are_one_transaction(zk_connect: Factory) -> None:
    """As Curator's MigrationManager (one ``transaction().forOperations`` of every pending
    migration and its record): when v2 fails, v1 is not applied either."""
    client = await zk_connect()
    await client.create("/taken", b"")
    failing = Migration("v2", [create("/taken", b"")])
    with pytest.raises(TransactionFailedError) as raised:
        await manager(client).migrate(MigrationSet("app", [V1, failing]))
    assert isinstance(raised.value.cause, NodeExistsError)
    assert raised.value.failed_index == len(V1.operations) + 1  # v2's op, after v1 and its record
    assert await client.exists("/app") is None  # v1 was not applied either
    assert await client.exists("/migrations/meta/app") is None or await records(client) == []
    # Applied in runs of their own, v1 goes in and v2 alone fails.
    assert await manager(client).migrate(MigrationSet("app", [V1])) == ["v1"]
    with pytest.raises(TransactionFailedError):
        await manager(client).migrate(MigrationSet("app", [V1, failing]))
    assert await client.exists("/app/config") is not None
    assert len(await records(client)) == 1


async def test_bad_migrations_are_refused_when_made(zk_connect: Factory) -> None:
    client = await zk_connect()
    with pytest.raises(BadArgumentsError):
        Migration("empty", [])
    with pytest.raises(BadArgumentsError):
        Migration("a/b", [create("/x")])
    with pytest.raises(BadArgumentsError):
        MigrationSet("", [V1])
    with pytest.raises(InvalidTypeError):
        MigrationSet("app", [object()])  # type: ignore[list-item]  # the refusal under test
    with pytest.raises(BadArgumentsError):
        create("/x", b"x" * (1024 * 1024 + 1))
    with pytest.raises(BadArgumentsError):
        set_data("/x", b"", version=-2)
    with pytest.raises(InvalidTypeError):
        manager(client, namespace=5)  # type: ignore[arg-type]  # the refusal under test
    with pytest.raises(BadArgumentsError):
        manager(client, namespace="a//b")
    with pytest.raises(BadArgumentsError):
        V1.digest(namespace="a/")
    assert await client.exists("/migrations") is None


@pytest.fixture
def curator(curator_peers: JavaPeers) -> list[str]:
    """The command that runs CuratorMigrationPeer, on each Curator version."""
    return curator_peers.command("CuratorMigrationPeer")


def _spec(migration: Migration) -> str:
    parts = []
    for op in migration.operations:
        data = op.data.hex() or "-"
        if op.kind == "create":
            mode = " seq" if op.sequential else " container" if op.container else ""
            parts.append(f"create {op.path} {data}{mode}")
        elif op.kind == "set":
            parts.append(f"set {op.path} {data} {op.version}")
        else:
            parts.append(f"{op.kind} {op.path} {op.version}")
    return ";".join(parts)


def test_our_records_are_curators_hashes(curator: list[str], zookeeper: Any) -> None:
    odd = Migration(
        "odd",
        [
            create("/a,b}%'é", bytes(range(256))),
            create("/seq-", b"", sequential=True),
            create("/box", b"\x00", container=True),
            set_data("/a", b"\xff\x7f\x80", 12),
            delete("/a", -1),
            check("/a", 0),
        ],
    )
    migrations = [V1, V2, V3, odd, Migration("root", [check("/", 0)])]
    answers = ask_java_peer(
        curator, [f"hash {zookeeper.connect_string} {_spec(m)}" for m in migrations]
    )
    assert answers == [m.digest().hex() for m in migrations]
    # A namespaced Curator client hashes its paths under the namespace.
    answers = ask_java_peer(
        curator, [f"hash {zookeeper.connect_string}#ns/sub {_spec(m)}" for m in migrations]
    )
    assert answers == [m.digest(namespace="ns/sub").hex() for m in migrations]
    assert answers == [m.digest(namespace="/ns/sub").hex() for m in migrations]
    assert answers[0] != V1.digest().hex()


def test_curator_hashes_a_path_in_the_jvms_default_charset(
    curator: list[str], zookeeper: Any
) -> None:
    """Curator's hash takes the bytes of each path in the JVM's default charset
    (``String.getBytes()``); ours are UTF-8. A Java 17 JVM under ``LC_ALL=C`` has US-ASCII as
    its default (``-Dfile.encoding`` says it here): the same non-ASCII path hashes otherwise,
    an ASCII one the same (docs/typed-state.md)."""
    utf8 = [arg for arg in curator if not arg.startswith("-Dfile.encoding=")]
    ascii_jvm = [utf8[0], "-Dfile.encoding=US-ASCII", *utf8[1:]]
    plain, accented = Migration("a", [create("/cafe")]), Migration("e", [create("/café")])
    at = zookeeper.connect_string
    answers = ask_java_peer(ascii_jvm, [f"hash {at} {_spec(m)}" for m in (plain, accented)])
    assert answers[0] == plain.digest().hex()
    assert answers[1] != accented.digest().hex()
    assert ask_java_peer(curator, [f"hash {at} {_spec(accented)}"]) == [accented.digest().hex()]


def test_a_create_with_another_acl_is_hashed_with_it(curator: list[str]) -> None:
    # Curator's default ACL is the open one; another ACL changes the record (and is sent).
    assert (
        Migration("x", [create("/a", acl=CREATOR_ALL_ACL)]).digest()
        != Migration("x", [create("/a")]).digest()
    )


async def test_curator_with_the_chroot_as_its_namespace_and_we_share_a_set(
    curator: list[str], zookeeper: Any, zk_connect: Factory, zk_namespace: str
) -> None:
    # docs/from-curator.md: Curator's .namespace("app") is a chroot here. Curator hashes the
    # paths of a namespaced client's operations with the namespace, so do we by default.
    client = await zk_connect()
    java = f"{zookeeper.connect_string}#{zk_namespace.lstrip('/')}"
    sets = f"/migrations/meta app {_spec(V1)}|{_spec(V2)}"
    assert ask_java_peer(curator, [f"apply {java} /migrations/meta app {_spec(V1)}"]) == ["ok"]
    assert (await client.get("/app/config"))[0] == b'{"replicas":1}'
    # Curator's record of V1 is ours: only V2 is left to apply.
    assert await manager(client).migrate(MigrationSet("app", [V1, V2])) == ["v2"]
    # ...and Curator's MigrationManager would find both applied, ours as its own.
    assert ask_java_peer(curator, [f"pending {java} {sets}"]) == ["0"]
    (java_v2,) = ask_java_peer(curator, [f"hash {java} {_spec(V2)}"])
    assert java_v2 == V2.digest(namespace=zk_namespace).hex() != V2.digest().hex()


async def test_curator_with_the_chroot_in_its_connect_string_and_we_share_a_set(
    curator: list[str], zookeeper: Any, zk_connect: Factory, zk_namespace: str
) -> None:
    # A Java client chrooted by its connect string hashes the paths it was given: namespace="".
    client = await zk_connect()
    java = zookeeper.connect_string + zk_namespace
    assert ask_java_peer(curator, [f"apply {java} /migrations/meta app {_spec(V1)}"]) == ["ok"]
    with pytest.raises(MigrationChangedError):  # hashed under the chroot: not Curator's hash
        await manager(client).migrate(MigrationSet("app", [V1, V2]))
    assert await manager(client, namespace="").migrate(MigrationSet("app", [V1, V2])) == ["v2"]
    names = await records(client)
    data = [(await client.get(f"/migrations/meta/app/{n}"))[0] for n in names]
    (java_v2,) = ask_java_peer(curator, [f"hash {java} {_spec(V2)}"])
    assert [d.hex() for d in data] == [V1.digest().hex(), java_v2]
    sets = f"/migrations/meta app {_spec(V1)}|{_spec(V2)}"
    assert ask_java_peer(curator, [f"pending {java} {sets}"]) == ["0"]


async def test_a_changed_migration_we_applied_is_refused_by_curator_too(
    curator: list[str], zookeeper: Any, zk_connect: Factory, zk_namespace: str
) -> None:
    client = await zk_connect()
    await manager(client).migrate(MigrationSet("app", [V1]))
    java = f"{zookeeper.connect_string}#{zk_namespace.lstrip('/')}"
    changed = Migration("v1", [create("/app", b"{}"), create("/app/config", b'{"replicas":2}')])
    assert ask_java_peer(
        curator,
        [
            f"pending {java} /migrations/meta app {_spec(V1)}|{_spec(V2)}",
            f"pending {java} /migrations/meta app {_spec(changed)}",
        ],
    ) == ["1", "mismatch 0"]


async def test_curators_lock_on_the_set_keeps_our_manager_out(
    curator: list[str], zookeeper: Any, zk_connect: Factory, zk_namespace: str
) -> None:
    client = await zk_connect()
    java = await start_java_peer(curator)
    try:
        assert java.stdin is not None
        java_connect = f"{zookeeper.connect_string}#{zk_namespace.lstrip('/')}"
        java.stdin.write(f"hold {java_connect} /migrations/locks/app\n".encode())
        await java.stdin.drain()
        assert await java_line(java) == "held"
        # Curator's InterProcessSemaphoreMutex on <lock path>/<set id> is the set's lock here.
        with pytest.raises(aiocoord.TimeoutError):
            await manager(client).migrate(MigrationSet("app", [V1]), timeout=0.5)
        assert await client.exists("/app") is None
        assert await client.exists("/migrations/meta") is None
        java.stdin.write(b"release\n")
        await java.stdin.drain()
        assert await java_line(java) == "released"
        assert await manager(client).migrate(MigrationSet("app", [V1]), timeout=30) == ["v1"]
        java.stdin.close()
        assert await asyncio.wait_for(java.wait(), 60) == 0
    finally:
        if java.returncode is None:
            java.kill()
            await java.wait()
