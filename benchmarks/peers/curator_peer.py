"""Apache Curator (Java): ``InterProcessMutex`` (W1-W3, W8), ``CuratorCache`` (W4),
``TreeCache`` (W6: Curator 5.4's ``CuratorCache`` cannot load more than ~65,000 nodes,
CURATOR-690), plain clients (W7) and curator-x-discovery's ``ServiceCache`` (W9), run by
``benchmarks/java/CuratorPeer.java`` in a JVM of its own.

The Java program does the same workloads as the Python peers and prints its raw figures (the
latency samples, counts and times) as one JSON object; this module turns them into the same
metrics. The program is compiled by ``make bench-java`` (``scripts/build-curator-peer``)
against Debian's ``libcurator-*-java`` jars. Times include no JVM start-up: the program
measures inside itself, after connecting, as the Python peers do after their imports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.common import Unavailable, cpu_us_per_op, rate, summary

ROOT = Path(__file__).resolve().parents[2]
#: Where ``make bench-java`` puts the compiled program.
BUILD = ROOT / "benchmarks" / "java" / "build"
#: Debian's jars: Curator 5.4 and the ZooKeeper client it runs on.
JARS = (
    "curator-client.jar",
    "curator-framework.jar",
    "curator-recipes.jar",
    "curator-x-discovery.jar",
    "jackson-core.jar",
    "jackson-databind.jar",
    "jackson-annotations.jar",
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "guava.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
)
JAVA_DIR = Path(os.environ.get("AIOCOORD_JAVA_LIBS", "/usr/share/java"))
#: A JVM of the size the test servers get; the client needs little.
JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC")


def classpath() -> str:
    """The program's classpath; Unavailable when a jar or the build is missing."""
    if shutil.which("java") is None:
        raise Unavailable("no 'java' on PATH (install a JRE >= 11)")
    missing = [jar for jar in JARS if not (JAVA_DIR / jar).exists()]
    if missing:
        raise Unavailable(
            f"missing {', '.join(missing)} in {JAVA_DIR}; run: make bench-java "
            "(it installs libcurator-client-java, -framework-java, -recipes-java)"
        )
    if not (BUILD / "CuratorPeer.class").exists():
        raise Unavailable("CuratorPeer is not compiled; run: make bench-java")
    return os.pathsep.join([str(BUILD), *(str(JAVA_DIR / jar) for jar in JARS)])


def version() -> str:
    """Curator's version, from its jar's name."""
    jars = sorted(JAVA_DIR.glob("curator-framework-*.jar"))
    return jars[-1].stem.removeprefix("curator-framework-") if jars else "unknown"


def _run(workload: str, connect: str, params: dict[str, Any]) -> dict[str, Any]:
    args = [f"{key}={value}" for key, value in params.items() if not isinstance(value, list)]
    command = ["java", *JVM_OPTIONS, "-cp", classpath(), "CuratorPeer", workload]
    done = subprocess.run(
        [*command, f"connect={connect}", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-4:])
        raise RuntimeError(f"CuratorPeer {workload} exited with {done.returncode}: {tail}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def w1(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """One client, one InterProcessMutex: acquire + release in a loop."""
    raw = _run("w1", connect, p)
    cycles = raw["cycle_ms"]
    return {
        "metrics": {
            "ops_per_s": rate(len(cycles), raw["elapsed"]),
            **summary(cycles),
            **summary(raw["acquire_ms"], "acquire_"),
            "client_cpu_us_per_op": cpu_us_per_op(raw["cpu_s"], len(cycles)),
        },
        "samples": {"cycle_ms": cycles},
    }


def w2(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``clients`` clients, each with its own session and mutex, hammer one lock path."""
    raw = _run("w2", connect, p)
    return {
        "metrics": {
            "acq_per_s": rate(raw["acquisitions"], p["duration"]),
            **summary(raw["handoff_ms"], "handoff_"),
            "violations": raw["violations"],
            "client_cpu_us_per_op": cpu_us_per_op(raw["cpu_s"], raw["acquisitions"]),
        },
        "samples": {"handoff_ms": raw["handoff_ms"]},
    }


def w3(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``n`` threads, each with its own mutex on one client, acquire once and release."""
    raw = _run("w3", connect, p)
    return {
        "metrics": {
            "wall_s": raw["wall_s"],
            "acquisitions": raw["acquisitions"],
            "violations": raw["violations"],
        },
        "samples": {},
    }


def w4(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """CuratorCache over ``children`` children: load time, then setData-to-event latency."""
    raw = _run("w4", connect, p)
    return {
        "metrics": {"load_s": raw["load_s"], **summary(raw["update_ms"], "update_")},
        "samples": {"update_ms": raw["update_ms"]},
    }


def w6(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """TreeCache over a tree of ``nodes`` leaves: load time and RSS, then paced updates.

    TreeCache, not CuratorCache: Curator 5.4's CuratorCache counts its reads in flight in a
    ``Phaser`` (at most 65,535 parties) and drops every read past that, so it reports itself
    initialized with ~65,600 of W6's 100,101 nodes (CURATOR-690, fixed in 5.6.0)."""
    raw = _run("w6", connect, p)
    return {
        "metrics": {
            "load_s": raw["load_s"],
            "cache_rss_mb": raw["cache_rss_mb"],
            **summary(raw["update_ms"], "update_"),
            "client_cpu_us_per_op": cpu_us_per_op(raw["cpu_s"], p["updates"]),
            "peak_rss_mb": raw["peak_rss_mb"],
        },
        "samples": {"update_ms": raw["update_ms"]},
    }


def w7(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``sessions`` clients on the ensemble, one member SIGKILLed: time until all are back."""
    raw = _run("w7", connect, p)
    back = raw["back_s"]
    return {
        "metrics": {
            "sessions": raw["sessions"],
            "moved": raw["moved"],
            "all_back_s": max(back),
            "back_p50_s": summary([t * 1000 for t in back])["p50_ms"] / 1000,
            "expiries": raw["expiries"],
            "same_sessions": raw["same_sessions"],
            "client_cpu_ms": raw["cpu_s"] * 1000,
            "peak_rss_mb": raw["peak_rss_mb"],
        },
        "samples": {},
    }


def w8(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``locks`` InterProcessMutexes on distinct paths, acquired one after another, held."""
    raw = _run("w8", connect, p)
    n = p["locks"]
    return {
        "metrics": {
            "acquire_per_s": rate(n, raw["acquire_s"]),
            "release_per_s": rate(n, raw["release_s"]),
            "kb_per_lock": raw["held_mb"] * 1024 / n,
            "client_cpu_us_per_op": cpu_us_per_op(raw["cpu_s"], n),
            "peak_rss_mb": raw["peak_rss_mb"],
        },
        "samples": {},
    }


def w9(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """ServiceCache over ``instances`` instances; paced updates: update-to-event latency."""
    raw = _run("w9", connect, p)
    return {
        "metrics": {
            "load_s": raw["load_s"],
            **summary(raw["event_ms"], "event_"),
            "client_cpu_us_per_op": cpu_us_per_op(raw["cpu_s"], p["updates"]),
            "client_cpu_ms": raw["cpu_s"] * 1000,
            "peak_rss_mb": raw["peak_rss_mb"],
        },
        "samples": {"event_ms": raw["event_ms"]},
    }


def _unavailable(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    raise Unavailable("not measured for Curator (the Java peer covers W1-W4 and W6-W9)")


w0_cycle = w0_pipelined = w5 = _unavailable
