"""Versioned migrations (curator-x-async's ``MigrationManager``, ``MigrationSet`` and
``Migration``): named sets of ordered migrations, each applied exactly once per ensemble.

**What it does.** A :class:`MigrationSet` is an id and an ordered list of :class:`Migration`\\ s;
a migration is an id and its operations (:class:`MigrationOp`).
:meth:`MigrationManager.migrate` takes the set's lock, reads which migrations were applied,
and applies the rest in one transaction together with a record of each, as Curator's does:
every pending migration of a run or none (when v2 fails, v1 is not applied either). A later
run skips what is recorded; a migration that was applied and has changed since is refused
(:class:`MigrationChangedError`) before anything is written, and so is a set shorter than
what was applied.

**Layout (Curator's, so a Java service running the same set sees it applied).** The lock is
an ``InterProcessSemaphoreMutex`` on ``<lock_path>/<set id>`` (a one-lease
:class:`~aiocoord.Semaphore`). Each applied migration is a persistent sequential node
``<metadata_path>/<set id>/meta-<seq>`` whose data is the SHA-256 of its operations as
Curator hashes them: for each operation, in order, its path, its ZooKeeper op code in decimal
and the text ZooKeeper's Java records give of the request (``toString()``), all UTF-8.
Curator takes those bytes in the JVM's default charset (``String.getBytes()``): UTF-8 on Java
18 and later, but on Java 17 and earlier the locale's, so a JVM under ``LC_ALL=C`` hashes a
non-ASCII path (or ACL id) otherwise and refuses the records made by a UTF-8 one, and the
other way round; run such JVMs with ``-Dfile.encoding=UTF-8``. The records are read in name
order and compared with the set's migrations in order; the
migrations' ids are not stored (nor are they in Curator's).

**Namespace.** Curator hashes the path of an operation as its client sends it: under the
client's namespace (``.namespace("app")`` hashes ``/app/config`` for ``/config``), but not
under a chroot in its connect string, which ZooKeeper's Java client adds later. A client
chrooted here is the peer of a Curator client with that namespace (docs/from-curator.md), so
the manager hashes each path under the client's chroot unless told otherwise:
``MigrationManager(..., namespace="")`` for Java services that keep the chroot in their
connect string, or another namespace if theirs differs from the chroot.

**Exactly once.** The lock keeps two managers from applying one set at once, and the
operations of the pending migrations and their records go in one transaction: all or none.
A transaction whose reply is lost raises :class:`~aiocoord.ConnectionLossError`; the next
``migrate()`` reads the records and applies what is missing. A failing operation (say a
create of a node that exists) fails the whole transaction: no migration of the run is
applied, nothing is recorded, and the error names the operation.

**Bad input** (paths, ids, data, versions) is refused with a typed error when the objects are
made, before anything is sent. ``migrate(timeout=)`` bounds the wait for the lock
(:class:`aiocoord.TimeoutError`, nothing written).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from aiocoord._paths import join
from aiocoord._validation import validate_data, validate_path, validate_timeout, validate_version
from aiocoord._wire.data import ACL
from aiocoord.acl import OPEN_ACL_UNSAFE, check_acl
from aiocoord.client import Client
from aiocoord.errors import (
    BadArgumentsError,
    InvalidTypeError,
    MigrationChangedError,
    MigrationError,
    NoNodeError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes.semaphore import Semaphore
from aiocoord.transaction import Transaction

__all__ = [
    "META_NAME",
    "Migration",
    "MigrationChangedError",
    "MigrationError",
    "MigrationManager",
    "MigrationOp",
    "MigrationSet",
]

#: Curator's name of a migration record (before its sequence number).
META_NAME = "meta-"

# ZooKeeper's op codes and create flags, as Curator's hash spells them.
_CREATE, _DELETE, _SET, _CHECK, _CREATE_CONTAINER = 1, 2, 5, 13, 19
_CSV_ESCAPES = {"\0": "%00", "\n": "%0A", "\r": "%0D", ",": "%2C", "}": "%7D", "%": "%25"}


def _csv_string(text: str) -> str:
    return "'" + "".join(_CSV_ESCAPES.get(c, c) for c in text)


def _csv_buffer(data: bytes) -> str:
    # Java's Integer.toHexString of each (signed) byte: 0x0a is "a", 0xff is "ffffffff".
    if not data:
        return ""
    return "#" + "".join(format(b if b < 0x80 else (b - 0x100) & 0xFFFFFFFF, "x") for b in data)


def _csv_acl(acl: Sequence[ACL]) -> str:
    return (
        "v{"
        + ",".join(f"s{{{a.perms},s{{{_csv_string(a.scheme)},{_csv_string(a.id)}}}}}" for a in acl)
        + "}"
    )


@dataclass(frozen=True, slots=True)
class MigrationOp:
    """One operation of a migration's transaction. Make it with :meth:`create`,
    :meth:`set`, :meth:`delete` or :meth:`check` (the arguments are checked there)."""

    #: ``"create"``, ``"set"``, ``"delete"`` or ``"check"``
    kind: str
    #: the node's path (under the client's chroot, as every path the client takes)
    path: str
    #: the data of a create or a set
    data: bytes = b""
    #: the version a set, delete or check expects (-1: any)
    version: int = -1
    #: a create's ACL (Curator's default, OPEN_ACL_UNSAFE, unless given)
    acl: tuple[ACL, ...] = field(default=tuple(OPEN_ACL_UNSAFE))
    #: a create of a sequential node
    sequential: bool = False
    #: a create of a container node
    container: bool = False

    @classmethod
    def create(
        cls,
        path: str,
        data: bytes = b"",
        *,
        acl: Sequence[ACL] | None = None,
        sequential: bool = False,
        container: bool = False,
    ) -> MigrationOp:
        """A create of a persistent node (or a sequential or container one).

        Without ``data`` the node gets none (empty data), and the record hashes none. A Java
        peer's matching operation gives the empty data itself:
        ``client.transactionOp().create().forPath(path, new byte[0])``. Curator's
        ``forPath(path)`` without data writes, and hashes, the client's default data instead
        (the local address, unless its ``CuratorFrameworkFactory`` builder was given
        ``defaultData(new byte[0])``), which never matches this operation."""
        validate_path(path, sequential=sequential)
        if sequential and container:
            raise BadArgumentsError("a container node cannot be sequential")
        checked = check_acl(acl)
        return cls(
            "create",
            path,
            validate_data(data, path),
            acl=tuple(OPEN_ACL_UNSAFE if checked is None else checked),
            sequential=bool(sequential),
            container=bool(container),
        )

    @classmethod
    def set(cls, path: str, data: bytes, version: int = -1) -> MigrationOp:
        """A set of the node's data (on ``version``, unless -1)."""
        validate_path(path)
        return cls("set", path, validate_data(data, path), validate_version(version))

    @classmethod
    def delete(cls, path: str, version: int = -1) -> MigrationOp:
        """A delete of the node (on ``version``, unless -1)."""
        validate_path(path)
        return cls("delete", path, version=validate_version(version))

    @classmethod
    def check(cls, path: str, version: int) -> MigrationOp:
        """A check that the node has ``version``."""
        validate_path(path)
        return cls("check", path, version=validate_version(version))

    def _opcode_and_record(self, full_path: str) -> tuple[int, str]:
        """ZooKeeper's op code and the Java record's ``toString()`` of this operation, on
        ``full_path`` (its path under Curator's namespace)."""
        path = _csv_string(full_path)
        if self.kind == "create":
            flags = 4 if self.container else 2 if self.sequential else 0
            code = _CREATE_CONTAINER if self.container else _CREATE
            return code, f"{path},{_csv_buffer(self.data)},{_csv_acl(self.acl)},{flags}\n"
        if self.kind == "set":
            return _SET, f"{path},{_csv_buffer(self.data)},{self.version}\n"
        return (_DELETE if self.kind == "delete" else _CHECK), f"{path},{self.version}\n"


