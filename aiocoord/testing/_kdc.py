"""A throwaway MIT Kerberos KDC on loopback (:class:`KerberosKDC`), for testing SASL GSSAPI.

Everything lives in one directory: a generated ``krb5.conf`` (what clients, the JVM and the
admin tools read), a ``kdc.conf`` (the KDC's own profile), the principal database, its stash,
the log and the keytabs. Nothing of the machine's Kerberos setup is read or changed: the tools
are pointed at the generated files with ``KRB5_CONFIG`` and ``KRB5_KDC_PROFILE`` (see
:attr:`KerberosKDC.env`), and clients of the test need the same variables (and a private
credential cache) to use the realm.

Needs MIT Kerberos' server tools (Debian: ``krb5-kdc krb5-admin-server``);
:func:`kdc_tools_missing` says what is missing, so tests can skip with the install command.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from aiocoord.errors import ServerNotReadyError, ServerSetupError
from aiocoord.testing._lifecycle import StartClose
from aiocoord.testing._process import JvmProcess, free_ports, spawn_jvm

__all__ = ["INSTALL_HINT", "KerberosKDC", "kdc_tools_missing"]

#: The command that installs what a test KDC and a Kerberos client need (Debian/Ubuntu).
INSTALL_HINT = (
    "sudo apt-get install -y krb5-kdc krb5-admin-server krb5-user libkrb5-dev "
    "(or run scripts/install-kerberos)"
)

_TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local")
# The server tools are in sbin, which a normal user's PATH may lack.
_SEARCH_PATH = os.pathsep.join(
    [os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/local/sbin"]
)


def _tool(name: str) -> str | None:
    return shutil.which(name, path=_SEARCH_PATH)


def kdc_tools_missing() -> str | None:
    """None when the MIT KDC tools are installed, else a sentence naming the install command."""
    missing = [name for name in _TOOLS if _tool(name) is None]
    if not missing:
        return None
    return f"MIT Kerberos KDC tools not found ({', '.join(missing)}): {INSTALL_HINT}"


class KerberosKDC(StartClose):
    """An MIT KDC serving the realm ``realm`` on a free loopback port, with its files in
    ``directory`` (created if needed, kept after :meth:`close` for the log).

    Use as ``with KerberosKDC(tmp_path) as kdc:``, then :meth:`add_principal` for the server's
    and the clients' principals (each with a keytab), and give clients :attr:`env`. The host
    name ``localhost`` belongs to the realm, so a service principal such as
    ``zookeeper/localhost`` is what a client asking for ``zookeeper@localhost`` gets a ticket
    for. Raises :class:`~aiocoord.errors.ServerSetupError` when the tools are missing or the
    realm cannot be made, :class:`~aiocoord.errors.ServerNotReadyError` when the KDC does not
    answer within ``startup_timeout`` seconds.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        directory: str | os.PathLike[str],
        realm: str = "AIOCOORD.TEST",
        *,
        startup_timeout: float = 15.0,
    ) -> None:
        if not realm or not all(c.isalnum() or c in ".-_" for c in realm):
            raise ServerSetupError(f"unsupported Kerberos realm name {realm!r}")
        self.directory = Path(directory)
        self.realm = realm
        self.startup_timeout = startup_timeout
        self.port = 0
        self._process: JvmProcess | None = None

    # --- files and environment ----------------------------------------------------------

    @property
    def krb5_conf(self) -> Path:
        """The generated client profile (``KRB5_CONFIG``; the JVM's ``java.security.krb5.conf``)."""
        return self.directory / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        """The generated KDC profile (``KRB5_KDC_PROFILE``)."""
        return self.directory / "kdc.conf"

    @property
    def log_path(self) -> Path:
        """The KDC's log."""
        return self.directory / "kdc.log"

    @property
    def env(self) -> dict[str, str]:
        """What a process needs in its environment to use this realm (add ``KRB5CCNAME`` or
        ``KRB5_CLIENT_KTNAME`` for its own credentials)."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def keytab(self, name: str) -> Path:
        """Where :meth:`add_principal` writes ``name``'s keytab (``/`` becomes ``_``)."""
        return self.directory / f"{name.replace('/', '_')}.keytab"

    def principal(self, name: str) -> str:
        """``name`` qualified with the realm (``alice`` -> ``alice@AIOCOORD.TEST``)."""
        return name if "@" in name else f"{name}@{self.realm}"

    # --- lifecycle ----------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        """Whether the KDC process runs."""
        return self._process is not None and self._process.is_running()

    def start(self) -> None:
        """Make the realm's database and start the KDC; returns once it accepts connections."""
        if self.is_running:
            return
        missing = kdc_tools_missing()
        if missing:
            raise ServerSetupError(missing)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_ports(1, self.host)[0]
        self._write_profiles()
        if not (self.directory / "principal").exists():
            # The master key only guards this throwaway database; -s stashes it for the KDC.
            self._run("kdb5_util", "create", "-s", "-r", self.realm, "-P", secrets.token_hex(16))
        command = [_tool("krb5kdc") or "krb5kdc", "-n", "-r", self.realm]
        # spawn_jvm is the launcher of every test server: own session, killed with its parent.
        self._process = spawn_jvm(
            command,
            log_path=self.log_path,
            cwd=self.directory,
            die_with_parent=True,
            env={**os.environ, **self.env},
        )
        self._wait_ready()

    def add_principal(self, name: str, *, keytab: bool = True) -> str:
        """Create principal ``name`` (``alice``, ``zookeeper/localhost``) with a random key and,
        with ``keytab``, export that key to :meth:`keytab` ``(name)``; returns the full name.

        Exporting the key again (:meth:`rekey`) changes it: older keytabs stop working.
        """
        full = self.principal(name)
        self._kadmin(f"addprinc -randkey {full}", expect="created.")
        if keytab:
            self.rekey(name)
        return full

    def rekey(self, name: str) -> Path:
        """Give ``name`` a new random key and write it to its keytab (replacing the file);
        keytabs copied before hold a key the KDC no longer accepts."""
        path = self.keytab(name)
        path.unlink(missing_ok=True)
        self._kadmin(f"ktadd -k {path} {self.principal(name)}", expect="added to keytab")
        return path

    def close(self) -> None:
        """Stop the KDC (its files stay in :attr:`directory`)."""
        if self._process is not None:
            self._process.terminate(5.0)
            self._process = None

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<KerberosKDC {self.realm} {self.host}:{self.port} {state}>"

    # --- internals ----------------------------------------------------------------------

    def _write_profiles(self) -> None:
        d, realm, address = self.directory, self.realm, f"{self.host}:{self.port}"
        # AES with SHA-1 only: what every JDK since 8 and every MIT release speak alike.
        enctypes = "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96"
        self.krb5_conf.write_text(
            _profile(
                {
                    "libdefaults": [
                        f"default_realm = {realm}",
                        "dns_lookup_kdc = false",
                        "dns_lookup_realm = false",
                        # No DNS at all: the tests name hosts as the principals do.
                        "dns_canonicalize_hostname = false",
                        "rdns = false",
                        # TCP only: a UDP port next to a free TCP one may well be taken.
                        "udp_preference_limit = 1",
                        f"default_tkt_enctypes = {enctypes}",
                        f"default_tgs_enctypes = {enctypes}",
                        f"permitted_enctypes = {enctypes}",
                    ],
                    "realms": [f"{realm} = {{", f"  kdc = {address}", "}"],
                    "domain_realm": [f"localhost = {realm}", f"{self.host} = {realm}"],
                }
            )
        )
        self.kdc_conf.write_text(
            _profile(
                {
                    "kdcdefaults": [f"kdc_listen = {address}", f"kdc_tcp_listen = {address}"],
                    "realms": [
                        f"{realm} = {{",
                        f"  database_name = {d / 'principal'}",
                        f"  key_stash_file = {d / 'stash'}",
                        f"  acl_file = {d / 'kadm5.acl'}",
                        f"  supported_enctypes = {enctypes.replace(' ', ':normal ')}:normal",
                        "}",
                    ],
                    "logging": [f"kdc = FILE:{self.log_path}"],
                }
            )
        )
        (d / "kadm5.acl").write_text("")

    def _kadmin(self, query: str, *, expect: str) -> None:
        # kadmin.local exits 0 even when the query fails: success is what it prints.
        out = self._run("kadmin.local", "-r", self.realm, "-q", query)
        if expect not in out:
            raise ServerSetupError(f"kadmin.local {query!r} failed: {out.strip()}")

    def _run(self, tool: str, *args: str) -> str:
        """Run ``tool`` with the realm's profiles; its output (standard output and error)."""
        path = _tool(tool)
        if path is None:
            raise ServerSetupError(kdc_tools_missing() or f"{tool} not found")
        done = subprocess.run(
            [path, *args],
            env={**os.environ, **self.env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise ServerSetupError(
                f"{tool} {' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()}"
            )
        return done.stdout + done.stderr

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if not self.is_running:
                self.close()
                raise ServerNotReadyError(f"the KDC exited; its log:\n{self._log_tail()}")
            try:
                socket.create_connection((self.host, self.port), timeout=1.0).close()
                return
            except OSError:
                pass
            if time.monotonic() >= deadline:
                self.close()
                raise ServerNotReadyError(
                    f"the KDC did not listen within {self.startup_timeout}s:\n{self._log_tail()}"
                )
            time.sleep(0.05)

    def _log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def _profile(sections: dict[str, Iterable[str]]) -> str:
    """An MIT profile (``krb5.conf`` syntax) from section name -> lines."""
    out: list[str] = []
    for name, lines in sections.items():
        out.append(f"[{name}]")
        out.extend(f"  {line}" for line in lines)
        out.append("")
    return "\n".join(out)
