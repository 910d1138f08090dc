"""Fault injection (--faults and the admin endpoint) as the sync engine tests will use it."""
import subprocess
import time

import pytest
import requests

from devserver_harness import TOKEN, binary_path


def session():
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    return s


def count(s, server, where):
    r = s.get(f"{server.api}/query", params={"q": f"SELECT COUNT() FROM Contact WHERE {where}"})
    r.raise_for_status()
    return r.json()["totalSize"]


def test_drop_after_commit(start_server):
    server = start_server("--faults", "POST */sobjects/Contact drop=after times=1")
    s = session()
    with pytest.raises(requests.exceptions.ConnectionError):
        s.post(f"{server.api}/sobjects/Contact", json={"LastName": "Dropped"})
    # The server committed the create even though the client never saw the answer.
    assert count(s, server, "LastName = 'Dropped'") == 1
    again = s.post(f"{server.api}/sobjects/Contact", json={"LastName": "Dropped"})
    assert again.status_code == 201
    assert count(s, server, "LastName = 'Dropped'") == 2


def test_drop_before_does_not_commit(start_server):
    server = start_server("--faults", "POST * drop=before times=1")
    s = session()
    with pytest.raises(requests.exceptions.ConnectionError):
        s.post(f"{server.api}/sobjects/Contact", json={"LastName": "Never"})
    assert count(s, server, "LastName = 'Never'") == 0


def test_drop_mid_body(start_server):
    server = start_server("--seed", "Contact=300", "--faults", "GET */query drop=mid times=1")
    s = session()
    with pytest.raises((requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError)):
        s.get(f"{server.api}/query", params={"q": "SELECT Id, LastName FROM Contact"}).json()
    ok = s.get(f"{server.api}/query", params={"q": "SELECT Id, LastName FROM Contact"})
    assert ok.status_code == 200 and ok.json()["totalSize"] == 300


def test_latency_every_request(start_server):
    server = start_server("--faults", "latency=20ms")
    s = session()
    for _ in range(5):
        t0 = time.monotonic()
        assert s.get(f"{server.api}/limits").status_code == 200
        assert time.monotonic() - t0 >= 0.020


def test_5xx_then_recovery(start_server):
    server = start_server("--faults", "GET */query* status=503 times=2")
    s = session()
    codes = [s.get(f"{server.api}/query", params={"q": "SELECT Id FROM Contact"}) for _ in range(3)]
    assert [c.status_code for c in codes] == [503, 503, 200]
    assert codes[0].json()[0]["errorCode"] == "SERVER_UNAVAILABLE"
    assert codes[0].headers["Retry-After"] == "1" and codes[0].headers["Content-Type"].startswith("application/json")


def test_401_storm(start_server):
    server = start_server("--faults", "* unauthorized after=1 times=3")
    s = session()
    codes = [s.get(f"{server.api}/limits").status_code for _ in range(6)]
    assert codes == [200, 401, 401, 401, 200, 200]
    r = s.get(f"{server.api}/limits")
    assert r.status_code == 200


def test_expire_tokens_forces_refresh(start_server):
    server = start_server("--faults", "GET */limits expire-tokens after=1 times=1")
    s = requests.Session()
    s.trust_env = False
    tok = s.post(f"{server.url}/services/oauth2/token", data={"grant_type": "password", "username": "dev@example.com", "password": "devpassword"}).json()
    h = {"Authorization": f"Bearer {tok['access_token']}"}
    assert s.get(f"{server.api}/limits", headers=h).status_code == 200
    assert s.get(f"{server.api}/limits", headers=h).status_code == 401
    assert s.get(f"{server.api}/sobjects", headers=h).json()[0]["errorCode"] == "INVALID_SESSION_ID"
    new = s.post(f"{server.url}/services/oauth2/token", data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]}).json()
    assert s.get(f"{server.api}/sobjects", headers={"Authorization": f"Bearer {new['access_token']}"}).status_code == 200


def test_rate_is_reproducible_by_seed(start_server):
    spec = "seed=42; GET */limits status=500 rate=0.5"
    runs = []
    for _ in range(2):
        server = start_server("--faults", spec)
        s = session()
        runs.append([s.get(f"{server.api}/limits").status_code for _ in range(40)])
    assert runs[0] == runs[1]
    assert set(runs[0]) == {200, 500}


def test_admin_endpoint(start_server):
    server = start_server("--admin")
    s = session()
    assert s.get(f"{server.api}/limits").status_code == 200
    put = s.put(f"{server.url}/__devserver/faults", data="GET */limits status=502 times=1")
    assert put.status_code == 200 and "status=502" in put.text
    assert s.get(f"{server.api}/limits").status_code == 502
    assert s.get(f"{server.api}/limits").status_code == 200
    assert "fired 1" in s.get(f"{server.url}/__devserver/faults").text
    assert s.put(f"{server.url}/__devserver/faults", data="bogus=1").status_code == 400
    assert s.delete(f"{server.url}/__devserver/faults").status_code == 204
    plain = start_server()
    assert session().put(f"{plain.url}/__devserver/faults", data="latency=1ms").status_code == 404


def test_bad_fault_spec_is_rejected():
    r = subprocess.run([binary_path(), "--port", "0", "--faults", "GET * drop=sideways"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "drop=sideways" in r.stderr


def test_admin_import_makes_ties(start_server):
    server = start_server("--admin")
    s = session()
    stamp = "2025-06-01T12:00:00.000+0000"
    records = {"Contact": [{"LastName": f"Tie{i:03}", "LastModifiedDate": stamp} for i in range(5)]}
    r = s.post(f"{server.url}/__devserver/import", json=records)
    assert r.status_code == 200 and r.json() == {"imported": 5}
    got = s.get(f"{server.api}/query", params={"q": f"SELECT Id FROM Contact WHERE LastModifiedDate = {stamp}"}).json()
    assert got["totalSize"] == 5
    bad = s.post(f"{server.url}/__devserver/import", json={"Nope": [{}]})
    assert bad.status_code == 400
    # Writes after an import still get stamps after everything imported.
    new = s.post(f"{server.api}/sobjects/Contact", json={"LastName": "After"}).json()["id"]
    after = s.get(f"{server.api}/sobjects/Contact/{new}").json()["SystemModstamp"]
    assert after > stamp
