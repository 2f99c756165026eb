"""The ensemble's dynamic configuration (ZooKeeper 3.5+) as typed records: one
:class:`EnsembleMember` per ``server.N`` line of ``/zookeeper/config`` and the
:class:`EnsembleConfig` that holds them with the ``version=`` line; the parser of that text
and of the member specs :meth:`~aiocoord.Client.reconfig` is given.

A line reads ``server.<id>=<host>:<quorum port>:<election port>[:<role>][;[<client host>:]
<client port>]``; IPv6 hosts are in brackets, and a member reachable on several networks
lists more addresses separated by ``|`` (the first in ``host``, ``quorum_port`` and
``election_port``, the others in ``more_addresses``; ``spec`` writes them all).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from aiocoord.errors import BadArgumentsError, InvalidTypeError

__all__ = [
    "CONFIG_NODE",
    "EnsembleConfig",
    "EnsembleMember",
    "MemberRole",
    "parse_member",
    "reconfig_arguments",
]

#: Where the server publishes the configuration (readable by anyone, writable by nobody:
#: only a reconfig changes it).
CONFIG_NODE = "/zookeeper/config"

#: A member votes (``participant``) or only follows the leader's log (``observer``).
MemberRole = Literal["participant", "observer"]
_ROLES: tuple[MemberRole, ...] = ("participant", "observer")
_WILDCARDS = frozenset({"0.0.0.0", "::", "0:0:0:0:0:0:0:0"})


@dataclass(frozen=True, slots=True)
class EnsembleMember:
    """One server of the ensemble, as a ``server.N`` line describes it.

    ``client_host`` and ``client_port`` are None when the line names no client address (the
    server then serves clients only on the port of its static configuration, which the
    ensemble does not publish). ``more_addresses`` are the member's other server addresses,
    ``(host, quorum port, election port)`` each, when it is reachable on several networks
    (ZooKeeper 3.6+'s ``host:q:e|host2:q2:e2``).
    """

    #: the server's id, the ``N`` of its ``server.N`` line (its ``myid``)
    id: int
    #: the host of the member's (first) server address, where the other members reach it
    host: str
    #: the port on which followers connect to the leader
    quorum_port: int
    #: the port of leader election
    election_port: int
    #: whether the member votes (``"participant"``) or only follows (``"observer"``)
    role: MemberRole = "participant"
    #: the host the member serves clients on (``0.0.0.0`` for every interface); None when
    #: the line names only a client port, or no client address at all
    client_host: str | None = None
    #: the port the member serves clients on; None when the line names no client address
    client_port: int | None = None
    #: the member's other server addresses, ``(host, quorum port, election port)`` each;
    #: empty unless it is reachable on several networks
    more_addresses: tuple[tuple[str, int, int], ...] = ()

    @property
    def client_address(self) -> str | None:
        """``host:port`` where clients reach this member, or None if the line names none.

        A wildcard client host (``0.0.0.0``: the server listens on every interface) is
        replaced by the member's quorum host, the one address known to reach it, as
        Curator's ensemble tracker does.
        """
        if self.client_port is None:
            return None
        host = self.client_host or self.host
        if host in _WILDCARDS:
            host = self.host
        return f"{_bracketed(host)}:{self.client_port}"

    @property
    def spec(self) -> str:
        """The member as a ``server.N=...`` line (what :meth:`~aiocoord.Client.reconfig`
        sends for it)."""
        line = (
            f"server.{self.id}={_bracketed(self.host)}:{self.quorum_port}:"
            f"{self.election_port}:{self.role}"
        )
        for host, quorum, election in self.more_addresses:
            line += f"|{_bracketed(host)}:{quorum}:{election}"
        if self.client_port is not None:
            client = f"{_bracketed(self.client_host)}:" if self.client_host else ""
            line += f";{client}{self.client_port}"
        return line

    def __str__(self) -> str:
        return self.spec


@dataclass(frozen=True, slots=True)
class EnsembleConfig:
    """The ensemble's configuration, read from ``/zookeeper/config`` (see
    :meth:`~aiocoord.Client.get_config`) or returned by :meth:`~aiocoord.Client.reconfig`.

    ``version`` is the configuration's version (the zxid that made it, written in hex in the
    ``version=`` line), -1 where the server publishes none (a standalone server publishes an
    empty configuration); pass it as ``from_config=`` to make a reconfig conditional on it.
    ``raw`` is the text as the server published it.
    """

    #: every member (participants and observers), in ascending id order
    members: tuple[EnsembleMember, ...]
    #: the configuration's version: the zxid that made it (the ``version=`` line, in hex);
    #: -1 where the server publishes none
    version: int
    #: the text as the server published it (all of it, lines not parsed included)
    raw: str

    @property
    def participants(self) -> tuple[EnsembleMember, ...]:
        """The voting members."""
        return tuple(m for m in self.members if m.role == "participant")

    @property
    def observers(self) -> tuple[EnsembleMember, ...]:
        """The non-voting members."""
        return tuple(m for m in self.members if m.role == "observer")

    @property
    def ids(self) -> tuple[int, ...]:
        """The members' ids, in ascending order."""
        return tuple(m.id for m in self.members)

    def member(self, member_id: int) -> EnsembleMember:
        """The member with id ``member_id``; KeyError if there is none."""
        for m in self.members:
            if m.id == member_id:
                return m
        raise KeyError(member_id)

    @property
    def client_addresses(self) -> tuple[str, ...]:
        """Every ``host:port`` the members serve clients on, in id order (members whose
        line names no client address are left out)."""
        return tuple(a for m in self.members if (a := m.client_address) is not None)

    @property
    def connect_string(self) -> str:
        """The client addresses as a connect string (empty when there are none)."""
        return ",".join(self.client_addresses)

    @classmethod
    def parse(cls, raw: str | bytes) -> EnsembleConfig:
        """Parse the text of ``/zookeeper/config``. Lines other than ``server.N`` and
        ``version`` (``group.N``, ``weight.N`` of hierarchical quorums) are kept in ``raw``
        only. Raises :class:`~aiocoord.BadArgumentsError` on a line that cannot be read."""
        text = raw.decode() if isinstance(raw, bytes) else raw
        members: list[EnsembleMember] = []
        version = -1
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            key, _, value = line.partition("=")
            if key == "version":
                try:
                    version = int(value, 16)
                except ValueError:
                    raise BadArgumentsError(f"config line {line!r}: version is not hex") from None
            elif key.startswith("server."):
                members.append(parse_member(line))
        members.sort(key=lambda m: m.id)
        return cls(tuple(members), version, text)


