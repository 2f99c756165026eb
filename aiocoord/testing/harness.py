"""A base class for ``unittest`` suites: :class:`ZooKeeperTestCase`, what the pytest fixtures
give, for code tested with the standard library alone."""

from __future__ import annotations

import re
import unittest
import uuid
from typing import Any, ClassVar

from aiocoord import Client
from aiocoord._connect import open_client
from aiocoord.testing._backend import ServerHandle, start_server
from aiocoord.testing._client_fixtures import NAMESPACE_ROOT
from aiocoord.testing.expire import expire_client
from aiocoord.testing.server import SUPER_AUTH

__all__ = ["ZooKeeperTestCase"]


class ZooKeeperTestCase(unittest.IsolatedAsyncioTestCase):
    """An :class:`unittest.IsolatedAsyncioTestCase` with a real ZooKeeper and a client.

    One server per test class, of the backend ``AIOCOORD_ZK_BACKEND`` selects (as the pytest
    fixtures'), started in :meth:`setUpClass` and closed in :meth:`tearDownClass`. Each test
    gets, in its own event loop:

    * :attr:`client`: a connected :class:`aiocoord.Client` chrooted to :attr:`namespace`, a
      path unique to the test, created before it and removed, with everything under it, after;
    * :meth:`connect`: more clients, each with its own session, under the same namespace;
    * :meth:`expire_session`: a client's session expired on the server, for real;
    * :attr:`zookeeper` (the server) and :attr:`hosts` (its connect string with the namespace).

    A subclass that overrides :meth:`asyncSetUp` or :meth:`asyncTearDown` calls ``super()``'s.
    """

    #: The server of this test class (set by :meth:`setUpClass`).
    zookeeper: ClassVar[ServerHandle]
    #: Seconds of the clients' session timeout (:meth:`connect` default).
    session_timeout: ClassVar[float] = 10.0

    #: This test's chroot, e.g. ``/aiocoord-test/test_lock-1a2b3c4d``.
    namespace: str
    #: The server's connect string chrooted to :attr:`namespace`.
    hosts: str
    #: A connected client under :attr:`namespace`.
    client: Client

    @classmethod
    def setUpClass(cls) -> None:
        """Start (or attach to) the server the test class shares."""
        super().setUpClass()
        cls.zookeeper = start_server()
        cls.addClassCleanup(cls.zookeeper.close)

    async def asyncSetUp(self) -> None:
        """Create the namespace and connect :attr:`client`."""
        await super().asyncSetUp()
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", self._testMethodName)[:80]
        self.namespace = f"{NAMESPACE_ROOT}/{name}-{uuid.uuid4().hex[:8]}"
        self.hosts = self.zookeeper.connect_string + self.namespace
        self._clients: list[Client] = []
        # The superuser can remove whatever a test left, whatever ACL it set.
        self._admin = await open_client(
            self.zookeeper.connect_string, session_timeout=10, auth=[SUPER_AUTH]
        )
        await self._admin.ensure_path(self.namespace)
        self.client = await self.connect()

    async def asyncTearDown(self) -> None:
        """Close every client of the test and remove its namespace."""
        try:
            for client in self._clients:
                await client.close()
            await self._admin.delete(self.namespace, recursive=True)
        finally:
            await self._admin.close()
            await super().asyncTearDown()

    async def connect(self, connect_string: str | None = None, **options: Any) -> Client:
        """A new client with its own session, chrooted to :attr:`namespace`; closed after the
        test. ``connect_string`` defaults to the server's (give a
        :class:`~aiocoord.testing.FaultProxy`'s to put faults in the way); ``options`` are
        :func:`aiocoord.connect`'s."""
        options.setdefault("session_timeout", self.session_timeout)
        client = await open_client(
            (connect_string or self.zookeeper.connect_string) + self.namespace, **options
        )
        self._clients.append(client)
        return client

    async def expire_session(self, client: Client | None = None, *, timeout: float = 10.0) -> None:
        """Expire ``client``'s session (default :attr:`client`) on the server and wait until
        the client has heard (see :func:`aiocoord.testing.expire_client`)."""
        await expire_client(
            client if client is not None else self.client,
            self.zookeeper.connect_string,
            timeout=timeout,
        )
