"""Test ZooKeeper servers that authenticate clients with SASL: DIGEST-MD5 users, or Kerberos
(GSSAPI) against a throwaway KDC.

The server learns how to log clients in from the ``Server`` section of a JAAS file: ZooKeeper's
``DigestLoginModule`` with the users' passwords (the session then holds ``sasl:<user>``), or
the JDK's ``Krb5LoginModule`` with the service's keytab (the session then holds
``sasl:<principal>``, ``alice@AIOCOORD.TEST`` say)::

    with sasl_server(tmp_path, {"alice": "secret"}) as server:
        async with aiocoord.connect(server.connect_string, sasl=("alice", "secret")) as c:
            ...

    with KerberosKDC(tmp_path / "kdc") as kdc, kerberos_server(tmp_path, kdc) as server:
        kdc.add_principal("alice")  # then the client's KRB5_CONFIG/KRB5_CLIENT_KTNAME
        async with aiocoord.connect(server.connect_string, sasl=aiocoord.GSSAPI()) as c:
            ...
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiocoord._shown import show_in
from aiocoord.errors import ServerSetupError
from aiocoord.testing._kdc import INSTALL_HINT, KerberosKDC, kdc_tools_missing
from aiocoord.testing.server import ZooKeeperServer

__all__ = [
    "FIPS_MODE_PROPERTY",
    "INSTALL_HINT",
    "KRB5_LOGIN_MODULE",
    "KerberosKDC",
    "SASL_PROVIDER",
    "kdc_tools_missing",
    "kerberos_server",
    "sasl_server",
    "write_jaas",
    "write_kerberos_jaas",
]

#: The server's SASL authentication provider.
SASL_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
#: The JDK's Kerberos login, which gives the server its service principal's key.
KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
_DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"


def _write_server_section(directory: str | Path, module: str, options: Mapping[str, str]) -> Path:
    """Write ``jaas.conf`` in ``directory``: a ``Server`` section with one login module."""
    for key, value in options.items():
        if not key.replace(".", "_").isidentifier() or '"' in value or "\n" in value:
            raise ServerSetupError(f"unsupported JAAS option {key}={value!r}")
    lines = ["Server {", f"  {module} required"]
    lines += [f'  {key}="{value}"' for key, value in options.items()]
    lines[-1] += ";"
    lines.append("};")
    path = Path(directory) / "jaas.conf"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_jaas(directory: str | Path, users: Mapping[str, str]) -> Path:
    """Write ``jaas.conf`` in ``directory`` with a DIGEST-MD5 ``Server`` section for ``users``."""
    if not users:
        raise ServerSetupError("a SASL server needs at least one user")
    for name in users:
        if not name.isidentifier():
            raise ServerSetupError(f"unsupported SASL user name {name!r}")
    return _write_server_section(
        directory, _DIGEST_LOGIN_MODULE, {f"user_{name}": pw for name, pw in users.items()}
    )


def write_kerberos_jaas(directory: str | Path, keytab: str | Path, principal: str) -> Path:
    """Write ``jaas.conf`` in ``directory`` with a Kerberos ``Server`` section: the service
    ``principal`` (``zookeeper/localhost@REALM``) logs in from ``keytab``."""
    options = {
        "useKeyTab": "true",
        "keyTab": str(keytab),
        "storeKey": "true",
        "useTicketCache": "false",
        "principal": principal,
    }
    return _write_server_section(directory, KRB5_LOGIN_MODULE, options)


def _jaas_server(jaas: Path, properties: Mapping[str, str], options: Any) -> ZooKeeperServer:
    """A server with the SASL provider, reading ``jaas`` and the JVM ``properties``."""
    extra = dict(options.pop("extra_config", None) or {})
    extra["authProvider.sasl"] = SASL_PROVIDER
    jvm = [
        *options.pop("jvm_options", ()),
        f"-Djava.security.auth.login.config={jaas}",
        *(f"-D{key}={value}" for key, value in properties.items()),
    ]
    return ZooKeeperServer(extra_config=extra, jvm_options=jvm, **options)


#: The JVM property that lets a recent ZooKeeper 3.9 accept DIGEST-MD5 at all: in FIPS mode,
#: its default, the server refuses the mechanism (3.8 and 3.9.3 know no such refusal and
#: ignore the property).
FIPS_MODE_PROPERTY = "zookeeper.fips-mode"


def sasl_server(
    directory: str | Path, users: Mapping[str, str], *, fips_mode: bool = False, **options: Any
) -> ZooKeeperServer:
    """A :class:`ZooKeeperServer` (not yet started) that accepts SASL DIGEST-MD5 logins of
    ``users`` (name -> password); ``options`` go to :class:`ZooKeeperServer`.

    ``fips_mode`` is the server's ``zookeeper.fips-mode``: off by default, as a ZooKeeper 3.9
    server must be for DIGEST-MD5 (with ``fips_mode=True`` a recent 3.9 server refuses every
    DIGEST-MD5 login, as it does when left at its own default).
    """
    properties = {FIPS_MODE_PROPERTY: str(fips_mode).lower()}
    return _jaas_server(write_jaas(directory, users), properties, options)


def kerberos_server(
    directory: str | Path,
    kdc: KerberosKDC,
    *,
    service: str = "zookeeper",
    hostname: str = "localhost",
    remove_host: bool = False,
    remove_realm: bool = False,
    **options: Any,
) -> ZooKeeperServer:
    """A :class:`ZooKeeperServer` (not yet started) that accepts SASL GSSAPI (Kerberos) logins
    in ``kdc``'s realm, as the service principal ``service/hostname`` (created in the KDC, its
    keytab in ``directory``); ``options`` go to :class:`ZooKeeperServer`.

    A client authenticated as ``alice@REALM`` holds the identity ``sasl:alice@REALM``; with
    ``remove_realm`` (``remove_host``) the server drops the realm (a ``/host`` part) from it,
    as ZooKeeper's ``zookeeper.kerberos.removeRealmFromPrincipal`` does.
    """
    name = f"{service}/{hostname}"
    principal = kdc.add_principal(name)
    properties = {
        # The JVM's Kerberos reads the KDC's generated profile, not the machine's.
        "java.security.krb5.conf": str(kdc.krb5_conf),
        "zookeeper.kerberos.removeHostFromPrincipal": str(remove_host).lower(),
        "zookeeper.kerberos.removeRealmFromPrincipal": str(remove_realm).lower(),
    }
    jaas = write_kerberos_jaas(directory, kdc.keytab(name), principal)
    return _jaas_server(jaas, properties, options)


# Shown as defined here: the private modules beside this one are no place to import from.
show_in(__name__, globals(), __all__)
