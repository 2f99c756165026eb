"""Typed models without a server: path templates, the serializers (JSON as Jackson writes
it, pydantic, msgspec), schema checks, and what a node that does not decode becomes."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Optional, TypedDict

import pytest

from aiocoord import CreateMode, Stat
from aiocoord.errors import (
    BadArgumentsError,
    CoordinationError,
    InvalidPathError,
    InvalidTypeError,
    ModelDecodeError,
    ModelEncodeError,
    SchemaViolationError,
)
from aiocoord.modeled import (
    JsonSerializer,
    Model,
    MsgspecSerializer,
    PathTemplate,
    PydanticSerializer,
    Schema,
    SchemaSet,
    serializer_for,
)

UTC = datetime.UTC


class Tier(enum.Enum):
    FREE = 1
    PRO = 2


@dataclass(frozen=True)
class Limits:
    max_jobs: int = field(metadata={"json": "maxJobs"})
    burst: float


@dataclass(frozen=True)
class Tenant:
    name: str
    tier: Tier
    limits: Limits
    tags: list[str]
    owner: Optional[str]  # noqa: UP045 - the spelling of older code, read the same
    created: datetime.datetime
    quota: dict[str, int] = field(default_factory=dict)
    note: str | None = None


class Endpoint(TypedDict):
    host: str
    port: int


class Service(TypedDict, total=False):
    name: str
    endpoints: list[Endpoint]


def _tenant() -> Tenant:
    return Tenant(
        name="t1",
        tier=Tier.PRO,
        limits=Limits(10, 2.5),
        tags=["eu", "ü"],
        owner=None,
        created=datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
        quota={"cpu": 4},
    )


# --- templates -------------------------------------------------------------------------


def test_a_template_resolves_each_parameter_as_one_checked_segment() -> None:
    t = PathTemplate("/tenants/{tenant}/jobs/{job}")
    assert t.parameters == ("tenant", "job")
    assert t.resolve(tenant="t1", job=7) == "/tenants/t1/jobs/7"
    assert t.resolve({"tenant": "a", "job": "b"}) == "/tenants/a/jobs/b"
    for bad in ("a/b", "..", ".", "", "x\x00"):
        with pytest.raises(InvalidPathError):
            t.resolve(tenant=bad, job="j")
    with pytest.raises(InvalidTypeError):
        t.resolve(tenant=True, job="j")
    with pytest.raises(BadArgumentsError, match=r"needs a value for \['job'\]"):
        t.resolve(tenant="t1")
    with pytest.raises(BadArgumentsError, match="has no parameter"):
        t.resolve(tenant="t1", job="j", other="x")


def test_a_template_matches_paths_and_knows_its_parent_and_children() -> None:
    t = PathTemplate("/tenants/{tenant}/config")
    assert t.match("/tenants/t1/config") == {"tenant": "t1"}
    assert t.match("/tenants/t1") is None
    assert t.match("/tenants/t1/other") is None
    assert t.last_parameter is None
    jobs = PathTemplate("/jobs/{job}")
    assert jobs.last_parameter == "job"
    assert jobs.parent == PathTemplate("/jobs")
    assert PathTemplate("/jobs").child("{job}") == jobs
    assert t.partial({"tenant": "t9"}).pattern == "/tenants/t9/config"
    assert PathTemplate("/").resolve() == "/"


@pytest.mark.parametrize("pattern", ["jobs/{job}", "/a//b", "/a/x{y}", "/a/{b}/{b}", "/a/"])
def test_a_bad_template_is_refused_when_made(pattern: str) -> None:
    with pytest.raises(CoordinationError):
        PathTemplate(pattern)


# --- the JSON serializer ---------------------------------------------------------------


def test_dataclasses_round_trip_in_jacksons_shape() -> None:
    s = JsonSerializer(Tenant)
    data = s.serialize(_tenant())
    # Jackson's defaults: nulls written, a Date as epoch millis, an enum as its name,
    # UTF-8 text unescaped, no spaces.
    assert (
        data
        == (
            '{"name":"t1","tier":"PRO","limits":{"maxJobs":10,"burst":2.5},"tags":["eu","ü"],'
            '"owner":null,"created":1714979289123,"quota":{"cpu":4},"note":null}'
        ).encode()
    )
    back = s.deserialize(data)
    assert back == dataclasses.replace(
        _tenant(), created=_tenant().created.replace(microsecond=123000)
    )
    assert back.created.tzinfo is UTC


def test_reading_fills_left_out_optional_fields_and_ignores_unknown_ones() -> None:
    s = JsonSerializer(Tenant)
    data = (
        b'{"name":"t","tier":"FREE","limits":{"maxJobs":1,"burst":1},"tags":[],'
        b'"created":0,"newerField":{"x":1}}'
    )
    got = s.deserialize(data)
    assert got.owner is None and got.note is None and got.quota == {}
    assert got.limits.burst == 1.0 and isinstance(got.limits.burst, float)
    assert got.created == datetime.datetime(1970, 1, 1, tzinfo=UTC)
    with pytest.raises(ModelDecodeError, match=r"unknown properties \['newerField'\]"):
        JsonSerializer(Tenant, ignore_unknown=False).deserialize(data)


def test_typeddicts_round_trip_with_their_optional_keys_left_out() -> None:
    s = JsonSerializer(Service)
    value: Service = {"name": "api", "endpoints": [{"host": "h", "port": 80}]}
    assert s.serialize(value) == b'{"name":"api","endpoints":[{"host":"h","port":80}]}'
    assert s.deserialize(s.serialize(value)) == value
    assert s.deserialize(b"{}") == {}
    with pytest.raises(ModelDecodeError, match=r"endpoints\[0\]: missing \['port'\]"):
        s.deserialize(b'{"endpoints":[{"host":"h"}]}')


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1,2]", "expected an object, got an array"),
        (b'{"name":5}', "name: expected a string, got the number 5"),
        (b'{"name":"t","tier":"GOLD"}', "tier: 'GOLD' is no Tier"),
        (b"NaN", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (
            b'{"name":"t","tier":"FREE","limits":{"maxJobs":true,"burst":1},"tags":[],'
            b'"owner":null,"created":0}',
            "limits.max_jobs: expected an integer, got a boolean",
        ),
        (
            b'{"name":"t","tier":"FREE","limits":{"maxJobs":1,"burst":1},"tags":[1],'
            b'"owner":null,"created":0}',
            r"tags\[0\]: expected a string",
        ),
        (
            b'{"name":"t","tier":"FREE","limits":{"maxJobs":1,"burst":1},"tags":[],'
            b'"owner":null,"created":1e99}',
            "created: expected epoch milliseconds",
        ),
        (
            b'{"name":"t","tier":"FREE","limits":{"maxJobs":1,"burst":1},"tags":[],'
            b'"owner":null,"created":99999999999999999999}',
            "out of datetime's range",
        ),
        # Numbers no double holds (Jackson would read Infinity, which it cannot write back).
        (
            b'{"name":"t","tier":"FREE","limits":{"maxJobs":1,"burst":1e400},"tags":[],'
            b'"owner":null,"created":0}',
            "out of range for a double",
        ),
        (
            b'{"name":"t","tier":"FREE","limits":{"maxJobs":1,"burst":1' + b"0" * 400 + b"},"
            b'"tags":[],"owner":null,"created":0}',
            r"limits.burst: an integer of \d+ bits is out of a double's range",
        ),
        # Nesting is bounded before parsing, even under a property the type ignores.
        (
            b'{"name":"t","newerField":' + b"[" * 900 + b"]" * 900 + b"}",
            "not JSON: JSON nested deeper than 200 levels",
        ),
    ],
)
def test_bytes_that_are_no_value_are_a_typed_error_carrying_them(data: bytes, message: str) -> None:
    with pytest.raises(ModelDecodeError, match=message) as caught:
        JsonSerializer(Tenant).deserialize(data)
    assert caught.value.data == data
    assert isinstance(caught.value, CoordinationError)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (dataclasses.replace(_tenant(), created=datetime.datetime(2024, 1, 1)), "naive"),
        (dataclasses.replace(_tenant(), limits=Limits(1, float("nan"))), "no JSON number"),
        (
            dataclasses.replace(_tenant(), limits=Limits(1, 10**400)),
            r"limits.burst: an integer of \d+ bits is out of a double's range",
        ),
        (dataclasses.replace(_tenant(), tags=["a", 3]), r"tags\[1\]: expected str"),
        ({"name": "t1"}, "expected Tenant, got dict"),
    ],
)
def test_a_value_that_does_not_fit_is_refused_before_anything_is_written(
    value: Any, message: str
) -> None:
    with pytest.raises(ModelEncodeError, match=message):
        JsonSerializer(Tenant).serialize(value)


def test_plain_types_have_a_json_form_too() -> None:
    s: JsonSerializer[dict[str, list[int]]] = JsonSerializer(dict[str, list[int]])
    assert s.deserialize(s.serialize({"a": [1, 2]})) == {"a": [1, 2]}
    anything: JsonSerializer[Any] = JsonSerializer(Any)
    assert anything.deserialize(b'{"x":[1,"y",null]}') == {"x": [1, "y", None]}
    with pytest.raises(ModelEncodeError):
        anything.serialize({"x": object()})


# --- pydantic and msgspec ----------------------------------------------------------------


def test_pydantic_and_msgspec_are_not_imported_until_used() -> None:
    code = (
        "import sys, dataclasses, aiocoord.modeled\n"
        "@dataclasses.dataclass\nclass C:\n    x: int\n"
        "m = aiocoord.modeled.Model(C, '/c/{id}')\n"
        "assert type(m.serializer).__name__ == 'JsonSerializer'\n"
        "assert 'pydantic' not in sys.modules and 'msgspec' not in sys.modules, "
        "[n for n in sys.modules if n.startswith(('pydantic', 'msgspec'))]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_pydantic_model_gets_the_pydantic_serializer() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Config(pydantic.BaseModel):  # type: ignore[misc,name-defined]
        name: str
        replicas: int = 1

    s = serializer_for(Config)
    assert isinstance(s, PydanticSerializer)
    assert s.deserialize(s.serialize(Config(name="a", replicas=3))) == Config(name="a", replicas=3)
    with pytest.raises(ModelDecodeError) as caught:
        s.deserialize(b'{"name": 1}')
    assert caught.value.data == b'{"name": 1}'
    with pytest.raises(ModelEncodeError):
        s.serialize({"name": "a"})


def test_a_msgspec_struct_gets_the_msgspec_serializer() -> None:
    msgspec = pytest.importorskip("msgspec")

    class Config(msgspec.Struct):  # type: ignore[misc,name-defined]
        name: str
        replicas: int = 1

    s = serializer_for(Config)
    assert isinstance(s, MsgspecSerializer)
    assert s.deserialize(s.serialize(Config(name="a", replicas=3))) == Config(name="a", replicas=3)
    with pytest.raises(ModelDecodeError):
        s.deserialize(b'{"name": 1}')
    with pytest.raises(ModelEncodeError):
        s.serialize(Config(name=5))  # type: ignore[arg-type]


def test_a_foreign_serializer_error_becomes_a_decode_error_with_the_path() -> None:
    class Broken:
        def serialize(self, value: Any) -> bytes:
            raise KeyError("nope")

        def deserialize(self, data: bytes) -> Any:
            raise KeyError("nope")

    m: Model[Any] = Model(object, "/x/{id}", serializer=Broken())
    entry = m.decode("/x/a", b"\x00", Stat(*[0] * 11))
    assert not entry.ok and entry.params == {"id": "a"}
    assert entry.error is not None and entry.error.path == "/x/a"
    assert isinstance(entry.error.__cause__, KeyError)
    with pytest.raises(ModelDecodeError, match="/x/a"):
        _ = entry.value
    with pytest.raises(ModelEncodeError, match="/x/a"):
        m.encode("/x/a", 1)


# --- models and schemas ------------------------------------------------------------------


def test_a_model_checks_its_options_when_made() -> None:
    with pytest.raises(BadArgumentsError, match="needs a ttl"):
        Model(Tenant, "/t/{id}", mode=CreateMode.PERSISTENT_WITH_TTL)
    with pytest.raises(BadArgumentsError, match="ttl needs a TTL mode"):
        Model(Tenant, "/t/{id}", ttl=5)
    with pytest.raises(InvalidTypeError):
        Model(Tenant, "/t/{id}", serializer=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        Model(Tenant, "/t/{id}", mode="persistent")  # type: ignore[arg-type]


def test_a_schema_refuses_modes_ephemerality_values_and_deletes() -> None:
    schemas = SchemaSet(
        [
            Schema("/sessions/{id}", name="sessions", ephemeral=True),
            Schema(
                "/tenants/{t}/config",
                modes=frozenset({CreateMode.PERSISTENT}),
                ephemeral=False,
                deletable=False,
                validator=lambda v: v.limits.max_jobs > 0,
            ),
            Schema(re.compile(r"/free/.*")),
        ]
    )
    schemas.check_create("/sessions/a", CreateMode.EPHEMERAL, None)
    with pytest.raises(SchemaViolationError, match="must be ephemeral") as caught:
        schemas.check_create("/sessions/a", CreateMode.PERSISTENT, None)
    assert caught.value.schema == "sessions" and caught.value.path == "/sessions/a"
    good = _tenant()
    schemas.check_create("/tenants/t1/config", CreateMode.PERSISTENT, good)
    with pytest.raises(SchemaViolationError, match="create mode 'container'"):
        schemas.check_create("/tenants/t1/config", CreateMode.CONTAINER, good)
    bad = dataclasses.replace(good, limits=Limits(0, 1.0))
    with pytest.raises(SchemaViolationError, match="validator refused"):
        schemas.check_set("/tenants/t1/config", bad)
    with pytest.raises(SchemaViolationError, match="may not be deleted"):
        schemas.check_delete("/tenants/t1/config")
    schemas.check_delete("/free/anything/at/all")
    schemas.check_set("/elsewhere", object())  # no schema: free
    with pytest.raises(SchemaViolationError, match="strict"):
        SchemaSet([], strict=True).check_set("/elsewhere", object())


def test_a_validator_that_raises_refuses_with_its_reason() -> None:
    def positive(value: int) -> bool:
        if value < 0:
            raise ValueError("must be >= 0")
        return True

    schema = Schema("/n/{id}", validator=positive)
    with pytest.raises(SchemaViolationError, match="must be >= 0"):
        schema.check_value("/n/a", -1)


@dataclass(frozen=True)
class _Doubles:
    values: list[float]
    text: str
    nothing: str | None


def test_a_model_writes_jacksons_bytes_doubles_escapes_and_astral_characters() -> None:
    # Each case's bytes as Jackson 2.14's default mapper writes them on Java 17
    # (tests/integration/test_modeled_jackson.py asks Jackson itself).
    value = _Doubles(
        [1e-07, 1e20, 1e-05, 5e-324, 1.7976931348623157e308, -0.0, 100.0, 1e-323],
        "\x1f\x00\U0001f600é",
        None,
    )
    assert JsonSerializer(_Doubles).serialize(value) == (
        b'{"values":[1.0E-7,1.0E20,1.0E-5,4.9E-324,1.7976931348623157E308,-0.0,100.0,'
        b'1.0E-323],"text":"\\u001F\\u0000\\uD83D\\uDE00\xc3\xa9","nothing":null}'
    )
    assert JsonSerializer(_Doubles).deserialize(JsonSerializer(_Doubles).serialize(value)) == value


def test_a_double_under_any_keeps_another_writers_digits_a_typed_one_gets_java_17s() -> None:
    # Java 19+ writes 1e23 as 1.0E23, Java 17 (and so aiocoord) as 9.999999999999999E22
    # (tests/unit/test_jackson_writer.py): an untyped value is written back as it was read,
    # a float field holds a plain float.
    anything: JsonSerializer[Any] = JsonSerializer(Any)
    untyped = anything.deserialize(b'{"x":[1.0E23,0.5]}')
    assert untyped == {"x": [1e23, 0.5]}
    assert anything.serialize(untyped) == b'{"x":[1.0E23,0.5]}'
    typed = JsonSerializer(Limits).deserialize(b'{"maxJobs":1,"burst":1.0E23}')
    assert type(typed.burst) is float
    assert JsonSerializer(Limits).serialize(typed) == b'{"maxJobs":1,"burst":9.999999999999999E22}'


def test_java_names_the_peers_jvm_whose_double_digits_are_written() -> None:
    # Double.toString's digits changed in Java 19 (tests/integration/test_modeled_jackson.py
    # asks Jackson on Java 17 and 21): a Java 21 service's bytes are the shortest digits,
    # two at least.
    value = _Doubles([1e23, 5e-324, 2.0**60, 0.002], "", None)
    assert JsonSerializer(_Doubles, java=21).serialize(value) == (
        b'{"values":[1.0E23,4.9E-324,1.152921504606847E18,0.002],"text":"","nothing":null}'
    )
    assert JsonSerializer(_Doubles, java=17).serialize(value) == JsonSerializer(_Doubles).serialize(
        value
    )
    assert b"9.999999999999999E22" in JsonSerializer(_Doubles).serialize(value)
    for bad, error in ((True, InvalidTypeError), ("21", InvalidTypeError), (7, BadArgumentsError)):
        with pytest.raises(error, match="java"):
            JsonSerializer(_Doubles, java=bad)


def test_a_lone_surrogate_is_a_model_encode_error() -> None:
    with pytest.raises(ModelEncodeError):
        JsonSerializer(_Doubles).serialize(_Doubles([], "\ud800", None))