def parse_member(line: str) -> EnsembleMember:
    """Parse one ``server.N=host:quorum:election[:role][;[client host:]client port]`` line;
    :class:`~aiocoord.BadArgumentsError` saying what is wrong with it otherwise."""

    def bad(why: str) -> BadArgumentsError:
        return BadArgumentsError(
            f"server spec {line!r}: {why} (expected "
            "'server.<id>=<host>:<quorum port>:<election port>[:participant|:observer]"
            "[;[<client host>:]<client port>]')"
        )

    if not isinstance(line, str):
        raise bad("not a str")
    key, eq, value = line.strip().partition("=")
    prefix, dot, id_text = key.strip().partition(".")
    if not eq or prefix != "server" or not dot:
        raise bad("it does not start with 'server.<id>='")
    member_id = _number(id_text, 0, 2**63 - 1)
    if member_id is None:
        raise bad(f"the id {id_text!r} is not a non-negative integer")
    server_part, _, client_part = value.strip().partition(";")
    # A member on several networks lists one address per network, separated by '|'; the
    # server requires the same role on each that names one.
    addresses: list[tuple[str, int, int]] = []
    roles: set[str] = set()
    for address in server_part.split("|"):
        host, rest = _split_host(address)
        if host is None:
            raise bad("its server address is not host:port:port")
        fields = rest.split(":")
        if len(fields) not in (2, 3):
            raise bad("its server address needs a quorum port and an election port")
        quorum, election = _number(fields[0], 1, 65535), _number(fields[1], 1, 65535)
        if quorum is None or election is None:
            raise bad("a server port is not a number in 1..65535")
        if len(fields) == 3:
            if fields[2] not in _ROLES:
                raise bad(f"the role {fields[2]!r} is neither participant nor observer")
            roles.add(fields[2])
        addresses.append((host, quorum, election))
    if len(roles) > 1:
        raise bad("its addresses name different roles")
    role: MemberRole = "observer" if roles == {"observer"} else "participant"
    (host, quorum, election), *more = addresses
    client_host: str | None = None
    client_port: int | None = None
    if client_part.strip():
        client = client_part.strip()
        if ":" in client:
            client_host, port_text = _split_host(client)
            if client_host is None or ":" in port_text:
                raise bad("its client address is not [host:]port")
        else:
            port_text = client
        client_port = _number(port_text, 1, 65535)
        if client_port is None:
            raise bad("the client port is not a number in 1..65535")
    return EnsembleMember(
        member_id, host, quorum, election, role, client_host or None, client_port, tuple(more)
    )


def _split_host(text: str) -> tuple[str | None, str]:
    """``(host, rest after its ':')``; an IPv6 host is in brackets. (None, "") if malformed."""
    text = text.strip()
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        if not closed or not rest.startswith(":") or not _is_ipv6(host):
            return None, ""
        return host, rest[1:]
    host, colon, rest = text.partition(":")
    if not host or not colon or any(_bad_host_char(c) for c in host):
        return None, ""
    return host, rest


