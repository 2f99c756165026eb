"""Finding a ZooKeeper distribution and a ``java`` to run it with.

Three layouts are known, looked at in this order:

* ``$ZOOKEEPER_HOME``: an unpacked ``apache-zookeeper-*-bin`` tarball (``lib/*.jar``, ``conf/``);
* the Debian/Ubuntu package: ``/usr/share/java/zookeeper.jar``, whose manifest pulls in its
  dependencies;
* a tarball unpacked under ``/opt`` (``/opt/*zookeeper*/lib``).
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aiocoord.errors import ZooKeeperNotFoundError

__all__ = ["DEBIAN_JAR", "Distribution", "find_distribution", "install_hint"]

DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")
OPT_GLOB = "/opt/*zookeeper*/lib"


@dataclass(frozen=True)
class Distribution:
    """A ZooKeeper installation the test servers can launch.

    ``classpath`` is complete, logging binding included; ``log_config`` names the kind of
    logging configuration the JVM needs (``"logback"``, ``"log4j"``, ``"slf4j-simple"`` or
    ``"none"``) so that the server logs to its standard output, which the launcher sends to a
    log file.
    """

    #: the ``java`` executable that runs the servers (``$JAVA_HOME/bin/java``, else the
    #: one on ``PATH``)
    java: str
    #: the jars the servers run with, ZooKeeper's and a logging binding's
    classpath: tuple[str, ...]
    #: where the distribution was found, for messages: ``"ZOOKEEPER_HOME=<dir>"``, the
    #: Debian jar's path, or the ``/opt/.../lib`` directory
    source: str
    #: the kind of logging configuration the JVM needs: ``"logback"``, ``"log4j"``,
    #: ``"slf4j-simple"`` or ``"none"``
    log_config: str

    def logging_options(self, workdir: Path) -> list[str]:
        """JVM options that send the server's log to standard output (files go in ``workdir``)."""
        if self.log_config == "logback":
            config = workdir / "logback.xml"
            config.write_text(_LOGBACK_XML)
            return [f"-Dlogback.configurationFile={config}"]
        if self.log_config == "log4j":
            config = workdir / "log4j.properties"
            config.write_text(_LOG4J_PROPERTIES)
            return [f"-Dlog4j.configuration=file:{config}"]
        if self.log_config == "slf4j-simple":
            return [
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            ]
        return []


_LOGBACK_XML = """<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="OUT"/></root>
</configuration>
"""

_LOG4J_PROPERTIES = """log4j.rootLogger=INFO, OUT
log4j.appender.OUT=org.apache.log4j.ConsoleAppender
log4j.appender.OUT.layout=org.apache.log4j.PatternLayout
log4j.appender.OUT.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p [%t] %c{1} - %m%n
"""


def install_hint() -> str:
    """How to get a ZooKeeper for the tests, as a few lines meant for an error message."""
    return (
        "To get one:\n"
        "  run ./scripts/install-zookeeper (as root on Debian/Ubuntu: installs the package), or\n"
        "  apt-get install zookeeper   (gives /usr/share/java/zookeeper.jar), or\n"
        "  unpack apache-zookeeper-3.8.x-bin.tar.gz and export ZOOKEEPER_HOME=<that dir>, or\n"
        "  use a server that is already running: "
        "AIOCOORD_ZK_BACKEND=external AIOCOORD_ZK_CONNECT=host:port"
    )


def find_distribution(
    environ: Mapping[str, str] | None = None,
    *,
    debian_jar: Path = DEBIAN_JAR,
    opt_glob: str = OPT_GLOB,
) -> Distribution:
    """Locate ZooKeeper and ``java``; raise :class:`ZooKeeperNotFoundError` saying how to install.

    ``environ`` defaults to ``os.environ``; it and the two paths are parameters so that the
    lookup can be pointed elsewhere (tests do). A ``ZOOKEEPER_HOME`` that is set but holds no
    ZooKeeper jar is an error, not a reason to look elsewhere: it was asked for explicitly.
    """
    env = os.environ if environ is None else environ
    home = env.get("ZOOKEEPER_HOME")
    if home:
        jars = _tarball_jars(Path(home))
        if not jars:
            raise ZooKeeperNotFoundError(
                f"ZOOKEEPER_HOME={home} holds no ZooKeeper jar "
                f"(expected {home}/lib/zookeeper-*.jar); point it at an unpacked "
                "apache-zookeeper-*-bin tarball or unset it.\n" + install_hint()
            )
        return _with_java(jars, f"ZOOKEEPER_HOME={home}", env)
    if debian_jar.is_file():
        classpath = [str(debian_jar)]
        # The package's manifest carries slf4j-api but no binding; slf4j-simple logs to stdout.
        simple = debian_jar.parent / "slf4j-simple.jar"
        if simple.is_file():
            classpath.append(str(simple))
        return _with_java(classpath, str(debian_jar), env)
    for lib in sorted(glob.glob(opt_glob), reverse=True):
        jars = _tarball_jars(Path(lib).parent)
        if jars:
            return _with_java(jars, lib, env)
    raise ZooKeeperNotFoundError(
        "no ZooKeeper distribution found (looked at $ZOOKEEPER_HOME, which is unset; "
        f"{debian_jar}; {opt_glob}).\n" + install_hint()
    )


def _tarball_jars(home: Path) -> list[str]:
    jars = sorted(glob.glob(str(home / "lib" / "*.jar"))) + sorted(
        glob.glob(str(home / "zookeeper-*.jar"))
    )
    if not any(Path(j).name.startswith("zookeeper-") for j in jars):
        return []
    # The distribution's own jute goes first: a Debian zookeeper jar's manifest names
    # /usr/share/java/zookeeper-jute.jar, and the JVM searches a manifest's Class-Path before
    # the jars after it, so a 3.9 server beside the OS's 3.8 package would load 3.8's records.
    return sorted(jars, key=lambda jar: not Path(jar).name.startswith("zookeeper-jute"))


def _logging_kind(classpath: list[str]) -> str:
    names = [Path(j).name for j in classpath]
    if any(n.startswith("logback-classic") for n in names):
        return "logback"
    if any(n.startswith(("slf4j-log4j12", "slf4j-reload4j")) for n in names):
        return "log4j"
    if any(n.startswith("slf4j-simple") for n in names):
        return "slf4j-simple"
    return "none"


def _with_java(classpath: list[str], source: str, env: Mapping[str, str]) -> Distribution:
    java = _find_java(env)
    return Distribution(
        java=java, classpath=tuple(classpath), source=source, log_config=_logging_kind(classpath)
    )


def _find_java(env: Mapping[str, str]) -> str:
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java", path=env.get("PATH"))
    if found:
        return found
    raise ZooKeeperNotFoundError(
        "ZooKeeper was found but no 'java' to run it: install a JRE >= 11 "
        "(Debian/Ubuntu: apt-get install default-jre-headless) or set JAVA_HOME."
    )
