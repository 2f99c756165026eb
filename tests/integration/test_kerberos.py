"""SASL GSSAPI (Kerberos) against the real server and a real MIT KDC on loopback (from
:mod:`aiocoord.testing.sasl`): the login gives the ``sasl:<principal>`` identity, ``sasl``
ACLs keep other principals out, missing or stale credentials and unknown services are
refused typed, and the login is made again on every new connection and new session.

Clients find their credentials as any Kerberos client does: ``kinit`` into a private cache
collection (``KRB5CCNAME``), or a client keytab (``KRB5_CLIENT_KTNAME``). Skipped, with the
install command, where the KDC tools or the ``gssapi`` package are missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiocoord import ACL, GSSAPI, State, connect
from aiocoord._auth.gssapi import GssapiLogin
from aiocoord.errors import AuthFailedError, NoAuthError, ServerSetupError
from aiocoord.testing import FaultProxy, ZooKeeperServer, expire_client
from aiocoord.testing.sasl import INSTALL_HINT, KerberosKDC, kdc_tools_missing, kerberos_server

_missing = kdc_tools_missing() or (
    None
    if shutil.which("kinit")
    else f"the Kerberos client tools (kinit) are missing: {INSTALL_HINT}"
)
if _missing is None and importlib.util.find_spec("gssapi") is None:
    _missing = (
        "the 'gssapi' package is missing: pip install 'aiocoord[kerberos]' "
        "(after scripts/install-kerberos, which installs libkrb5-dev)"
    )
pytestmark = pytest.mark.skipif(_missing is not None, reason=_missing or "")

REALM = "AIOCOORD.TEST"
ALICE = f"alice@{REALM}"
BOB = f"bob@{REALM}"
ALICE_ONLY = [ACL(ACL.ALL, "sasl", ALICE)]
#: The server's principal is zookeeper/localhost; the tests connect to 127.0.0.1.
ZK = GSSAPI(hostname="localhost")


@pytest.fixture(scope="module")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KerberosKDC]:
    directory = tmp_path_factory.mktemp("kdc")
    with KerberosKDC(directory, REALM) as kdc, pytest.MonkeyPatch.context() as env:
        for name in ("alice", "bob", "carol", "dave"):
            kdc.add_principal(name)
        # A service the KDC knows but the test server has no key for.
        kdc.add_principal("zookeeper/otherhost", keytab=False)
        # The service of the in-process acceptor (the tests of the security-layer step).
        kdc.add_principal("acceptor/localhost")
        # This process is the Kerberos client: the realm's profile and a cache collection of
        # its own, so nothing of the machine's Kerberos set-up is read or changed.
        for key, value in kdc.env.items():
            env.setenv(key, value)
        env.setenv("KRB5CCNAME", f"DIR:{directory / 'ccache'}")
        (directory / "ccache").mkdir(mode=0o700)
        env.delenv("KRB5_CLIENT_KTNAME", raising=False)
        for name in ("bob", "alice"):  # alice last: the collection's default principal
            _kinit(kdc, name)
        yield kdc


def _kinit(kdc: KerberosKDC, name: str) -> None:
    subprocess.run(
        ["kinit", "-k", "-t", str(kdc.keytab(name)), kdc.principal(name)],
        env=os.environ.copy(),
        check=True,
        capture_output=True,
        timeout=30,
    )


@pytest.fixture(scope="module")
def server(kdc: KerberosKDC, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    with kerberos_server(tmp_path_factory.mktemp("zk-krb"), kdc) as s:
        yield s


async def test_login_gives_the_principal_identity_and_sasl_acls_hold(
    server: ZooKeeperServer,
) -> None:
    alice = await connect(server.connect_string, sasl=ZK)  # the default principal
    bob = await connect(server.connect_string, sasl=GSSAPI(principal=BOB, hostname="localhost"))
    anonymous = await connect(server.connect_string)
    try:
        assert ("sasl", ALICE) in await alice.whoami()
        assert ("sasl", BOB) in await bob.whoami()
        # A delete is checked against the parent's ACL, so the node goes in a guarded parent.
        await alice.create("/krb-only", acl=ALICE_ONLY)
        await alice.create("/krb-only/data", b"for alice", acl=ALICE_ONLY)
        assert (await alice.get("/krb-only/data"))[0] == b"for alice"
        for stranger in (bob, anonymous):
            with pytest.raises(NoAuthError):
                await stranger.get("/krb-only/data")
            with pytest.raises(NoAuthError):
                await stranger.delete("/krb-only/data")
            with pytest.raises(NoAuthError):
                await stranger.create("/krb-only/mine")
    finally:
        await alice.delete("/krb-only", recursive=True)
        for c in (alice, bob, anonymous):
            await c.close()


async def test_the_server_principal_names_the_host_of_the_connect_string(
    server: ZooKeeperServer,
) -> None:
    # No hostname given: "localhost" from the connect string names zookeeper/localhost.
    async with connect(f"localhost:{server.port}", sasl=GSSAPI()) as client:
        assert ("sasl", ALICE) in await client.whoami()


async def test_a_client_keytab_is_enough(
    server: ZooKeeperServer, kdc: KerberosKDC, monkeypatch: pytest.MonkeyPatch
) -> None:
    # carol never ran kinit: the Kerberos library logs her in from the client keytab.
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", str(kdc.keytab("carol")))
    carol = GSSAPI(principal=kdc.principal("carol"), hostname="localhost")
    async with connect(server.connect_string, sasl=carol) as client:
        assert ("sasl", kdc.principal("carol")) in await client.whoami()


async def test_missing_credentials_are_refused_typed(server: ZooKeeperServer) -> None:
    nobody = GSSAPI(principal=f"mallory@{REALM}", hostname="localhost")
    with pytest.raises(AuthFailedError, match=r"Kerberos login to zookeeper@localhost failed"):
        await connect(server.connect_string, sasl=nobody, connect_timeout=5)


async def test_a_stale_keytab_is_refused_typed(
    server: ZooKeeperServer, kdc: KerberosKDC, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "dave.keytab"
    shutil.copy(kdc.keytab("dave"), stale)
    kdc.rekey("dave")  # the copy now holds a key the KDC no longer has
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", str(stale))
    dave = GSSAPI(principal=kdc.principal("dave"), hostname="localhost")
    with pytest.raises(AuthFailedError, match="Kerberos login"):
        await connect(server.connect_string, sasl=dave, connect_timeout=5)


@pytest.mark.parametrize(
    "config",
    [GSSAPI(service="nosuchservice", hostname="localhost"), GSSAPI(hostname="elsewhere")],
    ids=["unknown-service", "unknown-host"],
)
async def test_a_server_principal_the_kdc_does_not_know_is_refused_typed(
    server: ZooKeeperServer, config: GSSAPI
) -> None:
    with pytest.raises(AuthFailedError, match=f"Kerberos login to {config.target('x')}"):
        await connect(server.connect_string, sasl=config, connect_timeout=5)


async def test_a_ticket_the_server_cannot_read_is_refused_by_the_server(
    server: ZooKeeperServer,
) -> None:
    # The KDC issues a ticket for zookeeper/otherhost; the server holds zookeeper/localhost's
    # key only, so its half of the exchange fails and it answers AUTHFAILED.
    with pytest.raises(AuthFailedError, match="refused by the server"):
        await connect(server.connect_string, sasl=GSSAPI(hostname="otherhost"), connect_timeout=5)


async def test_login_is_made_again_after_reconnects_and_new_sessions(
    server: ZooKeeperServer,
) -> None:
    async with FaultProxy(server.host, server.port) as proxy:
        alice = await connect(proxy.connect_string, sasl=ZK, session_timeout=4)
        try:
            await alice.create("/kept-krb", b"x", acl=ALICE_ONLY)
            session = alice.session_id
            proxy.drop()
            await alice.wait_for(State.RECONNECTED, 10)
            assert alice.session_id == session
            assert (await alice.get("/kept-krb"))[0] == b"x"
            await expire_client(alice, server.connect_string)
            await alice.wait_for(State.CONNECTED, 10)
            assert ("sasl", ALICE) in await alice.whoami()
            assert (await alice.get("/kept-krb"))[0] == b"x"
            await alice.delete("/kept-krb")
        finally:
            await alice.close()


def test_the_kdc_reports_a_failed_admin_query(kdc: KerberosKDC) -> None:
    # kadmin.local exits 0 whatever happens: the helper reads what it printed.
    with pytest.raises(ServerSetupError, match="already exists"):
        kdc.add_principal("alice")
    with pytest.raises(ServerSetupError, match="does not exist"):
        kdc.rekey("nobody")


def _context_with_acceptor(kdc: KerberosKDC) -> tuple[GssapiLogin, Any]:
    """A login whose security context is established with an in-process GSS acceptor (the
    server's half, as the JDK runs it), both real, up to the server's security-layer offer."""
    import gssapi

    keytab = str(kdc.keytab("acceptor/localhost"))
    name = gssapi.Name("acceptor@localhost", gssapi.NameType.hostbased_service)
    creds = gssapi.Credentials(name=name, usage="accept", store={"keytab": keytab})
    acceptor = gssapi.SecurityContext(creds=creds, usage="accept")
    login = GssapiLogin(GSSAPI(service="acceptor", hostname="localhost"), "127.0.0.1")
    reply = acceptor.step(login.initial())
    assert acceptor.complete
    assert login.respond(reply) == b""  # context up: the empty response the JDK waits for
    return login, acceptor


def test_the_security_layer_answer_is_none_size_zero_and_the_principal(kdc: KerberosKDC) -> None:
    login, acceptor = _context_with_acceptor(kdc)
    # The server offers every layer (none, integrity, privacy) and up to 64 KiB.
    offer = acceptor.wrap(bytes([0x07, 0x01, 0x00, 0x00]), False).message
    answer = acceptor.unwrap(login.respond(offer)).message
    assert answer == b"\x01\x00\x00\x00" + ALICE.encode()
    assert not login.complete
    assert login.respond(b"") is None  # the server's final, empty token
    assert login.complete


@pytest.mark.parametrize(
    ("offer", "reason"),
    [(bytes([0x02, 0x01, 0x00, 0x00]), "requires a SASL security layer"), (b"\x01\x00", "not 4")],
    ids=["integrity-only", "short"],
)
def test_an_offer_it_cannot_take_is_refused_typed(
    kdc: KerberosKDC, offer: bytes, reason: str
) -> None:
    login, acceptor = _context_with_acceptor(kdc)
    with pytest.raises(AuthFailedError, match=reason):
        login.respond(acceptor.wrap(offer, False).message)
    assert not login.complete
