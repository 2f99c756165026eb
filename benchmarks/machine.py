"""What the figures were measured on: machine, Python, ZooKeeper and peer versions."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

#: Distribution name and concurrency model of each peer.
_PEERS = {
    "aiocoord": ("aiocoord", "asyncio"),
    "kazoo": ("kazoo", "threads (threading handler)"),
    "aiozk": ("aiozk", "asyncio"),
    "aiocoord_uvloop": ("aiocoord", "asyncio on uvloop"),
    "curator": ("", "Java 17 threads (Apache Curator; version from its jar)"),
}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def git_commit() -> str | None:
    """The commit of the code being measured (``-dirty`` with local changes), if in git."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (other work on the machine skews the figures)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def describe() -> dict[str, Any]:
    """The machine and interpreter."""
    return {
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gb": _memory_gb(),
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "load_average_start": load_average(),
    }


def peer_versions(peers: list[str]) -> dict[str, Any]:
    """Each peer's installed version (None when it is not installed) and concurrency model."""
    out: dict[str, Any] = {}
    for peer in peers:
        dist, model = _PEERS[peer]
        version: str | None
        if peer == "curator":
            from benchmarks.peers.curator_peer import version as curator_version

            version = curator_version()
        else:
            try:
                version = metadata.version(dist)
            except metadata.PackageNotFoundError:
                version = None
            if peer == "aiocoord_uvloop":
                try:
                    version = f"{version} on uvloop {metadata.version('uvloop')}"
                except metadata.PackageNotFoundError:
                    version = None
        out[peer] = {"version": version, "model": model}
    return out


def _four_letter(host: str, port: int, command: str) -> str:
    with socket.create_connection((host, port), timeout=5.0) as sock:
        sock.sendall(command.encode("ascii"))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def member_sessions(port: int, host: str = "127.0.0.1") -> int:
    """How many sessions the server on ``port`` serves now (``cons`` lines with a session id,
    so not the connection asking)."""
    return sum("sid=" in line for line in _four_letter(host, port, "cons").splitlines())


def describe_server(connect: str, server: Any, settings: str = "") -> dict[str, Any]:
    """The standalone server: version (from ``srvr``) and how it was started (``settings``:
    its :meth:`benchmarks.settings.ServerSettings.describe`)."""
    host, _, port = connect.split(",")[0].rpartition(":")
    info: dict[str, Any] = {
        "connect": connect,
        "started_by": "benchmarks (aiocoord.testing.ZooKeeperServer)" if server else "external",
    }
    try:
        for line in _four_letter(host or "127.0.0.1", int(port), "srvr").splitlines():
            if line.startswith("Zookeeper version:"):
                # Debian's build says "3.8.0-${mvngit.commit.id}": keep the release only.
                info["version"] = line.split(":", 1)[1].split(",")[0].split("-")[0].strip()
    except (OSError, ValueError) as exc:
        info["version"] = f"unknown ({exc})"
    if server is not None:
        info["config"] = f"standalone, {settings}, full JIT, -Xmx1g"
    return info