def _bad_host_char(c: str) -> bool:
    # Separators of the config line, control characters, lone surrogates, and characters
    # beyond the BMP (no host name or address has them; the server would store them as
    # garbage in /zookeeper/config).
    return c.isspace() or c in "[]/=;|," or not c.isprintable() or ord(c) > 0xFFFF


def _number(text: str, low: int, high: int) -> int | None:
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if low <= value <= high else None


def _is_ipv6(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv6Address)
    except ValueError:
        return False


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def reconfig_arguments(
    joining: object, leaving: object, new_members: object, from_config: object
) -> tuple[str | None, str | None, str | None, int]:
    """The wire form of :meth:`~aiocoord.Client.reconfig`'s arguments, checked: each list
    comma-joined (None where not given) and the config version. Raises
    :class:`~aiocoord.BadArgumentsError` or :class:`~aiocoord.errors.InvalidTypeError` before
    anything is sent."""
    if isinstance(from_config, bool) or not isinstance(from_config, int):
        raise InvalidTypeError(f"from_config must be an int, not {type(from_config).__name__}")
    if from_config < -1 or from_config >= 2**63:
        raise BadArgumentsError(
            f"from_config must be a config version (EnsembleConfig.version) or -1, "
            f"not {from_config}"
        )
    if new_members is not None and (joining is not None or leaving is not None):
        raise BadArgumentsError(
            "new_members replaces the whole membership; it cannot be combined with "
            "joining or leaving (make two reconfigs, or list everyone in new_members)"
        )
    if new_members is None and joining is None and leaving is None:
        raise BadArgumentsError("reconfig needs joining, leaving or new_members")
    joiners = _members(joining, "joining")
    leavers = _ids(leaving)
    everyone = _members(new_members, "new_members")
    for name, group in (("joining", joiners), ("new_members", everyone)):
        if group is None:
            continue
        ids = [m.id for m in group]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate is not None:
            raise BadArgumentsError(f"{name} names server {duplicate} more than once")
        if any(m.client_port is None for m in group):
            raise BadArgumentsError(
                f"every server of {name} needs a client address ('...;host:port'): "
                "the server refuses a member with fewer than three ports"
            )
    if joiners is not None and leavers is not None:
        both = sorted({m.id for m in joiners} & set(leavers))
        if both:
            raise BadArgumentsError(f"server(s) {both} cannot both join and leave")
    return (
        None if joiners is None else ",".join(m.spec for m in joiners),
        None if leavers is None else ",".join(map(str, leavers)),
        None if everyone is None else ",".join(m.spec for m in everyone),
        from_config,
    )


def _members(value: object, name: str) -> list[EnsembleMember] | None:
    """Members given as EnsembleMember objects or ``server.N=...`` strings (one, or a list)."""
    if value is None:
        return None
    items = [value] if isinstance(value, (str, EnsembleMember)) else value
    if not isinstance(items, (list, tuple)):
        raise InvalidTypeError(
            f"{name} must be a list of EnsembleMember or 'server.N=...' strings, "
            f"not {type(value).__name__}"
        )
    if not items:
        raise BadArgumentsError(f"{name} is empty; leave it out (None) instead")
    out: list[EnsembleMember] = []
    for item in items:
        if isinstance(item, EnsembleMember):
            # Built by hand, so unchecked: read back from its line like any string.
            out.append(parse_member(item.spec))
        elif isinstance(item, str):
            out.extend(parse_member(part) for part in item.split(",") if part.strip())
        else:
            raise InvalidTypeError(
                f"{name} entries must be EnsembleMember or str, not {type(item).__name__}"
            )
    if not out:
        # [""] or [","]: no member at all; sent, it would be an empty change.
        raise BadArgumentsError(f"{name} names no server; leave it out (None) instead")
    return out


def _ids(value: object) -> list[int] | None:
    """Server ids given as ints (or members); one, or a list."""
    if value is None:
        return None
    items = [value] if isinstance(value, (int, EnsembleMember)) else value
    if not isinstance(items, (list, tuple)):
        raise InvalidTypeError(
            f"leaving must be a server id or a list of them, not {type(value).__name__}"
        )
    if not items:
        raise BadArgumentsError("leaving is empty; leave it out (None) instead")
    ids: list[int] = []
    for item in items:
        member_id = item.id if isinstance(item, EnsembleMember) else item
        if isinstance(member_id, bool) or not isinstance(member_id, int):
            raise InvalidTypeError(
                f"leaving takes server ids (int), not {type(item).__name__} {item!r}"
            )
        if member_id < 0:
            raise BadArgumentsError(f"server ids are non-negative, not {member_id}")
        if member_id in ids:
            raise BadArgumentsError(f"leaving names server {member_id} more than once")
        ids.append(member_id)
    return ids
