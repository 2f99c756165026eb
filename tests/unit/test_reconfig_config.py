"""The ensemble configuration's parser and the reconfig request: the text ZooKeeper publishes
in ``/zookeeper/config`` read into members, the member specs written back, the checks made on
reconfig's arguments before anything is sent, and the request's wire layout (against aiozk's
record, which has the same four fields)."""

from __future__ import annotations

import re
import struct
from typing import Any

import pytest
from aiozk import protocol as z

from aiocoord import BadArgumentsError
from aiocoord._session.ensemble_config import parse_member, reconfig_arguments
from aiocoord._wire.data import Stat
from aiocoord._wire.framing import REPLY_HEADER, decode_body
from aiocoord._wire.reads import GetDataResponse
from aiocoord._wire.reconfig import ReconfigRequest
from aiocoord.ensemble import EnsembleConfig, EnsembleMember
from aiocoord.errors import InvalidTypeError

PUBLISHED = (
    "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n"
    "server.3=[::1]:2890:3890:observer;[::1]:2183\n"
    "server.2=10.0.0.2:2889:3889|10.1.0.2:2889:3889;2182\n"
    "group.1=1:2:3\n"
    "version=1000000a7"
)


def test_published_config_reads_into_members_in_id_order() -> None:
    config = EnsembleConfig.parse(PUBLISHED.encode())
    assert config.version == 0x1000000A7
    assert config.raw == PUBLISHED
    assert config.ids == (1, 2, 3)
    one, two, three = config.members
    assert one == EnsembleMember(1, "127.0.0.1", 2888, 3888, "participant", "0.0.0.0", 2181)
    # Several addresses, every one kept; no role means participant; a bare port, no host.
    assert two == EnsembleMember(
        2, "10.0.0.2", 2889, 3889, "participant", None, 2182, (("10.1.0.2", 2889, 3889),)
    )
    assert three == EnsembleMember(3, "::1", 2890, 3890, "observer", "::1", 2183)
    assert config.participants == (one, two)
    assert config.observers == (three,)
    assert config.member(3) is three
    with pytest.raises(KeyError):
        config.member(9)
    # A wildcard or missing client host is reached at the member's quorum host.
    assert config.client_addresses == ("127.0.0.1:2181", "10.0.0.2:2182", "[::1]:2183")
    assert config.connect_string == "127.0.0.1:2181,10.0.0.2:2182,[::1]:2183"


def test_standalone_config_is_empty_with_no_version() -> None:
    config = EnsembleConfig.parse(b"")
    assert (config.members, config.version, config.client_addresses) == ((), -1, ())
    assert config.connect_string == ""


def test_a_member_without_client_address_has_none() -> None:
    member = parse_member("server.5=h:1:2")
    assert (member.client_host, member.client_port, member.client_address) == (None, None, None)
    assert member.spec == "server.5=h:1:2:participant"


@pytest.mark.parametrize(
    "line",
    [
        "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181",
        "server.3=[::1]:2890:3890:observer;[::1]:2183",
        "server.12=host.example:1:2:participant;9",
        "server.4=a:1:2:participant|b:3:4;2181",
        "server.6=a:1:2:observer|[::1]:3:4|c:5:6;[::1]:7",
    ],
)
def test_member_spec_round_trips(line: str) -> None:
    member = parse_member(line)
    assert member.spec == line == str(member)
    assert parse_member(member.spec) == member


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("srv.1=h:1:2;3", "server.<id>="),
        ("server.x=h:1:2;3", "id"),
        ("server.1=h:1;3", "election port"),
        ("server.1=h:1:70000;3", "1..65535"),
        ("server.1=h:1:2:leader;3", "role"),
        ("server.1=[nothost]:1:2;3", "host:port:port"),
        ("server.1=h:1:2;h:p", "client port"),
        ("server.1=h:1:2;[::1:3", "client address"),
        ("version=xyz", "hex"),
        ("server.1=a:1:2:observer|b:3:4:participant;5", "different roles"),
        ("server.1=a:1:2|b:3;5", "election port"),
        ("server.1=a:1:2|;5", "host:port:port"),
        ("server.1=a\x01b:1:2;3", "host:port:port"),
        ("server.1=a\x7fb:1:2;3", "host:port:port"),
        ("server.1=\U0001f600:1:2;3", "host:port:port"),
        ("server.1=\ud800:1:2;3", "host:port:port"),
        ("server.1=h:1:2;a\x1b[2Jb:3", "client address"),
        ("server.1=h:1:2;\U0001f600:3", "client address"),
    ],
)
def test_malformed_lines_are_refused_saying_why(line: str, why: str) -> None:
    parse = EnsembleConfig.parse if line.startswith("version") else parse_member
    with pytest.raises(BadArgumentsError, match=re.escape(why)):
        parse(line)


