"""The values of service discovery and their JSON form, as Apache Curator 5.x's
curator-x-discovery writes them: :class:`ServiceType`, :class:`UriSpec` (with
:class:`UriPart`), :class:`ServiceInstance`, and :class:`InstanceFormatError` for a node
whose data is not an instance. Plain data, no I/O; re-exported from
:mod:`aiocoord.recipes.discovery`, where the API reference shows them.

**The format.** Curator's ``JsonInstanceSerializer`` writes an instance with Jackson as one
compact JSON object whose keys come in the order the Java class declares its fields:
``name, id, address, port, sslPort, payload, registrationTimeUTC, serviceType, uriSpec`` and,
unless the serializer is in its "compatible" mode, ``enabled``. Absent values are ``null``;
``serviceType`` is the enum constant's name; ``uriSpec`` is ``{"parts": [{"value": ...,
"variable": ...}, ...]}``. :func:`encode_instance` writes exactly that (``enabled`` always:
Curator 5.x readers ignore what they do not know, and accept it either way).

**Payloads.** Curator's payload carries a Jackson type hint: a Java bean or a map is written
as an object with an ``"@class"`` key first, a ``Long`` or a list as a two-element array
``["java.lang.Long", 5]``; strings, ints, doubles and booleans go bare. aiocoord passes any
JSON value through unchanged, type hints included, so a Java reader with a concrete payload
class needs the payload written with its ``"@class"`` key. An array that is not such a
wrapper is refused (InstanceFormatError): Curator could not read the service at all.

**Bytes.** :func:`~aiocoord._json.dump_jackson` writes strings and doubles as
Jackson does (escaped surrogate pairs beyond the BMP, upper-case ``\u001f``, Java's
``Double.toString``); see :mod:`aiocoord._json` for the one JDK difference.

**Reading** is as lenient as Jackson's defaults in Curator: a missing key takes the Java
default (``name`` and ``id`` ``""``, ``registrationTimeUTC`` 0, ``serviceType`` DYNAMIC,
``enabled`` true), and keys it does not know are kept (``ServiceInstance._extra``) and written
back after the known ones, so that a read-modify-write loses nothing a newer writer added.
A value of the wrong JSON type raises :class:`InstanceFormatError`, and so does anything
:func:`~aiocoord._json.load_foreign` refuses (not UTF-8, not JSON, nested deeper
than 200 levels, a number out of a double's range).
"""

from __future__ import annotations

import enum
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from aiocoord._json import ForeignDataError, dump_jackson, is_type_wrapper, load_foreign
from aiocoord._validation import encode_utf8
from aiocoord.errors import (
    BadArgumentsError,
    InstanceFormatError,
    InvalidTypeError,
)
from aiocoord.recipes.discovery._host import local_address

__all__ = [
    "InstanceFormatError",
    "ServiceInstance",
    "ServiceType",
    "UriPart",
    "UriSpec",
    "decode_instance",
    "encode_instance",
    "local_address",
]

_JAVA_INT = (-(2**31), 2**31 - 1)
_JAVA_LONG = (-(2**63), 2**63 - 1)
#: The keys Curator writes, in its order; any other key is kept as read (``_extra``).
_KNOWN = "name id address port sslPort payload registrationTimeUTC serviceType uriSpec enabled"
_KNOWN_KEYS = frozenset(_KNOWN.split())


class ServiceType(enum.StrEnum):
    """How an instance is registered (Curator's ``ServiceType``): DYNAMIC is an ephemeral node
    that goes with its session, DYNAMIC_SEQUENTIAL an ephemeral sequential one, STATIC and
    PERMANENT persistent nodes. The JSON form is the name."""

    #: an ephemeral node, which goes with the registering session (and is made again on its
    #: next session while registered)
    DYNAMIC = "DYNAMIC"
    #: a persistent node
    STATIC = "STATIC"
    #: a persistent node, as STATIC: the two differ only in the name written
    PERMANENT = "PERMANENT"
    #: an ephemeral sequential node, named ``_c_<uuid>-<id><sequence number>``
    DYNAMIC_SEQUENTIAL = "DYNAMIC_SEQUENTIAL"

    @property
    def dynamic(self) -> bool:
        """True for the types whose node is ephemeral."""
        return self in (ServiceType.DYNAMIC, ServiceType.DYNAMIC_SEQUENTIAL)


