"""Node names: joining and splitting paths, protected names (Curator's ``_c_<uuid>-``) and
sequence numbers. Pure functions; the one place the client, the recipes and the CLI take them
from."""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = [
    "PROTECTED_PREFIX",
    "SEQUENCE_DIGITS",
    "Chroot",
    "components",
    "join",
    "kazoo_prefix",
    "protected_id",
    "protected_prefix",
    "sequence_of",
    "sort_by_sequence",
    "split",
]

#: The prefix of protected nodes, as Curator names them: ``_c_<uuid>-<name>``.
PROTECTED_PREFIX: str = "_c_"
#: Width of the counter ZooKeeper appends to sequential nodes.
SEQUENCE_DIGITS: int = 10


class Chroot:
    """A client's chroot (``""`` for none): the one place paths gain it on the way to the
    server and lose it on the way back."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def add(self, path: str) -> str:
        """The server's path for the client's ``path``."""
        chroot = self.path
        if not chroot:
            return path
        return chroot if path == "/" else chroot + path

    def strip(self, server_path: str) -> str:
        """The client's path for the server's ``server_path`` (unchanged if outside)."""
        chroot = self.path
        if not chroot:
            return server_path
        if server_path == chroot:
            return "/"
        if server_path.startswith(chroot + "/"):
            return server_path[len(chroot) :]
        return server_path


def join(parent: str, name: str) -> str:
    """``parent`` + ``/`` + ``name``; ``parent`` is a valid path (it ends in ``/`` only if
    it is the root). A cache's initial load calls this once per node, so it stays cheap."""
    return "/" + name if parent == "/" else parent + "/" + name


def split(path: str) -> tuple[str, str]:
    """``(parent, name)`` of an absolute path; the root's children have parent ``/``."""
    parent, _, name = path.rpartition("/")
    return parent or "/", name


def components(path: str) -> list[str]:
    """The node names along an absolute ``path``, from the root down (``[]`` for ``/``)."""
    return path[1:].split("/") if path != "/" else []


# A random (version 4, RFC 4122 variant) UUID from 128 random bits: the version nibble and
# the variant bits cleared, then set.
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def _uuid4_hex() -> str:
    # What uuid.uuid4().hex makes (16 bytes of os.urandom, version 4), without building a
    # uuid.UUID on the lock's path.
    return f"{(int.from_bytes(os.urandom(16), 'big') & _UUID4_CLEAR) | _UUID4_SET:032x}"


def protected_prefix() -> str:
    """A fresh protected prefix, ``_c_<uuid>-``: a node named with it is found again by it."""
    # _uuid4_hex's expression, not a call: this runs on every lock acquisition.
    h = f"{(int.from_bytes(os.urandom(16), 'big') & _UUID4_CLEAR) | _UUID4_SET:032x}"
    return f"{PROTECTED_PREFIX}{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}-"


def kazoo_prefix() -> str:
    """A fresh prefix as kazoo's recipes make theirs, ``<uuid hex>`` (32 hex digits): kazoo
    finds a node whose create lost its reply by it, as we find a protected one."""
    return _uuid4_hex()


def protected_id(name: str) -> str | None:
    """The UUID of a protected node name (``_c_<uuid>-rest``), or None if not protected."""
    if name.startswith(PROTECTED_PREFIX) and len(name) >= len(PROTECTED_PREFIX) + 37:
        candidate = name[len(PROTECTED_PREFIX) : len(PROTECTED_PREFIX) + 36]
        if name[len(PROTECTED_PREFIX) + 36] == "-":
            return candidate
    return None


def sequence_of(name: str) -> int | None:
    """The trailing 10-digit sequence number of a node name, or None if it has none."""
    tail = name[-SEQUENCE_DIGITS:]
    if len(tail) == SEQUENCE_DIGITS and tail.isascii() and tail.isdigit():
        return int(tail)
    return None


def sort_by_sequence(names: Sequence[str]) -> list[str]:
    """The names that carry a sequence number, ordered by it alone (as Curator orders them).

    The protected prefix (a random UUID) must not decide the order, so names are never
    compared whole; ties (a read-lock downgrade node shares its write node's number) keep
    a stable order by name.
    """
    keyed = [(seq, n) for n in names if (seq := sequence_of(n)) is not None]
    keyed.sort()
    return [n for _, n in keyed]