JOINER = "server.4=127.0.0.1:1:2:participant;127.0.0.1:3"


def test_reconfig_arguments_take_members_strings_and_ids() -> None:
    member = parse_member(JOINER)
    assert reconfig_arguments(member, None, None, -1) == (JOINER, None, None, -1)
    assert reconfig_arguments([JOINER], 5, None, 7) == (JOINER, "5", None, 7)
    assert reconfig_arguments(None, [2, member], None, -1) == (None, "2,4", None, -1)
    two = "server.5=h:1:2:observer;h:3"
    assert reconfig_arguments(None, None, [JOINER, two], -1) == (None, None, f"{JOINER},{two}", -1)
    # One string may list several, comma-separated, as ZooKeeper's CLI takes them.
    assert reconfig_arguments(f"{JOINER},{two}", None, None, -1)[0] == f"{JOINER},{two}"
    # A member on two networks is sent with both addresses (the second was lost).
    multi = "server.6=a:1:2|b:3:4;2181"
    assert reconfig_arguments([multi], None, None, -1)[0] == (
        "server.6=a:1:2:participant|b:3:4;2181"
    )


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((JOINER, None, [JOINER], -1), BadArgumentsError, "cannot be combined"),
        ((None, 3, [JOINER], -1), BadArgumentsError, "cannot be combined"),
        ((None, None, None, -1), BadArgumentsError, "needs joining, leaving or new_members"),
        (([], None, None, -1), BadArgumentsError, "empty"),
        (([""], None, None, -1), BadArgumentsError, "names no server"),
        (("", None, None, -1), BadArgumentsError, "names no server"),
        (([" , "], None, None, -1), BadArgumentsError, "names no server"),
        ((None, None, [""], -1), BadArgumentsError, "names no server"),
        ((None, [], None, -1), BadArgumentsError, "empty"),
        (([JOINER, JOINER], None, None, -1), BadArgumentsError, "more than once"),
        ((None, [1, 1], None, -1), BadArgumentsError, "more than once"),
        ((JOINER, 4, None, -1), BadArgumentsError, "both join and leave"),
        (("server.4=h:1:2", None, None, -1), BadArgumentsError, "client address"),
        (("nonsense", None, None, -1), BadArgumentsError, "server spec"),
        ((None, -2, None, -1), BadArgumentsError, "non-negative"),
        ((None, 1, None, -2), BadArgumentsError, "from_config"),
        ((None, 1, None, True), InvalidTypeError, "from_config"),
        ((None, "1", None, -1), InvalidTypeError, "server id"),
        ((None, [True], None, -1), InvalidTypeError, "server ids"),
        ((42, None, None, -1), InvalidTypeError, "joining"),
        (([42], None, None, -1), InvalidTypeError, "joining"),
        ((None, None, {JOINER}, -1), InvalidTypeError, "new_members"),
        (
            (EnsembleMember(4, "h", 1, 99999, "participant", "h", 3), None, None, -1),
            BadArgumentsError,
            "1..65535",
        ),
        (
            (EnsembleMember(-4, "h", 1, 2, "observer", "h", 3), None, None, -1),
            BadArgumentsError,
            "id",
        ),
    ],
)
def test_bad_reconfig_arguments_are_refused(
    args: tuple[Any, Any, Any, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        reconfig_arguments(*args)


@pytest.mark.parametrize(
    ("joining", "leaving", "members", "config_id"),
    [
        (JOINER, "2,3", None, -1),
        (None, None, f"{JOINER},server.5=h:1:2;3", 2**40),
        ("", None, None, 0),
    ],
)
def test_reconfig_request_matches_aiozk_and_writes_null_for_what_is_not_given(
    joining: str | None, leaving: str | None, members: str | None, config_id: int
) -> None:
    ours = ReconfigRequest(joining, leaving, members, config_id)
    theirs = z.ReconfigRequest(
        joining_servers=joining,
        leaving_servers=leaving,
        new_members=members,
        current_config_id=config_id,
    )
    raw = theirs.serialize(9)
    assert ours.frame(9) == struct.pack("!i", len(raw)) + raw
    assert ReconfigRequest.decode(raw, 8) == (ours, len(raw))
    null = struct.pack("!i", -1)
    assert ours.encode().count(null) >= [joining, leaving, members].count(None)


def test_reconfig_reply_is_the_new_config_and_its_stat() -> None:
    # aiozk reads this reply as a bare stat; the server sends getData's reply (data + stat).
    stat = Stat(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    reply = GetDataResponse(PUBLISHED.encode(), stat)
    frame = REPLY_HEADER.pack(1, 2, 0) + reply.encode()
    assert decode_body(ReconfigRequest(None, "3", None), frame) == reply
