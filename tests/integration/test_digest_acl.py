"""digest_acl / digest_id (issue 28): kazoo's make_digest_acl, Curator's generateDigest. The
id must be the one ZooKeeper computes (checked against its Java code for a few pairs), and an
ACL made with it must let that user in on a real server and keep everyone else out."""

from __future__ import annotations

import pytest
from support import Factory, JavaPeers, ask_java_peer

import aiocoord
from aiocoord import ACL, digest_acl, digest_id
from aiocoord.errors import BadArgumentsError, InvalidTypeError, NoAuthError

PAIRS = [
    ("bob", "s3cret"),
    ("alice", ""),
    ("x", "pass:with:colons"),
    ("ünï", "pässwörd ✓"),
    ("super", "a" * 300),
]


@pytest.fixture
def curator_tools(java_peers: JavaPeers) -> list[str]:
    """The command that runs CuratorToolsPeer (ZooKeeper's digest is the same in every
    release: one Curator version's peers do)."""
    return java_peers.command("CuratorToolsPeer")


def test_digest_id_is_what_zookeepers_java_generates(curator_tools: list[str]) -> None:
    requests = [f"digest {f'{user}:{password}'.encode().hex()}" for user, password in PAIRS]
    java = ask_java_peer(curator_tools, requests)
    assert java == [digest_id(user, password) for user, password in PAIRS]


async def test_a_digest_acl_lets_its_user_in_and_no_one_else(zk_connect: Factory) -> None:
    owner = await zk_connect(auth=[("digest", "bob:s3cret")])
    await owner.create(
        "/private", b"for bob", acl=[digest_acl("bob", "s3cret", ACL.READ | ACL.WRITE)]
    )
    acl, _ = await owner.get_acl("/private")
    # Without ADMIN on the node, the server masks the digest (ZOOKEEPER-1392): the user stays.
    assert acl == [ACL(ACL.READ | ACL.WRITE, "digest", "bob:x")]
    await owner.create("/bobs", acl=[digest_acl("bob", "s3cret")])
    assert (await owner.get_acl("/bobs"))[0] == [ACL(ACL.ALL, "digest", digest_id("bob", "s3cret"))]

    same_user = await zk_connect()
    await same_user.add_auth("digest", "bob:s3cret")
    assert (await same_user.get("/private"))[0] == b"for bob"
    await same_user.set("/private", b"written")
    with pytest.raises(NoAuthError):  # WRITE and READ only: not DELETE's parent, not ADMIN
        await same_user.set_acl("/private", aiocoord.OPEN_ACL_UNSAFE)

    wrong_password = await zk_connect(auth=[("digest", "bob:guess")])
    anonymous = await zk_connect()
    for other in (wrong_password, anonymous):
        with pytest.raises(NoAuthError):
            await other.get("/private")
        with pytest.raises(NoAuthError):
            await other.set("/private", b"mine")


def test_bad_input_is_refused_before_anything_is_made() -> None:
    with pytest.raises(BadArgumentsError):
        digest_id("a:b", "pw")  # the server splits at the first colon: no one could match
    with pytest.raises(BadArgumentsError):
        digest_id("", "pw")
    with pytest.raises(BadArgumentsError):
        digest_id("bob", "\ud800")
    with pytest.raises(InvalidTypeError):
        digest_id(b"bob", "pw")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        digest_acl("bob", None)  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        digest_acl("bob", "pw", perms=0)
    with pytest.raises(BadArgumentsError):
        digest_acl("bob", "pw", perms=64)
    with pytest.raises(InvalidTypeError):
        digest_acl("bob", "pw", perms="all")  # type: ignore[arg-type]
