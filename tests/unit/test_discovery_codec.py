"""Service discovery's values without a server: UriSpec parsing and rendering as Curator's
UriSpec does (its own test cases among them), and the JSON codec of ServiceInstance: Curator's
key order and nulls, Jackson's defaults for missing keys, type errors, unknown keys kept."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import time
import uuid

import pytest

from aiocoord import BadArgumentsError
from aiocoord.errors import InstanceFormatError, InvalidTypeError
from aiocoord.recipes.discovery import (
    Random,
    RoundRobin,
    ServiceInstance,
    ServiceType,
    Sticky,
    UriPart,
    UriSpec,
)


def parts(spec: UriSpec) -> list[tuple[str, bool]]:
    return [(p.value, p.variable) for p in spec]


def test_uri_spec_parses_fields_and_literals_as_curator() -> None:
    assert parts(UriSpec("{one}{two}three-four-five{six}seven{eight}")) == [
        ("one", True),
        ("two", True),
        ("three-four-five", False),
        ("six", True),
        ("seven", False),
        ("eight", True),
    ]
    spec = UriSpec("{one}two-three-{[}four{]}-five{six}")
    assert parts(spec)[2:5] == [("[", True), ("four", False), ("]", True)]
    assert spec.build(variables={"one": 1, "six": 6}) == "1two-three-{four}-five6"
    assert parts(UriSpec("{ name }/ x ")) == [("name", True), ("/ x ", False)]  # fields trimmed
    assert UriSpec("{}x").parts == (UriPart("x"),)  # an empty field is no part (StringTokenizer)
    assert UriSpec("{scheme}://h").template == "{scheme}://h"
    for bad in ("{a{b}}", "a}b", "{open"):
        with pytest.raises(BadArgumentsError):
            UriSpec(bad)
    with pytest.raises(InvalidTypeError):
        UriSpec(5)  # type: ignore[arg-type]  # on purpose


def test_uri_spec_renders_an_instance_as_curator() -> None:
    instance = ServiceInstance(
        name="foo",
        id="bar",
        address="1.2.3.4",
        port=5,
        ssl_port=6,
        registration_time_utc=789,
        service_type=ServiceType.PERMANENT,
    )
    spec = UriSpec(
        "{scheme}://{address}:{port}:{ssl-port}/{name}/{id}/{registration-time-utc}/{service-type}"
    )
    assert spec.build(instance, {"scheme": "test"}) == "test://1.2.3.4:5:6/foo/bar/789/permanent"
    assert spec.build(instance).startswith("https://")  # an SSL port makes it https
    plain = dataclasses.replace(instance, ssl_port=None, address=None)
    assert UriSpec("{scheme}://{address}:{port}{ssl-port}").build(plain) == "http://:5"
    # A field without a value is left out; values render as Java's toString would.
    assert UriSpec("a{missing}b{flag}{none}").build(variables={"flag": True, "none": None}) == (
        "abtrue"
    )
    with_spec = dataclasses.replace(plain, uri_spec=UriSpec("{name}:{port}"))
    assert with_spec.build_uri_spec() == "foo:5"
    assert with_spec.build_uri_spec({"port": 9}) == "foo:9"
    assert plain.build_uri_spec() == ""


def test_uri_spec_json_form_and_equality() -> None:
    spec = UriSpec("{scheme}://x")
    assert spec.to_json() == {
        "parts": [{"value": "scheme", "variable": True}, {"value": "://x", "variable": False}]
    }
    assert spec == UriSpec.from_parts([UriPart("scheme", True), UriPart("://x")])
    assert hash(spec) == hash(UriSpec("{scheme}://x"))
    assert spec != UriSpec("{scheme}://y")


def test_encoding_is_curators_key_order_with_nulls() -> None:
    instance = ServiceInstance(name="db", id="x", ssl_port=5433, service_type=ServiceType.STATIC)
    assert instance.to_json() == (
        b'{"name":"db","id":"x","address":null,"port":null,"sslPort":5433,"payload":null,'
        b'"registrationTimeUTC":0,"serviceType":"STATIC","uriSpec":null,"enabled":true}'
    )
    # Jackson writes non-ASCII text as UTF-8, not as \\u escapes.
    text = ServiceInstance(name="n", id="i", payload="héllo").to_json()
    assert '"payload":"héllo"'.encode() in text
    assert ServiceInstance.from_json(text).payload == "héllo"


def test_payloads_pass_through_with_their_type_hints() -> None:
    for payload in (
        {"@class": "com.example.Details", "key": "value"},
        ["java.lang.Long", 5],
        ["java.util.ArrayList", ["a", 1]],
        "text",
        2.5,
        True,
        None,
    ):
        instance = ServiceInstance(name="n", id="i", payload=payload)
        assert ServiceInstance.from_json(instance.to_json()).payload == payload
    with pytest.raises(InstanceFormatError):
        ServiceInstance(name="n", id="i", payload={1, 2})
    with pytest.raises(InstanceFormatError):
        ServiceInstance(name="n", id="i", payload=float("inf"))


def test_strings_and_doubles_are_written_as_jackson_writes_them() -> None:
    # What Curator 5.4's JsonInstanceSerializer writes for this instance (checked against
    # the Java serializer itself in tests/integration/test_discovery_curator.py).
    payload = {
        "@class": "java.util.LinkedHashMap",
        "s": '\x01\x1f\t"\\/\x7f é \U0001f600',
        "d": [1e20, 1e-7, 100.0, 0.001, 1e-4, 1e7, 9999999.0, -0.0, 1.5, 2.0**53],
    }
    instance = ServiceInstance(name="api", id="x", payload=payload, address="\U0001f600")
    assert (
        instance.to_json()
        == (
            '{"name":"api","id":"x","address":"\\uD83D\\uDE00","port":null,"sslPort":null,'
            '"payload":{"@class":"java.util.LinkedHashMap",'
            '"s":"\\u0001\\u001F\\t\\"\\\\/\x7f é \\uD83D\\uDE00",'
            '"d":[1.0E20,1.0E-7,100.0,0.001,1.0E-4,1.0E7,9999999.0,-0.0,1.5,9.007199254740992E15]},'
            '"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}'
        ).encode()
    )
    # A double read keeps its digits (Java 17 writes 1e23 so): written back the same.
    data = instance.to_json().replace(b"1.0E20", b"9.999999999999999E22")
    assert ServiceInstance.from_json(data).to_json() == data


def test_array_payloads_must_be_jackson_type_wrappers() -> None:
    for payload in ([1, 2, 3], [], ["java.lang.Long"], [5, 5], ["not a class", 1]):
        with pytest.raises(InstanceFormatError, match="type wrapper"):
            ServiceInstance(name="n", id="i", payload=payload)
    for payload in (["java.lang.Long", 5], ["[Ljava.lang.String;", ["a"]], ["Outer$In", {}]):
        assert ServiceInstance(name="n", id="i", payload=payload).payload == payload


def test_missing_keys_take_javas_defaults() -> None:
    empty = ServiceInstance.from_json(b"{}")
    assert empty == ServiceInstance(name="", id="")
    assert (empty.service_type, empty.enabled, empty.registration_time_utc) == (
        ServiceType.DYNAMIC,
        True,
        0,
    )
    # Jackson gives a primitive its default for null: enabled false, time 0.
    nulls = ServiceInstance.from_json(
        b'{"name":null,"id":"i","registrationTimeUTC":null,"enabled":null,"serviceType":null}'
    )
    assert (nulls.name, nulls.enabled, nulls.registration_time_utc) == ("", False, 0)
    assert nulls.service_type is ServiceType.DYNAMIC
    spec = ServiceInstance.from_json(b'{"uriSpec":{"parts":[{"variable":true},{}]}}').uri_spec
    assert spec is not None and spec.parts == (UriPart("", True), UriPart(""))


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[1]",
        b"\xff",
        b'{"name":5}',
        b'{"port":"80"}',
        b'{"port":true}',
        b'{"port":70000}',
        b'{"sslPort":-1}',
        b'{"registrationTimeUTC":1.5}',
        b'{"registrationTimeUTC":9223372036854775808}',
        b'{"serviceType":"EPHEMERAL"}',
        b'{"enabled":"yes"}',
        b'{"uriSpec":"{scheme}"}',
        b'{"uriSpec":{"parts":{}}}',
        b'{"uriSpec":{"parts":[{"value":1}]}}',
        b'{"payload":NaN}',
        b'{"payload":[1,2,3]}',
        b'{"address":"\\ud800"}',
        b"[" * 1000 + b"]" * 1000,
        b'{"payload":' + b"[" * 999 + b"]" * 999 + b"}",
    ],
)
def test_data_that_is_not_an_instance_raises_a_typed_error(data: bytes) -> None:
    with pytest.raises(InstanceFormatError):
        ServiceInstance.from_json(data)


def test_unknown_keys_are_kept_and_written_after_curators() -> None:
    doc = json.loads(ServiceInstance(name="n", id="i").to_json())
    doc = {"zone": "eu", **doc, "weight": [1, 2]}
    read = ServiceInstance.from_json(json.dumps(doc).encode())
    assert read == ServiceInstance(name="n", id="i")
    changed = dataclasses.replace(read, port=1)
    written = json.loads(changed.to_json())
    assert list(written)[-2:] == ["zone", "weight"]
    assert (written["zone"], written["weight"], written["port"]) == ("eu", [1, 2], 1)


def test_build_fills_id_address_and_time_as_curators_builder() -> None:
    before = time.time() * 1000
    instance = ServiceInstance.build("api", port=80, uri_spec="{scheme}://{address}:{port}")
    assert uuid.UUID(instance.id).version == 4
    assert before - 1 <= instance.registration_time_utc <= time.time() * 1000 + 1
    if instance.address is not None:  # None only on a host without a usable address
        ip = ipaddress.ip_address(instance.address)
        assert not (ip.is_loopback or ip.is_link_local)
    assert instance.uri_spec == UriSpec("{scheme}://{address}:{port}")
    assert ServiceInstance.build("api", service_type="STATIC").service_type is ServiceType.STATIC  # type: ignore[arg-type]  # the name works too
    assert hash(ServiceInstance.build("api", id="x", payload={"a": [1]}, registration_time_utc=1))


@pytest.mark.parametrize(
    "fields",
    [
        {"name": 1},
        {"address": 5},
        {"port": 1.0},
        {"ssl_port": False},
        {"registration_time_utc": "now"},
        {"service_type": 3},
        {"uri_spec": 3},
        {"enabled": "yes"},
    ],
)
def test_wrong_field_types_raise_invalid_type(fields: dict[str, object]) -> None:
    with pytest.raises(InvalidTypeError):
        ServiceInstance(**{"name": "n", "id": "i", **fields})  # type: ignore[arg-type]


def test_strategies_pick_as_curators() -> None:
    instances = [ServiceInstance(name="s", id=f"i{n}") for n in range(3)]
    robin = RoundRobin()
    assert [robin.choose(instances).id for _ in range(4)] == ["i0", "i1", "i2", "i0"]
    assert [Random(seed=1).choose(instances) for _ in range(3)] == [
        Random(seed=1).choose(instances) for _ in range(3)
    ]
    sticky = Sticky(RoundRobin())
    assert {sticky.choose(instances).id for _ in range(3)} == {"i0"}
    assert sticky.choose(instances[1:]).id == "i2"  # i0 gone: RoundRobin's next pick
    assert sticky.instance_number == 1
    with pytest.raises(InvalidTypeError):
        Sticky("round-robin")  # type: ignore[arg-type]  # on purpose
