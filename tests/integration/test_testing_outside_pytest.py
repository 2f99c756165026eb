"""aiocoord's test servers without pytest: ``ZooKeeperTestCase`` for ``unittest`` suites (a
client under a namespace of the test's own, more clients, real session expiry), and
``ZooKeeperServer``/``ZooKeeperEnsemble`` under plain asyncio. examples/test_with_unittest.py
is also collected by pytest (with its ensemble class)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import aiocoord
from aiocoord.testing import ServerHandle

#: The checkout whose aiocoord this run imports (the subprocesses import the same).
CHECKOUT = Path(aiocoord.__file__).resolve().parents[1]


def _env(zookeeper: ServerHandle) -> dict[str, str]:
    # The harness attaches to this session's server rather than starting one of its own.
    return {
        **os.environ,
        "PYTHONPATH": str(CHECKOUT),
        "AIOCOORD_ZK_BACKEND": "external",
        "AIOCOORD_ZK_CONNECT": zookeeper.connect_string,
    }


async def _run(*argv: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *argv,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode()


async def test_the_unittest_example_runs_under_unittest(zookeeper: ServerHandle) -> None:
    code, out = await _run(
        "-m",
        "unittest",
        "-v",
        "test_with_unittest.LockTest",
        cwd=CHECKOUT / "examples",
        env=_env(zookeeper),
    )
    assert code == 0, out
    assert "Ran 2 tests" in out and out.rstrip().endswith("OK"), out


async def test_the_harness_isolates_tests_and_cleans_up(
    zookeeper: ServerHandle, tmp_path: Path
) -> None:
    # Two tests write the same path under their namespaces, one expires a second client's
    # session; afterwards nothing of either is left on the server.
    (tmp_path / "test_suite.py").write_text(
        textwrap.dedent(
            """
            import aiocoord
            from aiocoord.testing import ZooKeeperTestCase

            class Suite(ZooKeeperTestCase):
                async def test_one(self):
                    await self.client.create("/same", b"one")
                    print("NS", self.namespace, flush=True)
                    self.assertTrue(self.hosts.endswith(self.namespace))

                async def test_two(self):
                    await self.client.create("/same", b"two")
                    other = await self.connect()
                    before = other.session_id
                    await self.expire_session(other)
                    self.assertNotEqual(other.session_id, before)
                    self.assertEqual((await other.get("/same"))[0], b"two")
                    print("NS", self.namespace, flush=True)
            """
        )
    )
    code, out = await _run("-m", "unittest", "-v", "test_suite", cwd=tmp_path, env=_env(zookeeper))
    assert code == 0, out
    namespaces = re.findall(r"NS (\S+)", out)
    assert len(set(namespaces)) == 2, out
    async with aiocoord.connect(zookeeper.connect_string) as client:
        for namespace in namespaces:
            assert await client.exists(namespace) is None, namespace


def test_the_plain_asyncio_block_of_the_testing_page_runs_as_shown(tmp_path: Path) -> None:
    # docs/testing.md's block starts a server of its own, so test_doc_blocks leaves it to us.
    page = (CHECKOUT / "docs" / "testing.md").read_text()
    found = re.search(r"Under plain asyncio.*?```python\n(.*?)```\n\n```text\n(.*?)```", page, re.S)
    assert found, "docs/testing.md: the plain asyncio block and its output"
    script = tmp_path / "plain.py"
    script.write_text(found.group(1))
    done = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == found.group(2).splitlines()
