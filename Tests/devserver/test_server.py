"""Command line behaviour: persistence, deterministic seeds, import, custom schema, help."""
import json
import subprocess

import requests

from devserver_harness import TOKEN, binary_path


def session():
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    return s


def query(server, soql):
    r = session().get(f"{server.api}/query", params={"q": soql})
    r.raise_for_status()
    return r.json()


def test_data_survives_restart(start_server, tmp_path):
    db = str(tmp_path / "org.sqlite")
    first = start_server("--db", db, "--seed", "Account=5")
    created = session().post(f"{first.api}/sobjects/Contact", json={"LastName": "Durable"}).json()["id"]
    stamp = query(first, f"SELECT SystemModstamp FROM Contact WHERE Id = '{created}'")["records"][0]["SystemModstamp"]
    first.stop()
    second = start_server("--db", db, "--seed", "Account=5")
    assert query(second, "SELECT COUNT() FROM Account")["totalSize"] == 5, "seeding skips non-empty types"
    assert query(second, f"SELECT LastName FROM Contact WHERE Id = '{created}'")["records"][0]["LastName"] == "Durable"
    newer = session().post(f"{second.api}/sobjects/Contact", json={"LastName": "Later"}).json()["id"]
    assert newer != created
    stamp2 = query(second, f"SELECT SystemModstamp FROM Contact WHERE Id = '{newer}'")["records"][0]["SystemModstamp"]
    assert stamp2 > stamp


def test_seed_is_deterministic(start_server):
    a = start_server("--seed", "Account=20,Contact=200")
    b = start_server("--seed", "Contact=200,Account=20")
    soql = "SELECT Id, Name, Email, Account.Name, LastModifiedDate FROM Contact ORDER BY Id"
    assert query(a, soql) == query(b, soql)
    assert query(a, "SELECT COUNT() FROM Contact WHERE AccountId = null")["totalSize"] < 200


def test_import_file(start_server, tmp_path):
    data = {
        "Account": [{"Id": "001000000000XYZ", "Name": "Imported Inc", "LastModifiedDate": "2024-05-01T10:00:00.000+0000"}],
        "Contact": [{"LastName": "Child", "AccountId": "001000000000XYZ"}],
    }
    path = tmp_path / "import.json"
    path.write_text(json.dumps(data))
    server = start_server("--import", str(path))
    rec = query(server, "SELECT LastName, Account.Name FROM Contact")["records"][0]
    assert rec["Account"]["Name"] == "Imported Inc"
    acc = query(server, "SELECT Id, LastModifiedDate FROM Account")["records"][0]
    assert acc == {"attributes": acc["attributes"], "Id": "001000000000XYZAA2", "LastModifiedDate": "2024-05-01T10:00:00.000+0000"}


def test_custom_schema(start_server, tmp_path):
    schema = {"sobjects": [
        {"name": "Account", "keyPrefix": "001", "fields": [{"name": "Name", "type": "string", "required": True, "nameField": True}]},
        {"name": "Gadget__c", "keyPrefix": "a0G", "fields": [
            {"name": "Name", "type": "string", "nameField": True},
            {"name": "Serial__c", "type": "string", "externalId": True, "unique": True},
            {"name": "Account__c", "type": "reference", "referenceTo": "Account", "relationshipName": "Account__r", "childRelationshipName": "Gadgets__r"},
        ]},
        {"name": "Part__c", "keyPrefix": "a0P", "fields": [
            {"name": "Gadget__c", "type": "reference", "referenceTo": "Gadget__c", "relationshipName": "Gadget__r", "required": True},
        ]},
    ]}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    server = start_server("--schema", str(path), "--seed", "Part__c=20,Gadget__c=10,Account=3")
    res = query(server, "SELECT Name, (SELECT Serial__c FROM Gadgets__r) FROM Account")
    assert res["totalSize"] == 3
    linked = query(server, "SELECT COUNT() FROM Gadget__c WHERE Account__c != null")["totalSize"]
    assert 0 < linked <= 10
    assert sum((a["Gadgets__r"] or {"totalSize": 0})["totalSize"] for a in res["records"]) == linked
    assert query(server, "SELECT Id FROM Gadget__c LIMIT 1")["records"][0]["Id"].startswith("a0G")
    # Seeded parents first whatever the order given: every Part has its (required) Gadget.
    parts = query(server, "SELECT Gadget__r.Name, Gadget__r.Account__r.Name FROM Part__c")["records"]
    assert len(parts) == 20 and all(p["Gadget__r"] is not None for p in parts)
    r = session().get(f"{server.api}/query", params={"q": "SELECT Id FROM Contact"})
    assert r.status_code == 400 and r.json()[0]["errorCode"] == "INVALID_TYPE"


