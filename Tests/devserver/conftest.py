"""pytest fixtures for the devserver suite (helpers live in devserver_harness.py)."""
import pytest

from devserver_harness import SEED, TOKEN, API_VERSION, DevServer, make_self_signed, trusting_session


@pytest.fixture
def start_server():
    """Factory for servers with custom flags; all are stopped at the end of the test."""
    servers = []

    def start(*args, tls=None):
        s = DevServer(*args, tls=tls)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    return make_self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def https_server(tls_files):
    """The shared HTTPS server most tests use (seeded, deterministic)."""
    s = DevServer("--seed", SEED, tls=tls_files)
    yield s
    s.stop()
    assert s.proc.returncode in (0, -15), "server exited abnormally"


@pytest.fixture
def sf(https_server, tls_files):
    from simple_salesforce import Salesforce

    return Salesforce(instance_url=https_server.url, session_id=TOKEN, session=trusting_session(tls_files[0]), version=API_VERSION)


@pytest.fixture
def http(tls_files):
    """A plain requests session trusting the test certificate, with the bearer token."""
    session = trusting_session(tls_files[0])
    session.headers["Authorization"] = f"Bearer {TOKEN}"
    return session
