"""ZooKeeper's four-letter words (``srvr``, ``mntr``, ``cons``) over asyncio, and what
``stat`` and ``locks`` read from them.

The words go over the wire in :mod:`aiocoord._server_commands`, shared with
``Client.command``; a word the server refuses raises :class:`FourLetterError`
(:class:`aiocoord.errors.FourLetterWordError`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The wire part is the client's too (Client.command): it lives below both.
from aiocoord._server_commands import four_letter
from aiocoord.errors import FourLetterWordError as FourLetterError

__all__ = [
    "FourLetterError",
    "SessionConnection",
    "four_letter",
    "parse_cons",
    "parse_mntr",
    "parse_srvr",
]

_CONNECTION = re.compile(r"^\s*/(?P<address>.+?)\[\d+\]\((?P<fields>.*)\)\s*$")


def parse_srvr(text: str) -> dict[str, str]:
    """The ``Key: value`` lines of a ``srvr`` (or ``stat``) answer."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith(" "):
            out[key.strip()] = value.strip()
    return out


def parse_mntr(text: str) -> dict[str, str]:
    """The ``zk_key<TAB>value`` lines of a ``mntr`` answer."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if sep:
            out[key.strip()] = value.strip()
    return out


@dataclass(frozen=True, slots=True)
class SessionConnection:
    """A session's connection as ``cons`` shows it: the client's address and the server."""

    session_id: int
    client_address: str
    server: str


def parse_cons(text: str, server: str) -> list[SessionConnection]:
    """The connections of a ``cons`` answer that carry a session (``sid=``)."""
    out: list[SessionConnection] = []
    for line in text.splitlines():
        found = _CONNECTION.match(line)
        if found is None:
            continue
        fields = dict(
            item.split("=", 1) for item in found.group("fields").split(",") if "=" in item
        )
        sid = fields.get("sid")
        if sid is None:
            continue
        try:
            session_id = int(sid, 16)
        except ValueError:
            continue
        out.append(SessionConnection(session_id, found.group("address"), server))
    return out
