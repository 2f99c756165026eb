"""Finding ZooKeeper and java: the layouts found, and the how-to when nothing is."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from aiocoord.errors import ZooKeeperNotFoundError
from aiocoord.testing import find_distribution


def _env(**values: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), **values}


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def test_missing_distribution_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperNotFoundError) as caught:
        find_distribution(
            _env(), debian_jar=tmp_path / "no" / "zookeeper.jar", opt_glob=str(tmp_path / "x*/lib")
        )
    message = str(caught.value)
    for hint in (
        "./scripts/install-zookeeper",
        "apt-get install zookeeper",
        "ZOOKEEPER_HOME",
        "AIOCOORD_ZK_BACKEND=external",
        "AIOCOORD_ZK_CONNECT",
    ):
        assert hint in message


def test_zookeeper_home_pointing_nowhere_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    debian = _touch(tmp_path / "debian" / "zookeeper.jar")
    with pytest.raises(ZooKeeperNotFoundError) as caught:
        find_distribution(_env(ZOOKEEPER_HOME=str(tmp_path / "nowhere")), debian_jar=debian)
    assert f"ZOOKEEPER_HOME={tmp_path / 'nowhere'}" in str(caught.value)
    assert "./scripts/install-zookeeper" in str(caught.value)


def test_tarball_layout_puts_every_lib_jar_on_the_classpath(tmp_path: Path) -> None:
    jars = [
        _touch(tmp_path / "lib" / name)
        for name in ("zookeeper-3.8.4.jar", "zookeeper-jute-3.8.4.jar", "logback-classic-1.2.jar")
    ]
    dist = find_distribution(_env(ZOOKEEPER_HOME=str(tmp_path)))
    assert set(dist.classpath) == {str(j) for j in jars}
    assert dist.log_config == "logback"
    options = dist.logging_options(tmp_path)
    assert options == [f"-Dlogback.configurationFile={tmp_path / 'logback.xml'}"]
    assert "ConsoleAppender" in (tmp_path / "logback.xml").read_text()


def test_the_distributions_own_jute_comes_first(tmp_path: Path) -> None:
    # Debian's 3.9 jar names /usr/share/java/zookeeper-jute.jar (the OS's 3.8) in its
    # manifest, which the JVM searches before the jars after it on the classpath.
    for name in ("slf4j-simple.jar", "zookeeper-3.9.6.jar", "zookeeper-jute-3.9.6.jar"):
        _touch(tmp_path / "lib" / name)
    dist = find_distribution(_env(ZOOKEEPER_HOME=str(tmp_path)))
    assert [Path(j).name for j in dist.classpath] == [
        "zookeeper-jute-3.9.6.jar",
        "slf4j-simple.jar",
        "zookeeper-3.9.6.jar",
    ]


def test_debian_layout_adds_the_slf4j_simple_binding(tmp_path: Path) -> None:
    jar = _touch(tmp_path / "zookeeper.jar")
    simple = _touch(tmp_path / "slf4j-simple.jar")
    dist = find_distribution(_env(), debian_jar=jar)
    assert dist.classpath == (str(jar), str(simple))
    assert dist.log_config == "slf4j-simple"


def test_opt_layout_is_found_last(tmp_path: Path) -> None:
    jar = _touch(tmp_path / "apache-zookeeper-3.8.4-bin" / "lib" / "zookeeper-3.8.4.jar")
    dist = find_distribution(
        _env(), debian_jar=tmp_path / "none.jar", opt_glob=str(tmp_path / "*zookeeper*" / "lib")
    )
    assert dist.classpath == (str(jar),)


def test_no_java_is_reported(tmp_path: Path) -> None:
    jar = _touch(tmp_path / "zookeeper.jar")
    with pytest.raises(ZooKeeperNotFoundError, match="JRE"):
        find_distribution({"PATH": str(tmp_path / "empty")}, debian_jar=jar)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_java_home_wins_over_path(tmp_path: Path) -> None:
    jar = _touch(tmp_path / "zookeeper.jar")
    java = _touch(tmp_path / "jdk" / "bin" / "java")
    java.chmod(0o755)
    dist = find_distribution(_env(JAVA_HOME=str(tmp_path / "jdk")), debian_jar=jar)
    assert dist.java == str(java)
