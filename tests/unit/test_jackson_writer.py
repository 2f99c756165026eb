"""aiocoord/_json.py's writer with no Java: each expected text below is what Jackson 2.14's
default ObjectMapper wrote for the same value on Java 17 (asked through
tests/integration/java/JacksonBytesPeer.java; tests/integration/test_modeled_jackson.py asks
it again, and on 30,000 random doubles)."""

from __future__ import annotations

import pytest

from aiocoord._json import dump_jackson, java_double

# (the double, Java 17's Double.toString as Jackson wrote it)
JACKSON_DOUBLES = [
    (1e-07, "1.0E-7"),
    (1e20, "1.0E20"),
    (1e-05, "1.0E-5"),
    (-1e-10, "-1.0E-10"),
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (0.1, "0.1"),
    (0.001, "0.001"),
    (0.003, "0.003"),
    (100.0, "100.0"),
    (1 / 3, "0.3333333333333333"),
    (9999999.0, "9999999.0"),
    (1e7, "1.0E7"),
    (123456789.0, "1.23456789E8"),
    (9999999.999999998, "9999999.999999998"),
    (0.0009999999999999998, "9.999999999999998E-4"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
    (2.2250738585072014e-308, "2.2250738585072014E-308"),
    # Subnormals: two digits in E-form, the second not always the shortest's.
    (5e-324, "4.9E-324"),
    (1e-323, "1.0E-323"),
    (1.5e-323, "1.5E-323"),
    (5e-323, "4.9E-323"),
    (1.6e-322, "1.58E-322"),
    # Digits until the remainder is within half an ulp: longer than the shortest.
    (1e23, "9.999999999999999E22"),
    (8e23, "7.999999999999999E23"),
    (-5e22, "-4.9999999999999996E22"),
    (5.8652e21, "5.865200000000001E21"),
    (7.2766781e19, "7.2766780999999996E19"),
    # Integers below 2**63: the integer's own digits, less those below the precision.
    (2.0**53, "9.007199254740992E15"),
    (1e16, "1.0E16"),
    (2.0**60, "1.15292150460684698E18"),
    (-1.6130484589462314e17, "-1.61304845894623136E17"),
    (2.0**62 + 2048, "4.61168601842739E18"),
    (2.0**63, "9.223372036854776E18"),
]


@pytest.mark.parametrize(("value", "text"), JACKSON_DOUBLES, ids=[t for _, t in JACKSON_DOUBLES])
def test_a_double_is_written_as_java_17_writes_it(value: float, text: str) -> None:
    assert java_double(value) == text
    assert dump_jackson([value]) == f"[{text}]".encode()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_double_with_no_json_number_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="not JSON"):
        dump_jackson({"x": value})


def test_every_kind_of_value_is_written_as_jackson_wrote_the_same_pojo() -> None:
    value = {
        "controls": '\x00\x1f\t\n\r\x7f"\\/',
        "astral": "\U0001f600 \U00010000 é€\u2028",
        "nothing": None,
        "empty": [],
        "emptyMap": {},
        "nested": {"a": [1, 2], "b": []},
        "inners": [{"label": "in", "values": [2.5, -1e-10, 123456789.0]}],
        "count": 9007199254740993,
        "flags": [True, False],
    }
    assert dump_jackson(value) == (
        b'{"controls":"\\u0000\\u001F\\t\\n\\r\x7f\\"\\\\/",'
        b'"astral":"\\uD83D\\uDE00 \\uD800\\uDC00 \xc3\xa9\xe2\x82\xac\xe2\x80\xa8",'
        b'"nothing":null,"empty":[],"emptyMap":{},"nested":{"a":[1,2],"b":[]},'
        b'"inners":[{"label":"in","values":[2.5,-1.0E-10,1.23456789E8]}],'
        b'"count":9007199254740993,"flags":[true,false]}'
    )
