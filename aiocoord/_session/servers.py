"""The connect string: ``"h1:2181,[::1]:2182/chroot"`` as servers and a chroot."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from aiocoord._validation import validate_path, validate_port
from aiocoord.errors import BadArgumentsError, InvalidPathError, InvalidTypeError

__all__ = ["Server", "parse_connect_string"]


@dataclass(frozen=True, slots=True)
class Server:
    """One address from the connect string."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_connect_string(connect: str) -> tuple[list[Server], str]:
    """Split ``"h1:2181,h2:2181/chroot"`` into servers and chroot ("" for none).

    Every entry is ``host``, ``host:port``, ``[ipv6]``, ``[ipv6]:port`` or a bare IPv6
    address; anything else is refused at once with BadArgumentsError quoting the bad part,
    rather than failing only when the connect timeout runs out.
    """
    if not isinstance(connect, str):
        raise InvalidTypeError(f"connect string must be str, not {type(connect).__name__}")
    hosts, sep, chroot = connect.partition("/")
    if sep:
        chroot = sep + chroot
        if chroot == "/":
            raise BadArgumentsError(
                f"connect string {connect!r}: the chroot after the hosts is empty; "
                "drop the trailing '/' or name a path"
            )
        try:
            validate_path(chroot)
        except InvalidPathError as exc:
            raise BadArgumentsError(f"connect string {connect!r}: bad chroot: {exc}") from None
    else:
        chroot = ""
    servers = [_parse_server(item.strip(), connect) for item in hosts.split(",") if item.strip()]
    if not servers:
        raise BadArgumentsError(f"connect string {connect!r} names no server")
    return servers, chroot


def _parse_server(item: str, connect: str) -> Server:
    def bad(why: str) -> BadArgumentsError:
        return BadArgumentsError(f"connect string {connect!r}: entry {item!r}: {why}")

    if item.startswith("["):  # [ipv6]:port
        host, closed, rest = item[1:].partition("]")
        if not closed:
            raise bad("missing ']' after the IPv6 address")
        if rest and not rest.startswith(":"):
            raise bad(f"unexpected {rest!r} after ']'")
        port = validate_port(rest[1:], item) if rest else 2181
        if not _is_ipv6(host):
            raise bad(f"{host!r} is not an IPv6 address")
        return Server(host, port)
    if item.count(":") > 1:
        if not _is_ipv6(item):
            raise bad("more than one ':' (write an IPv6 address as [address]:port)")
        return Server(item, 2181)
    host, colon, port_s = item.partition(":")
    if not host:
        raise bad("no host before the port")
    if any(c.isspace() or c in "[]@/" for c in host):
        raise bad(f"host {host!r} has a character a host name cannot have")
    return Server(host, validate_port(port_s, item) if colon else 2181)


def _is_ipv6(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv6Address)
    except ValueError:
        return False
