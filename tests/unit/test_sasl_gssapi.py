"""The GSSAPI (Kerberos) SASL config is checked before anything is sent, and a missing
``gssapi`` package is refused with the command that installs it."""

from __future__ import annotations

import sys

import pytest

from aiocoord import GSSAPI, connect
from aiocoord.errors import (
    BadArgumentsError,
    CoordinationError,
    InvalidTypeError,
    MissingDependencyError,
)


@pytest.mark.parametrize(
    "kwargs",
    [{"service": None}, {"service": 5}, {"principal": b"alice"}, {"hostname": 1.5}],
)
def test_wrong_types_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidTypeError):
        GSSAPI(**kwargs)  # type: ignore[arg-type]  # the wrong types are the point


@pytest.mark.parametrize(
    "kwargs",
    [
        {"service": ""},
        {"service": "zookeeper/host"},
        {"service": "zookeeper@REALM"},
        {"principal": ""},
        {"principal": " alice"},
        {"hostname": "zk@REALM"},
        {"hostname": "a/b"},
    ],
)
def test_bad_names_are_refused(kwargs: dict[str, str]) -> None:
    with pytest.raises(BadArgumentsError):
        GSSAPI(**kwargs)


def test_target_names_the_connected_host_unless_a_hostname_is_given() -> None:
    assert GSSAPI().target("zk1.example.com") == "zookeeper@zk1.example.com"
    assert GSSAPI(service="zk", hostname="zk.example.com").target("10.0.0.1") == "zk@zk.example.com"


async def test_a_missing_gssapi_package_is_refused_before_connecting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gssapi", None)  # what an import finds when it is absent
    # Port 1 has no server: the refusal must come before any connection is tried.
    with pytest.raises(MissingDependencyError, match=r"pip install 'aiocoord\[kerberos\]'") as e:
        await connect("127.0.0.1:1", sasl=GSSAPI(), connect_timeout=1)
    assert isinstance(e.value, ImportError)
    assert isinstance(e.value, CoordinationError)
