"""A test ZooKeeper that authenticates clients with SASL DIGEST-MD5.

The server learns its users from a JAAS file with a ``Server`` section using ZooKeeper's
``DigestLoginModule``, and maps a SASL login to the ACL identity ``sasl:<user>``::

    with sasl_server(tmp_path, {"alice": "secret"}) as server:
        async with aiocoord.connect(server.connect_string, sasl=("alice", "secret")) as c:
            ...
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiocoord.errors import ServerSetupError
from aiocoord.testing.server import ZooKeeperServer

__all__ = ["SASL_PROVIDER", "sasl_server", "write_jaas"]

#: The server's SASL authentication provider.
SASL_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"


def write_jaas(directory: str | Path, users: Mapping[str, str]) -> Path:
    """Write ``jaas.conf`` in ``directory`` with a ``Server`` section for ``users``."""
    if not users:
        raise ServerSetupError("a SASL server needs at least one user")
    for name, password in users.items():
        if not name.isidentifier() or '"' in password or "\n" in password:
            raise ServerSetupError(f"unsupported SASL user or password for {name!r}")
    lines = ["Server {", "  org.apache.zookeeper.server.auth.DigestLoginModule required"]
    lines += [f'  user_{name}="{password}"' for name, password in users.items()]
    lines[-1] += ";"
    lines.append("};")
    path = Path(directory) / "jaas.conf"
    path.write_text("\n".join(lines) + "\n")
    return path


def sasl_server(directory: str | Path, users: Mapping[str, str], **options: Any) -> ZooKeeperServer:
    """A :class:`ZooKeeperServer` (not yet started) that accepts SASL DIGEST-MD5 logins of
    ``users`` (name -> password); ``options`` go to :class:`ZooKeeperServer`."""
    jaas = write_jaas(directory, users)
    extra = dict(options.pop("extra_config", None) or {})
    extra["authProvider.sasl"] = SASL_PROVIDER
    jvm = [*options.pop("jvm_options", ()), f"-Djava.security.auth.login.config={jaas}"]
    return ZooKeeperServer(extra_config=extra, jvm_options=jvm, **options)