def test_bad_schema_fails_fast(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"sobjects": [{"name": "X", "keyPrefix": "a0X", "fields": [{"name": "L", "type": "reference", "referenceTo": "Nope"}]}]}))
    r = subprocess.run([binary_path(), "--port", "0", "--schema", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "unknown sobject Nope" in r.stderr


def test_start_failures_have_their_exit_codes(start_server, tmp_path):
    """The standalone server as `syncstore-cli serve`: every start failure
    exited 1 and a busy port printed a raw NIO error naming no port."""
    busy = start_server().url.rsplit(":", 1)[1]
    r = subprocess.run([binary_path(), "--port", busy], capture_output=True, text=True, timeout=60)
    assert r.returncode == 75 and f"Port {busy}" in r.stderr and "--port 0" in r.stderr, (r.returncode, r.stderr)
    r = subprocess.run([binary_path(), "--port", "0", "--schema", str(tmp_path / "missing.json")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 66 and "missing.json" in r.stderr, (r.returncode, r.stderr)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = subprocess.run([binary_path(), "--port", "0", "--schema", str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 65 and "bad.json" in r.stderr, (r.returncode, r.stderr)


def test_help_documents_faults():
    r = subprocess.run([binary_path(), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for needle in ["--faults", "drop=before|after|mid", "latency=MS", "--seed", "--tls-cert"]:
        assert needle in r.stdout


def test_min_batch_size_pages_small_data(start_server):
    server = start_server("--seed", "Contact=23", "--min-batch-size", "5")
    s = session()
    h = {"Sforce-Query-Options": "batchSize=5"}
    page = s.get(f"{server.api}/query", params={"q": "SELECT Id FROM Contact ORDER BY LastModifiedDate"}, headers=h).json()
    ids = []
    while True:
        ids += [r["Id"] for r in page["records"]]
        if page["done"]:
            break
        assert len(page["records"]) == 5
        page = s.get(server.url + page["nextRecordsUrl"], headers=h).json()
    assert len(ids) == len(set(ids)) == 23


def test_child_batch_size_pages_nested_children(start_server):
    """Children past --child-batch-size are cut from the parent's nested result and served by
    its own nextRecordsUrl, in order, with totalSize counting them all."""
    server = start_server("--seed", "Account=3,Contact=40", "--child-batch-size", "3")
    soql = "SELECT Id, (SELECT Id, LastName FROM Contacts ORDER BY Id) FROM Account ORDER BY Id"
    accounts = query(server, soql)["records"]
    s = session()
    paged = 0
    for account in accounts:
        nested = account["Contacts"]
        expected = [r["Id"] for r in query(server, f"SELECT Id FROM Contact WHERE AccountId = '{account['Id']}' ORDER BY Id")["records"]]
        if nested is None:
            assert expected == []
            continue
        assert nested["totalSize"] == len(expected)
        assert len(nested["records"]) == min(3, len(expected))
        ids = [r["Id"] for r in nested["records"]]
        if len(expected) > 3:
            paged += 1
            assert nested["done"] is False
            more = s.get(server.url + nested["nextRecordsUrl"]).json()
            assert more["done"] is True and more["totalSize"] == len(expected)
            ids += [r["Id"] for r in more["records"]]
            assert all(r["attributes"]["type"] == "Contact" and "LastName" in r for r in more["records"])
        else:
            assert nested["done"] is True and "nextRecordsUrl" not in nested
        assert ids == expected
    assert paged > 0, "the seed gives some account more than 3 contacts"


def test_expect_100_continue_is_answered(start_server):
    """libcurl sends Expect: 100-continue for bodies over 1 MB and waits 1 s unless answered."""
    import socket
    import time
    import urllib.parse

    server = start_server()
    u = urllib.parse.urlsplit(server.url)
    body = json.dumps({"records": [{"attributes": {"type": "Contact"}, "LastName": f"E{i}"} for i in range(50)]}).encode()
    with socket.create_connection((u.hostname, u.port), timeout=5) as sock:
        head = (f"POST /services/data/v60.0/composite/sobjects HTTP/1.1\r\nHost: {u.netloc}\r\n"
                f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n")
        t0 = time.monotonic()
        sock.sendall(head.encode())
        interim = sock.recv(1024)
        assert interim.startswith(b"HTTP/1.1 100 Continue"), interim
        assert time.monotonic() - t0 < 0.9  # libcurl would wait 1 s
        sock.sendall(body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200")


def test_issued_tokens_expire(start_server):
    import time

    server = start_server("--token-lifetime", "1")
    s = requests.Session()
    s.trust_env = False
    tok = s.post(f"{server.url}/services/oauth2/token", data={"grant_type": "password", "username": "dev@example.com", "password": "devpassword"}).json()
    h = {"Authorization": f"Bearer {tok['access_token']}"}
    assert s.get(f"{server.api}/limits", headers=h).status_code == 200
    time.sleep(1.3)
    expired = s.get(f"{server.api}/limits", headers=h)
    assert expired.status_code == 401 and expired.json()[0]["errorCode"] == "INVALID_SESSION_ID"
    assert session().get(f"{server.api}/limits").status_code == 200, "the --token token never expires"


def test_writes_after_a_big_seed_use_wall_clock_time(start_server):
    import datetime

    server = start_server("--seed", "Contact=20000")
    s = session()
    cid = s.post(f"{server.api}/sobjects/Contact", json={"LastName": "Now"}).json()["id"]
    stamp = s.get(f"{server.api}/sobjects/Contact/{cid}").json()["SystemModstamp"]
    written = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%z")
    assert abs((written - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) < 5
