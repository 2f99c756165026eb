"""How a ``unittest`` suite tests code that uses ZooKeeper: aiocoord's servers without pytest.

* ``ZooKeeperTestCase`` (an ``IsolatedAsyncioTestCase``): a server per test class, and per
  test ``self.client`` under a namespace of its own, ``await self.connect()`` for more
  clients, ``await self.expire_session(client)`` to expire one for real;
* ``ZooKeeperEnsemble(3)``: a 3-member quorum on loopback, started and closed by the class,
  members killed and restarted by the tests.

Run with ``python -m unittest examples/test_with_unittest.py`` (pytest collects it too). The
server backend is chosen by ``AIOCOORD_ZK_BACKEND`` as for the pytest fixtures.
"""

from __future__ import annotations

import unittest

import aiocoord
from aiocoord.testing import ZooKeeperEnsemble, ZooKeeperTestCase, session_of


class LockTest(ZooKeeperTestCase):
    async def test_a_second_client_waits_for_the_first(self) -> None:
        other = await self.connect()
        async with aiocoord.Lock(self.client, "/jobs/report"):
            assert not await aiocoord.Lock(other, "/jobs/report").acquire(blocking=False)
        async with aiocoord.Lock(other, "/jobs/report") as held:
            assert held.is_held

    async def test_the_lock_is_lost_when_the_session_expires(self) -> None:
        lock = aiocoord.Lock(self.client, "/jobs/report")
        await lock.acquire()
        await self.expire_session()
        assert await lock.lost.wait(timeout=10) == aiocoord.State.LOST
        assert not lock.is_held


class EnsembleTest(unittest.IsolatedAsyncioTestCase):
    ensemble: ZooKeeperEnsemble

    @classmethod
    def setUpClass(cls) -> None:
        cls.ensemble = ZooKeeperEnsemble(3)
        cls.ensemble.start()  # serving, with a leader, on return
        cls.addClassCleanup(cls.ensemble.close)

    async def test_a_session_survives_the_loss_of_its_server(self) -> None:
        async with aiocoord.connect(self.ensemble.connect_string, session_timeout=10) as client:
            await client.create("/survivor", b"x", ephemeral=True)
            session = client.session_id
            server = session_of(client).server
            assert server is not None
            member = self.ensemble.index_of_port(server.port)  # the one this client talks to
            self.ensemble.kill(member)
            try:
                await client.wait_for(aiocoord.State.SUSPENDED, timeout=10)
                await client.wait_for(aiocoord.State.CONNECTED, timeout=20)
                assert client.session_id == session
                assert (await client.get("/survivor"))[0] == b"x"
            finally:
                self.ensemble.restart(member)


if __name__ == "__main__":
    unittest.main()
