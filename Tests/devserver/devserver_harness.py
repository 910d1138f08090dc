"""Helpers for the devserver suite: the real syncstore-devserver binary on 127.0.0.1 (port 0),
started by the shared fixture (Tests/support/devserver_process.py).

A module with a unique name (not conftest) so tests can import it even when pytest collects
several suites with their own conftest.py in one run.
"""
import datetime
import ipaddress
import pathlib
import sys

import requests

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "Tests" / "support"))
import devserver_process  # noqa: E402
from devserver_process import binary_path  # noqa: E402,F401  (the suite's tests run the binary with bad flags)

TOKEN = "devserver-test-token"
API_VERSION = "60.0"


class DevServer(devserver_process.DevServer):
    """One running server process; `url` is the first line it printed."""

    def __init__(self, *args, tls=None):
        super().__init__(*args, token=TOKEN, api_version=f"v{API_VERSION}", tls=tls)


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