@dataclass(frozen=True, slots=True)
class UriPart:
    """One piece of a :class:`UriSpec`: literal text, or (``variable``) a field name."""

    #: the literal text, or the field's name (trimmed) when ``variable``
    value: str
    #: True: ``value`` is a field :meth:`UriSpec.build` replaces; False: literal text
    variable: bool = False


def _java_text(value: Any) -> str:
    # What Java's StringBuilder.append(Object) makes of a variable's value.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


class UriSpec:
    """A URI template with ``{field}`` replacements, as Curator's ``UriSpec``.

    ``UriSpec("{scheme}://{address}:{port}/api")`` parses like Curator (names inside braces
    are trimmed; a nested ``{``, a stray ``}`` or an unclosed field raises
    BadArgumentsError). :meth:`build` fills in the fields. With an instance these are
    ``name``, ``id``, ``address``, ``port``, ``ssl-port``, ``registration-time-utc``,
    ``service-type`` (lower case) and ``scheme`` (``"https"`` if the instance has an SSL port,
    else ``"http"``); ``[`` and ``]`` stand for literal braces; ``variables`` add or override
    fields. A field with no value is left out, as Curator does.
    """

    __slots__ = ("_parts",)

    def __init__(self, template: str = "") -> None:
        if not isinstance(template, str):
            raise InvalidTypeError(f"a UriSpec template must be str, not {type(template).__name__}")
        parts: list[UriPart] = []
        inside = False
        for token in re.split(r"([{}])", template):
            if token == "{":
                if inside:
                    raise BadArgumentsError(f"'{{' inside a field of the UriSpec {template!r}")
                inside = True
            elif token == "}":
                if not inside:
                    raise BadArgumentsError(f"'}}' without '{{' in the UriSpec {template!r}")
                inside = False
            elif token:
                parts.append(UriPart(token.strip() if inside else token, inside))
        if inside:
            raise BadArgumentsError(f"the last field of the UriSpec {template!r} is not closed")
        self._parts = tuple(parts)

    @classmethod
    def from_parts(cls, parts: Any) -> UriSpec:
        """A spec made of these :class:`UriPart` pieces (as its JSON form lists them)."""
        spec = cls()
        checked = tuple(parts)
        for part in checked:
            if not isinstance(part, UriPart):
                raise InvalidTypeError(f"UriSpec parts must be UriPart, not {type(part).__name__}")
        spec._parts = checked
        return spec

    @property
    def parts(self) -> tuple[UriPart, ...]:
        """The pieces, in order."""
        return self._parts

    @property
    def template(self) -> str:
        """The template the parts spell (fields in braces)."""
        return "".join("{" + p.value + "}" if p.variable else p.value for p in self._parts)

    def build(
        self, instance: ServiceInstance | None = None, variables: Mapping[str, Any] | None = None
    ) -> str:
        """The URI: the parts with every field replaced (see the class docstring)."""
        values: dict[str, Any] = {"[": "{", "]": "}", "scheme": "http"}
        if instance is not None:
            if not isinstance(instance, ServiceInstance):
                raise InvalidTypeError(
                    f"instance must be a ServiceInstance, not {type(instance).__name__}"
                )
            values.update(
                {
                    "name": instance.name,
                    "id": instance.id,
                    "address": instance.address or "",
                    "port": "" if instance.port is None else instance.port,
                    "ssl-port": "" if instance.ssl_port is None else instance.ssl_port,
                    "registration-time-utc": instance.registration_time_utc,
                    "service-type": instance.service_type.value.lower(),
                }
            )
            if instance.ssl_port is not None:
                values["scheme"] = "https"
        if variables is not None:
            if not isinstance(variables, Mapping):
                raise InvalidTypeError(
                    f"variables must be a mapping, not {type(variables).__name__}"
                )
            values.update(variables)
        out = []
        for part in self._parts:
            if not part.variable:
                out.append(part.value)
            elif values.get(part.value) is not None:
                out.append(_java_text(values[part.value]))
        return "".join(out)

    def to_json(self) -> dict[str, Any]:
        """Curator's JSON form: ``{"parts": [{"value": ..., "variable": ...}, ...]}``."""
        return {"parts": [{"value": p.value, "variable": p.variable} for p in self._parts]}

    def __iter__(self) -> Iterator[UriPart]:
        return iter(self._parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriSpec) and other._parts == self._parts

    def __hash__(self) -> int:
        return hash(self._parts)

    def __repr__(self) -> str:
        return f"UriSpec({self.template!r})"


