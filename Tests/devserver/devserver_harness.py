"""Helpers for the devserver suite: start the real syncstore-devserver binary on 127.0.0.1 (port 0).

A module with a unique name (not conftest) so tests can import it even when pytest collects
several suites with their own conftest.py in one run.
The binary is not built here: SYNCSTORE_DEVSERVER names it, default .build/debug/syncstore-devserver.
"""
import datetime
import ipaddress
import os
import pathlib
import select
import subprocess
import tempfile
import time

import pytest
import requests

REPO = pathlib.Path(__file__).resolve().parents[2]
TOKEN = "devserver-test-token"
API_VERSION = "60.0"


def binary_path():
    path = pathlib.Path(os.environ.get("SYNCSTORE_DEVSERVER", REPO / ".build/debug/syncstore-devserver"))
    if not path.is_absolute():
        path = REPO / path
    if not path.exists():
        pytest.fail(f"devserver binary not found at {path}; build it or set SYNCSTORE_DEVSERVER")
    return str(path)


class DevServer:
    """One running server process; `url` is the first line it printed."""

    def __init__(self, *args, tls=None, startup_timeout=120):
        cmd = [binary_path(), "--host", "127.0.0.1", "--port", "0", "--token", TOKEN, *args]
        if tls:
            cmd += ["--tls-cert", tls[0], "--tls-key", tls[1]]
        self.cmd = cmd
        # stderr goes to a file: an unread pipe could fill up and block the server.
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr)
        deadline = time.time() + startup_timeout
        line = b""
        while time.time() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        if not line:
            self.proc.kill()
            self.proc.wait()
            self.stderr.seek(0)
            err = self.stderr.read().decode(errors="replace")
            raise RuntimeError(f"devserver did not print its URL: {' '.join(cmd)}\n{err}")
        self.url = line.decode().strip()
        self.api = f"{self.url}/services/data/v{API_VERSION}"

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def make_self_signed(directory: pathlib.Path):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path = directory / "cert.pem"
    key_path = directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def trusting_session(cafile):
    """A requests session that trusts only the test certificate.

    trust_env=False: REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE in the environment would otherwise
    override `verify`, and proxy variables must not apply to 127.0.0.1.
    """
    session = requests.Session()
    session.trust_env = False
    session.verify = cafile
    return session


SEED = "Account=300,Contact=2500,Opportunity=200,Widget__c=60"
