"""This host's address as Curator's ``ServiceInstance.builder()`` picks one (the default
``address`` of :meth:`~aiocoord.recipes.discovery.ServiceInstance.build`). Re-exported from
:mod:`aiocoord.recipes.discovery`."""

from __future__ import annotations

import functools
import ipaddress
import socket

__all__ = ["local_address"]


@functools.lru_cache(maxsize=1)
def local_address() -> str | None:
    """This host's address as Curator's builder picks one: not a loopback nor a link-local
    address. The address of the interface that routes outwards if there is one (found
    without sending anything), else one the host name resolves to; None if neither."""
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.connect((probe, 9))  # a UDP connect only picks a route
                address = str(sock.getsockname()[0])
        except OSError:
            continue
        if _usable(address):
            return address
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM)
    except OSError:
        return None
    for info in infos:
        address = str(info[4][0])
        if _usable(address):
            return address
    return None


def _usable(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)