def _check_optional(value: Any, kind: type, what: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
        raise InvalidTypeError(
            f"{what} must be {kind.__name__} or None, not {type(value).__name__}"
        )


def _check_port(value: Any, what: str) -> None:
    _check_optional(value, int, what)
    if value is not None and not 0 <= value <= 65535:
        raise BadArgumentsError(f"{what} must be a port number 0-65535, got {value}")


def _check_json(payload: Any) -> None:
    try:
        dump_jackson(payload)
    except UnicodeEncodeError:
        raise BadArgumentsError(
            "the payload holds a lone surrogate character, which has no UTF-8 form"
        ) from None
    except (TypeError, ValueError) as exc:
        raise InstanceFormatError(f"the payload must be a JSON value: {exc}") from None
    if isinstance(payload, list | tuple) and not is_type_wrapper(payload):
        # Curator reads an array payload as Jackson's [type id, value] wrapper: any other
        # array makes the whole service unreadable to its queryForInstances and ServiceCache.
        raise InstanceFormatError(
            "an array payload must be a Jackson type wrapper [java class name, value] "
            f"(Curator cannot read any other): got {payload!r:.60}; wrap a list in an object"
        )


def _check_text(value: str | None, what: str) -> None:
    if value is not None:
        encode_utf8(value, what)


@dataclass(frozen=True, slots=True)
class ServiceInstance:
    """One instance of a service (Curator's ``ServiceInstance``), registered as the node
    ``<base_path>/<name>/<id>`` holding the instance in Curator's JSON format.

    Make one with :meth:`build`, which fills in a random ``id``, this host's address and the
    registration time, or give every field. ``payload`` is any JSON value (a dict, a list, a
    str, ...; Curator's type hints such as an ``"@class"`` key pass through as they are).
    ``registration_time_utc`` is in milliseconds since the epoch. Instances are immutable:
    change one with :func:`dataclasses.replace`, which keeps the fields a newer writer added
    to the JSON (``_extra``). Equality compares every field but ``_extra``; the hash leaves
    out the payload and the URI spec as well.
    """

    #: the service's name, the node ``<base_path>/<name>`` its instances are under
    name: str
    #: the instance's id, unique in its service: its node's name (with a prefix and a
    #: sequence number added for DYNAMIC_SEQUENTIAL)
    id: str
    #: the address clients reach the instance at (:meth:`build`: this host's); None: none
    address: str | None = None
    #: the port clients connect to; None: none
    port: int | None = None
    #: the port of SSL connections; None: none (with one, the URI's ``{scheme}`` is https)
    ssl_port: int | None = None
    #: any JSON value the service adds, Curator's type hints as they are; None: none
    payload: Any = field(default=None, hash=False)
    #: when the instance was built (:meth:`build`), in milliseconds since the epoch (0: not
    #: known)
    registration_time_utc: int = 0
    #: how the instance's node is made: ephemeral (with the session) or persistent
    service_type: ServiceType = ServiceType.DYNAMIC
    #: the template of the instance's URI (:meth:`build_uri_spec`); None: none (a template
    #: given as a string is parsed)
    uri_spec: UriSpec | None = field(default=None, hash=False)
    #: False leaves the instance out of what a :class:`ServiceProvider` hands out (an
    #: operator may write it to the node)
    enabled: bool = True
    #: JSON keys this version does not know, kept as read so that an update writes them back
    _extra: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        for what in ("name", "id"):
            if not isinstance(getattr(self, what), str):
                raise InvalidTypeError(
                    f"{what} must be str, not {type(getattr(self, what)).__name__}"
                )
        _check_optional(self.address, str, "address")
        for what in ("name", "id", "address"):
            _check_text(getattr(self, what), what)
        _check_port(self.port, "port")
        _check_port(self.ssl_port, "ssl_port")
        _check_json(self.payload)
        time_ms = self.registration_time_utc
        if isinstance(time_ms, bool) or not isinstance(time_ms, int):
            raise InvalidTypeError(
                f"registration_time_utc must be int (ms), not {type(time_ms).__name__}"
            )
        if not _JAVA_LONG[0] <= time_ms <= _JAVA_LONG[1]:
            raise BadArgumentsError(f"registration_time_utc is out of range: {time_ms}")
        if isinstance(self.service_type, str) and not isinstance(self.service_type, ServiceType):
            try:
                object.__setattr__(self, "service_type", ServiceType(self.service_type))
            except ValueError:
                names = [t.value for t in ServiceType]
                raise BadArgumentsError(
                    f"service_type must be one of {names}, got {self.service_type!r}"
                ) from None
        if not isinstance(self.service_type, ServiceType):
            raise InvalidTypeError(
                f"service_type must be a ServiceType, not {type(self.service_type).__name__}"
            )
        if isinstance(self.uri_spec, str):
            object.__setattr__(self, "uri_spec", UriSpec(self.uri_spec))
        if self.uri_spec is not None and not isinstance(self.uri_spec, UriSpec):
            raise InvalidTypeError(
                f"uri_spec must be a UriSpec, a template str or None, "
                f"not {type(self.uri_spec).__name__}"
            )
        if not isinstance(self.enabled, bool):
            raise InvalidTypeError(f"enabled must be bool, not {type(self.enabled).__name__}")
        if not isinstance(self._extra, Mapping):
            raise InvalidTypeError("_extra must be a mapping")
        object.__setattr__(
            self,
            "_extra",
            MappingProxyType({k: v for k, v in self._extra.items() if k not in _KNOWN_KEYS}),
        )

    @classmethod
    def build(
        cls,
        name: str,
        *,
        id: str | None = None,
        address: str | None = None,
        port: int | None = None,
        ssl_port: int | None = None,
        payload: Any = None,
        service_type: ServiceType = ServiceType.DYNAMIC,
        uri_spec: UriSpec | str | None = None,
        enabled: bool = True,
        registration_time_utc: int | None = None,
    ) -> ServiceInstance:
        """An instance of service ``name`` as Curator's ``ServiceInstance.builder()`` makes
        one: ``id`` a random UUID, ``address`` this host's address (:func:`local_address`),
        ``registration_time_utc`` now, unless given."""
        return cls(
            name=name,
            id=str(uuid.uuid4()) if id is None else id,
            address=local_address() if address is None else address,
            port=port,
            ssl_port=ssl_port,
            payload=payload,
            registration_time_utc=(
                time.time_ns() // 1_000_000
                if registration_time_utc is None
                else registration_time_utc
            ),
            service_type=service_type,
            uri_spec=UriSpec(uri_spec) if isinstance(uri_spec, str) else uri_spec,
            enabled=enabled,
        )

    def to_json(self) -> bytes:
        """The node data Curator writes for this instance (see the module docstring)."""
        return encode_instance(self)

    @classmethod
    def from_json(cls, data: bytes) -> ServiceInstance:
        """The instance in a node's data; InstanceFormatError if it is not one."""
        return decode_instance(data)

    def build_uri_spec(self, variables: Mapping[str, Any] | None = None) -> str:
        """This instance's URI from its ``uri_spec`` (``""`` if it has none)."""
        return "" if self.uri_spec is None else self.uri_spec.build(self, variables)


# --- the JSON form -----------------------------------------------------------------------


def encode_instance(instance: ServiceInstance) -> bytes:
    """The instance as Curator's ``JsonInstanceSerializer`` writes it (UTF-8, compact), then
    any keys kept from an earlier read."""
    if not isinstance(instance, ServiceInstance):
        raise InvalidTypeError(f"instance must be a ServiceInstance, not {type(instance).__name__}")
    doc: dict[str, Any] = {
        "name": instance.name,
        "id": instance.id,
        "address": instance.address,
        "port": instance.port,
        "sslPort": instance.ssl_port,
        "payload": instance.payload,
        "registrationTimeUTC": instance.registration_time_utc,
        "serviceType": instance.service_type.value,
        "uriSpec": None if instance.uri_spec is None else instance.uri_spec.to_json(),
        "enabled": instance.enabled,
    }
    doc.update(instance._extra)
    try:
        return dump_jackson(doc)
    except UnicodeEncodeError:  # an _extra value given by hand
        raise BadArgumentsError("the instance holds a lone surrogate character") from None
    except (TypeError, ValueError) as exc:
        raise InstanceFormatError(f"the instance is not JSON-serializable: {exc}") from None


def _field(doc: Mapping[str, Any], key: str, kinds: tuple[type, ...], default: Any) -> Any:
    if key not in doc:
        return default
    value = doc[key]
    if value is None:
        return None
    if isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise InstanceFormatError(f'"{key}" must be {names} or null, got {value!r:.60}')
    return value


def _int_field(doc: Mapping[str, Any], key: str, bounds: tuple[int, int]) -> int | None:
    value: int | None = _field(doc, key, (int,), None)
    if value is not None and not bounds[0] <= value <= bounds[1]:
        raise InstanceFormatError(f'"{key}" is out of range for Java: {value}')
    return value


def _uri_spec(raw: Any) -> UriSpec | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InstanceFormatError(f'"uriSpec" must be an object or null, got {raw!r:.60}')
    parts = raw.get("parts")
    parts = [] if parts is None else parts
    if not isinstance(parts, list):
        raise InstanceFormatError(f'"uriSpec.parts" must be a list, got {parts!r:.60}')
    out = []
    for part in parts:
        if not isinstance(part, dict):
            raise InstanceFormatError(f"a UriSpec part must be an object, got {part!r:.60}")
        value = _field(part, "value", (str,), "") or ""
        out.append(UriPart(value, bool(_field(part, "variable", (bool,), False))))
    return UriSpec.from_parts(out)


def decode_instance(data: bytes, path: str | None = None) -> ServiceInstance:
    """The instance a node holds (see the module docstring); InstanceFormatError if the
    data is not one. ``path`` names the node in the error."""
    where = f" in {path}" if path else ""
    try:
        doc = load_foreign(data)
    except ForeignDataError as exc:
        raise InstanceFormatError(f"{exc}{where}") from None
    if not isinstance(doc, dict):
        raise InstanceFormatError(f"not a JSON object{where}: {data[:60]!r}")
    try:
        kind = _field(doc, "serviceType", (str,), "DYNAMIC") or "DYNAMIC"
        if kind not in ServiceType.__members__:
            raise InstanceFormatError(f'unknown "serviceType" {kind!r}')
        time_ms = _int_field(doc, "registrationTimeUTC", _JAVA_LONG)
        # Jackson gives a primitive its default for null: 0, false.
        enabled = _field(doc, "enabled", (bool,), True)
        port = _int_field(doc, "port", _JAVA_INT)
        ssl_port = _int_field(doc, "sslPort", _JAVA_INT)
        for key, value in (("port", port), ("sslPort", ssl_port)):
            if value is not None and not 0 <= value <= 65535:
                raise InstanceFormatError(f'"{key}" is not a port number: {value}')
        return ServiceInstance(
            name=_field(doc, "name", (str,), "") or "",
            id=_field(doc, "id", (str,), "") or "",
            address=_field(doc, "address", (str,), None),
            port=port,
            ssl_port=ssl_port,
            payload=doc.get("payload"),
            registration_time_utc=time_ms or 0,
            service_type=ServiceType[kind],
            uri_spec=_uri_spec(doc.get("uriSpec")),
            enabled=bool(enabled),
            _extra={k: v for k, v in doc.items() if k not in _KNOWN_KEYS},
        )
    except InstanceFormatError as exc:
        raise InstanceFormatError(f"{exc}{where}") from None
    except BadArgumentsError as exc:  # a lone surrogate escaped in the JSON ("\\ud800")
        raise InstanceFormatError(f"{exc}{where}") from None
