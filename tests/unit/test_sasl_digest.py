"""SASL DIGEST-MD5 (RFC 2831) against the RFC's own worked example, and its refusals."""

from __future__ import annotations

import pytest

from aiocoord._auth.digest import DigestMD5, parse_directives
from aiocoord.errors import AuthFailedError

# RFC 2831 section 4: the IMAP example.
CHALLENGE = (
    b'realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",'
    b"algorithm=md5-sess,charset=utf-8"
)


def example() -> DigestMD5:
    return DigestMD5(
        "chris", "secret", digest_uri="imap/elwood.innosoft.com", cnonce="OA6MHXh6VqTrRk"
    )


def test_rfc_2831_example_response_and_server_proof() -> None:
    mech = example()
    assert mech.respond(b"") == b""  # no initial response: the client opens empty
    answer = parse_directives(mech.respond(CHALLENGE).decode())  # type: ignore[union-attr]
    assert answer["response"] == "d388dad90d4bbd760a152321f2143af7"
    assert answer["username"] == "chris"
    assert answer["nc"] == "00000001"
    assert answer["qop"] == "auth"
    assert answer["digest-uri"] == "imap/elwood.innosoft.com"
    assert not mech.complete
    assert mech.respond(b"rspauth=ea40f60335c427b5527b84dbabcdfffd") is None
    assert mech.complete


def test_a_server_proof_that_does_not_match_is_refused() -> None:
    mech = example()
    mech.respond(CHALLENGE)
    with pytest.raises(AuthFailedError):
        mech.respond(b"rspauth=00000000000000000000000000000000")
    assert not mech.complete


@pytest.mark.parametrize(
    "challenge",
    [b'realm="r",qop="auth"', b'nonce="n",qop="auth-conf"', b'nonce="n,realm=x', b"garbage"],
)
def test_challenges_it_cannot_answer_are_refused(challenge: bytes) -> None:
    with pytest.raises(AuthFailedError):
        DigestMD5("u", "p").respond(challenge)


def test_directives_with_quoted_commas_and_escapes() -> None:
    assert parse_directives('a="x,y", b=2 ,c="q\\"uote"') == {"a": "x,y", "b": "2", "c": 'q"uote'}