@dataclass(frozen=True, slots=True)
class Migration:
    """One migration: an id (for people and errors: it is not stored) and its operations, in
    order (applied in one transaction with the other migrations pending in a run)."""

    #: the migration's name, for people and errors (not stored)
    id: str
    #: its operations, in order (one or more)
    operations: tuple[MigrationOp, ...]

    def __init__(self, id: str, operations: Sequence[MigrationOp]) -> None:
        object.__setattr__(self, "id", _check_id(id, "migration id"))
        if isinstance(operations, (str, bytes)) or not isinstance(operations, Sequence):
            raise InvalidTypeError("operations must be a sequence of MigrationOp")
        ops = tuple(operations)
        if not ops or not all(isinstance(op, MigrationOp) for op in ops):
            raise BadArgumentsError(
                f"migration {id!r} needs one or more MigrationOp (MigrationOp.create(...), ...)"
            )
        object.__setattr__(self, "operations", ops)

    def digest(self, *, namespace: str = "") -> bytes:
        """The SHA-256 of the operations as Curator's ``MigrationManager`` hashes them: the
        record that says this migration was applied. ``namespace`` is the Curator client's
        namespace (``"app"`` or ``"/app"``; ``""``: none), whose paths Curator hashes with it.
        """
        prefix = _check_namespace(namespace)
        digest = hashlib.sha256()
        for op in self.operations:
            path = _in_namespace(prefix, op.path)
            code, record = op._opcode_and_record(path)
            digest.update(path.encode())
            digest.update(str(code).encode())
            digest.update(record.encode())
        return digest.digest()


