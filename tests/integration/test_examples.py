"""Every example in examples/ runs to completion against a real server and says it worked.

Each runs as a subprocess, as a user would run it, under a namespace of its own (a chroot in
the connect string). ``examples/test_with_fixtures.py`` is a pytest file and is collected by
pytest itself (``testpaths`` includes ``examples``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

import aiocoord
from aiocoord.testing import ServerHandle

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: The checkout whose aiocoord this run imports (a subprocess imports the same).
CHECKOUT = Path(aiocoord.__file__).resolve().parents[1]

#: Each example script and a line its output must contain when it worked.
EXPECTED = {
    "lock_service.py": "slow-instance: its late write was refused",
    "cache_stream.py": "events: 3 added, 1 updated, 3 removed",
    "leader_worker.py": "one leader at a time, tokens increasing: yes",
    "rw_lock.py": "reader and writer together: never, torn reads: 0",
    "queue_workers.py": "jobs taken again after a crash: 1",
    "asgi_service.py": "jobs done: 10 of 10, tokens increasing: True",
}


async def run_example(
    name: str, args: list[str], env: dict[str, str] | None = None, timeout: float = 60.0
) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / name),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        raise AssertionError(f"{name} did not finish within {timeout} s:\n{out.decode()}") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode()


@pytest.fixture
def example_hosts(zookeeper: ServerHandle, zk_connect: object, zk_namespace: str) -> str:
    """A connect string chrooted to this test's namespace (zk_connect creates and removes it)."""
    return zookeeper.connect_string + zk_namespace


def test_every_example_script_is_run_here() -> None:
    scripts = {p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("test_")}
    assert scripts == set(EXPECTED)
    assert (EXAMPLES / "test_with_fixtures.py").exists()


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_example_runs_against_a_server(name: str, example_hosts: str) -> None:
    code, out = await run_example(name, ["--connect", example_hosts])
    assert code == 0, out
    assert EXPECTED[name] in out, out


async def test_example_takes_the_connect_string_from_the_environment(example_hosts: str) -> None:
    code, out = await run_example("cache_stream.py", [], env={"AIOCOORD_CONNECT": example_hosts})
    assert code == 0, out
    assert EXPECTED["cache_stream.py"] in out, out


async def test_the_fixtures_example_runs_in_a_strict_mode_project(
    zookeeper: ServerHandle, tmp_path: Path
) -> None:
    # A project of its own: no conftest, pytest-asyncio's default mode (strict), the example
    # copied as a user would; against this session's server (an external one to the plugin).
    example = CHECKOUT / "examples" / "test_with_fixtures.py"
    ini = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    (tmp_path / "pytest.ini").write_text(ini)
    (tmp_path / "test_with_fixtures.py").write_text(example.read_text())
    env = {
        **os.environ,
        "PYTHONPATH": str(CHECKOUT),
        "AIOCOORD_ZK_BACKEND": "external",
        "AIOCOORD_ZK_CONNECT": zookeeper.connect_string,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_with_fixtures.py",
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    text = out.decode()
    assert proc.returncode == 0, text
    assert "6 passed" in text, text
