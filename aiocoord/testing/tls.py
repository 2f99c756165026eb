"""TLS for test servers: a self-signed certificate and a ZooKeeper listening on a secure port.

ZooKeeper serves TLS only through its Netty connection factory, on a ``secureClientPort`` next
to the plain ``clientPort`` (which the launcher keeps, for its four-letter-word health checks).
The server reads PEM key and trust stores directly, so no Java keystore tool is needed::

    config = tls_config(tmp_path)
    with config.server() as server:
        async with aiocoord.connect(config.connect_string, ssl=config.client_context()) as c:
            ...

The certificate is made with the ``cryptography`` package when it is importable, else with
the ``openssl`` command. It names ``127.0.0.1`` and ``localhost`` (as subject alternative
names too), so a client verifying host names accepts it.

The Debian package's ``zookeeper.jar`` lists in its manifest the Netty jars its plain
connections need, but not ``netty-codec`` and ``netty-resolver``, which TLS needs: without
them the server resets every TLS handshake (``NoClassDefFoundError:
io/netty/handler/codec/ByteToMessageDecoder``). :func:`tls_config` adds the ones it finds
next to the ZooKeeper jar to the classpath.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import ipaddress
import shutil
import ssl
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiocoord.errors import ServerSetupError
from aiocoord.testing._distribution import Distribution, find_distribution
from aiocoord.testing._process import free_ports
from aiocoord.testing.server import ZooKeeperServer

__all__ = [
    "NETTY_FACTORY",
    "TLS_EXTRA_JARS",
    "SelfSignedCertificate",
    "TLSConfig",
    "make_self_signed_certificate",
    "tls_config",
]

#: The server connection factory that speaks TLS (the default NIO one does not).
NETTY_FACTORY = "org.apache.zookeeper.server.NettyServerCnxnFactory"
#: Jars TLS needs that the Debian ZooKeeper jar's manifest leaves out.
TLS_EXTRA_JARS: tuple[str, ...] = ("netty-codec.jar", "netty-resolver.jar")


@dataclass(frozen=True)
class SelfSignedCertificate:
    """PEM files of one self-signed certificate.

    ``keystore`` is the key followed by the certificate, the form ZooKeeper's PEM key store
    reads; ``cert`` alone serves as the trust store, on both sides.
    """

    cert: Path
    key: Path
    keystore: Path
    common_name: str


def make_self_signed_certificate(
    directory: str | Path, *, common_name: str = "127.0.0.1", days: int = 2
) -> SelfSignedCertificate:
    """Write a new RSA-2048 self-signed certificate and its key into ``directory``.

    The certificate is valid for ``127.0.0.1`` and ``localhost``. Raises
    :class:`~aiocoord.errors.ServerSetupError` if neither ``cryptography`` nor ``openssl``
    is available.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    cert, key, keystore = out / "cert.pem", out / "key.pem", out / "keystore.pem"
    try:
        _make_with_cryptography(cert, key, common_name, days)
    except ImportError:
        _make_with_openssl(cert, key, common_name, days)
    keystore.write_bytes(key.read_bytes() + cert.read_bytes())
    key.chmod(0o600)
    keystore.chmod(0o600)
    return SelfSignedCertificate(cert, key, keystore, common_name)


def _make_with_cryptography(cert: Path, key: Path, common_name: str, days: int) -> None:
    # An optional dependency, so imported by name (typed loosely, whether installed or not);
    # its absence (ImportError) selects the openssl command instead.
    x509 = importlib.import_module("cryptography.x509")
    hashes = importlib.import_module("cryptography.hazmat.primitives.hashes")
    serialization = importlib.import_module("cryptography.hazmat.primitives.serialization")
    rsa = importlib.import_module("cryptography.hazmat.primitives.asymmetric.rsa")
    NameOID = importlib.import_module("cryptography.x509.oid").NameOID

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(private, hashes.SHA256())
    )
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))


def _make_with_openssl(cert: Path, key: Path, common_name: str, days: int) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ServerSetupError(
            "cannot make a test certificate: install the 'cryptography' package or the "
            "'openssl' command (Debian/Ubuntu: apt-get install openssl)"
        )
    command = [
        openssl,
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(cert),
        "-days",
        str(days),
        "-subj",
        f"/CN={common_name}",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ServerSetupError(f"openssl could not make a certificate: {done.stderr.strip()}")


@dataclass(frozen=True)
class TLSConfig:
    """Everything a TLS-enabled :class:`ZooKeeperServer` and its clients need.

    Pass :attr:`extra_config`, :attr:`jvm_options` and :attr:`distribution` to a server (or
    call :meth:`server`); connect clients to :attr:`connect_string` with
    ``ssl=config.client_context()``.
    """

    certificate: SelfSignedCertificate
    secure_port: int
    extra_config: Mapping[str, object]
    jvm_options: tuple[str, ...]
    distribution: Distribution
    host: str = "127.0.0.1"

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:<secure port>"``."""
        return f"{self.host}:{self.secure_port}"

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts (only) this certificate and checks the host name."""
        return ssl.create_default_context(cafile=str(self.certificate.cert))

    def server(self, **options: Any) -> ZooKeeperServer:
        """A (not yet started) standalone server listening on both ports.

        ``options`` go to :class:`ZooKeeperServer`; ``extra_config`` and ``jvm_options``
        given there are added to the TLS ones.
        """
        extra = {**self.extra_config, **dict(options.pop("extra_config", None) or {})}
        jvm: Sequence[str] = (*self.jvm_options, *options.pop("jvm_options", ()))
        options.setdefault("distribution", self.distribution)
        return ZooKeeperServer(extra_config=extra, jvm_options=jvm, **options)


def tls_config(
    directory: str | Path,
    *,
    secure_port: int | None = None,
    distribution: Distribution | None = None,
) -> TLSConfig:
    """Make a certificate in ``directory`` and the server settings to serve TLS with it.

    ``secure_port=None`` picks a free port. The distribution (found as the test servers find
    it, by default) gets the jars of :data:`TLS_EXTRA_JARS` that sit next to its ZooKeeper
    jar and are not on its classpath yet.
    """
    certificate = make_self_signed_certificate(directory)
    port = free_ports(1)[0] if secure_port is None else secure_port
    dist = distribution or find_distribution()
    dist = with_tls_jars(dist)
    extra: dict[str, object] = {
        "secureClientPort": port,
        "secureClientPortAddress": "127.0.0.1",
        "serverCnxnFactory": NETTY_FACTORY,
        "ssl.keyStore.location": certificate.keystore,
        "ssl.keyStore.type": "PEM",
        "ssl.trustStore.location": certificate.cert,
        "ssl.trustStore.type": "PEM",
        "ssl.clientAuth": "none",
    }
    jvm = (f"-Dzookeeper.serverCnxnFactory={NETTY_FACTORY}",)
    return TLSConfig(certificate, port, extra, jvm, dist)


def with_tls_jars(distribution: Distribution) -> Distribution:
    """``distribution`` with the Netty jars TLS needs added, where they can be found."""
    present = {Path(j).name for j in distribution.classpath}
    folders = {Path(j).parent for j in distribution.classpath}
    extra: list[str] = []
    for name in TLS_EXTRA_JARS:
        if name in present:
            continue
        for folder in sorted(folders):
            candidate = folder / name
            if candidate.is_file():
                extra.append(str(candidate))
                break
    if not extra:
        return distribution
    return dataclasses.replace(distribution, classpath=(*distribution.classpath, *extra))