@dataclass(frozen=True, slots=True)
class MigrationSet:
    """A named, ordered list of migrations; new migrations are added at the end."""

    #: the set's name: the node name of its lock and of its records' parent
    id: str
    #: the migrations, in the order they are applied
    migrations: tuple[Migration, ...]

    def __init__(self, id: str, migrations: Sequence[Migration]) -> None:
        object.__setattr__(self, "id", _check_id(id, "migration set id"))
        if isinstance(migrations, (str, bytes)) or not isinstance(migrations, Sequence):
            raise InvalidTypeError("migrations must be a sequence of Migration")
        found = tuple(migrations)
        if not all(isinstance(m, Migration) for m in found):
            raise InvalidTypeError("migrations must be a sequence of Migration")
        object.__setattr__(self, "migrations", found)


def _check_namespace(value: object) -> str:
    """A Curator namespace as a path prefix: ``"app"`` and ``"/app"`` are ``"/app"``,
    ``""`` and ``"/"`` are none (``""``)."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"namespace must be str, not {type(value).__name__}")
    if value in ("", "/"):
        return ""
    return validate_path(value if value.startswith("/") else "/" + value)


def _in_namespace(prefix: str, path: str) -> str:
    """``path`` as Curator's namespaced client makes it (``ZKPaths.makePath``)."""
    if not prefix:
        return path
    return prefix if path == "/" else prefix + path


def _check_id(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be str, not {type(value).__name__}")
    if not value or "/" in value:
        raise BadArgumentsError(f"{what} must be a non-empty node name without '/': {value!r}")
    validate_path("/" + value)
    return value


class MigrationManager:
    """Applies :class:`MigrationSet`\\ s exactly once per ensemble (Curator's
    ``MigrationManager``); see the module docstring.

    ``lock_path`` is where the sets' locks live and ``metadata_path`` where their records
    do (``<path>/<set id>`` each, the same paths as the Java services that share the sets).
    ``namespace`` is the Curator namespace the operations' paths are hashed under (see the
    module docstring): by default the client's chroot, as a Curator client with that
    namespace hashes them; ``""`` for Java services chrooted by their connect string.
    """

    def __init__(
        self,
        client: Client,
        lock_path: str,
        metadata_path: str,
        *,
        namespace: str | None = None,
    ) -> None:
        #: the client that takes the locks, reads the records and applies the migrations
        self.client: Client = check_client(client)
        #: the parent of the sets' locks, ``<lock_path>/<set id>`` each
        self.lock_path: str = validate_path(lock_path)
        #: the parent of the sets' records, ``<metadata_path>/<set id>/meta-<seq>``
        self.metadata_path: str = validate_path(metadata_path)
        #: the namespace the operations' paths are hashed under (``"/app"``; ``""`` for none)
        self.namespace: str = _check_namespace(client.chroot if namespace is None else namespace)

    async def applied(self, migration_set: MigrationSet) -> list[bytes]:
        """The records of the set's applied migrations, in order (their digests)."""
        meta = join(self.metadata_path, _check_set(migration_set).id)
        try:
            names = sorted(await self.client.children(meta))
        except NoNodeError:
            return []
        records: list[bytes] = []
        for name in names:
            try:
                data, _ = await self.client.get(join(meta, name))
            except NoNodeError:
                continue  # someone removed a record meanwhile; the comparison decides
            records.append(data)
        return records

    async def migrate(
        self, migration_set: MigrationSet, *, timeout: float | None = None
    ) -> list[str]:
        """Apply the set's migrations that are not applied yet, under the set's lock, in one
        transaction (all or none, as Curator's); the ids of those applied by this call (none
        if all were).

        Raises :class:`MigrationChangedError` if an applied migration differs from the
        set's, or if more were applied than the set holds (nothing written either way),
        :class:`aiocoord.TimeoutError` if the lock did not come within ``timeout`` seconds,
        TransactionFailedError if an operation failed (no migration of this run applied,
        nothing recorded),
        DataTooLargeError if the migrations to apply make a transaction larger than a server
        reads (nothing written, not even the lock).
        """
        migration_set = _check_set(migration_set)
        timeout = validate_timeout(timeout)
        lock = Semaphore(self.client, join(self.lock_path, migration_set.id), 1)
        # Built before the lock is taken, so that a transaction the server would refuse (too
        # large) is refused with nothing written, no lock path nor record path; read again
        # under the lock, the migrations to apply can only be fewer.
        self._transaction(
            migration_set, self._to_apply(migration_set, await self.applied(migration_set))
        )
        (lease,) = await lock.acquire(1, timeout)
        try:
            todo = self._to_apply(migration_set, await self.applied(migration_set))
            if todo:
                txn = self._transaction(migration_set, todo)
                await self.client.ensure_path(
                    join(self.metadata_path, migration_set.id), container=True
                )
                await txn.commit()
            return [m.id for m in todo]
        finally:
            await lease.release()

    def _to_apply(self, migration_set: MigrationSet, records: list[bytes]) -> list[Migration]:
        """The migrations after those ``records`` say were applied (Curator's ``filter``)."""
        migrations = migration_set.migrations
        if len(records) > len(migrations):
            raise MigrationChangedError(
                migration_set.id,
                f"{len(records)} migrations were applied, the set has {len(migrations)}",
            )
        for i, (migration, record) in enumerate(zip(migrations, records, strict=False)):
            if migration.digest(namespace=self.namespace) != record:
                raise MigrationChangedError(
                    migration_set.id,
                    f"migration {i} ({migration.id!r}) was applied with other operations",
                )
        return list(migrations[len(records) :])

    def _transaction(self, migration_set: MigrationSet, todo: list[Migration]) -> Transaction:
        """The one transaction applying ``todo`` and recording each (not sent)."""
        meta = join(self.metadata_path, migration_set.id)
        txn = self.client.transaction()
        for migration in todo:
            for op in migration.operations:
                if op.kind == "create":
                    txn.create(
                        op.path,
                        op.data,
                        sequential=op.sequential,
                        container=op.container,
                        acl=op.acl,
                    )
                elif op.kind == "set":
                    txn.set(op.path, op.data, op.version)
                elif op.kind == "delete":
                    txn.delete(op.path, op.version)
                else:
                    txn.check(op.path, op.version)
            record = migration.digest(namespace=self.namespace)
            txn.create(join(meta, META_NAME), record, sequential=True)
        return txn


def _check_set(value: object) -> MigrationSet:
    if not isinstance(value, MigrationSet):
        raise InvalidTypeError(f"expected a MigrationSet, not {type(value).__name__}")
    return value
