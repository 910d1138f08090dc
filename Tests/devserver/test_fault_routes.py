"""Faults the sync engine's chaos suite relies on: drop=after on every write route, the
kept-alive-connection resend hazard, the server clock offset, and repeat-locator."""
import datetime
import email.utils
import http.client
import json
import shutil
import subprocess
import time
import urllib.parse
import uuid

import pytest
import requests

from devserver_harness import API_VERSION, TOKEN, binary_path

V = f"v{API_VERSION}"


def session():
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    return s


def set_faults(server, spec):
    r = session().put(f"{server.url}/__devserver/faults", data=spec)
    assert r.status_code == 200, r.text


def soql(server, q):
    r = session().get(f"{server.api}/query", params={"q": q})
    r.raise_for_status()
    return r.json()


def contact(server, last_name):
    r = session().post(f"{server.api}/sobjects/Contact", json={"LastName": last_name})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def alive(server, type_, id_):
    return session().get(f"{server.api}/sobjects/{type_}/{id_}").status_code == 200


def field(server, type_, id_, name):
    r = session().get(f"{server.api}/sobjects/{type_}/{id_}", params={"fields": name})
    r.raise_for_status()
    return r.json()[name]


def count_contacts(server, last_name):
    return soql(server, f"SELECT COUNT() FROM Contact WHERE LastName = '{last_name}'")["totalSize"]


def widget_ids(server, ext):
    return [r["Id"] for r in soql(server, f"SELECT Id FROM Widget__c WHERE External_Id__c = '{ext}'")["records"]]


# Each route: (method, glob, make(server) -> (path, body), committed(server, made) -> bool).
# `make` prepares what the write needs (without faults) and returns the request; `committed`
# checks on the server that the dropped request was handled all the same.


def _post_sobject(server):
    name = f"Drop-{uuid.uuid4().hex[:8]}"
    return ("POST", "sobjects/Contact", {"LastName": name}), lambda: count_contacts(server, name) == 1


def _patch_sobject(server):
    cid = contact(server, "PatchMe")
    return ("PATCH", f"sobjects/Contact/{cid}", {"Title": "Patched"}), lambda: field(server, "Contact", cid, "Title") == "Patched"


def _delete_sobject(server):
    cid = contact(server, "DeleteMe")
    return ("DELETE", f"sobjects/Contact/{cid}", None), lambda: not alive(server, "Contact", cid)


def _upsert_external(server):
    ext = uuid.uuid4().hex
    return (("PATCH", f"sobjects/Widget__c/External_Id__c/{ext}", {"Name": "Upserted"}),
            lambda: len(widget_ids(server, ext)) == 1)


def _post_collection(server):
    name = f"Coll-{uuid.uuid4().hex[:8]}"
    body = {"allOrNone": False, "records": [{"attributes": {"type": "Contact"}, "LastName": name} for _ in range(3)]}
    return ("POST", "composite/sobjects", body), lambda: count_contacts(server, name) == 3


def _patch_collection(server):
    ids = [contact(server, "CollPatch") for _ in range(2)]
    body = {"allOrNone": False, "records": [{"attributes": {"type": "Contact"}, "Id": i, "Title": "Bulk"} for i in ids]}
    return ("PATCH", "composite/sobjects", body), lambda: all(field(server, "Contact", i, "Title") == "Bulk" for i in ids)


def _delete_collection(server):
    ids = [contact(server, "CollDelete") for _ in range(2)]
    return ("DELETE", f"composite/sobjects?ids={','.join(ids)}&allOrNone=false", None), lambda: not any(alive(server, "Contact", i) for i in ids)


def _upsert_collection(server):
    exts = [uuid.uuid4().hex for _ in range(2)]
    body = {"allOrNone": False, "records": [{"attributes": {"type": "Widget__c"}, "External_Id__c": e, "Name": "Bulk"} for e in exts]}
    return ("PATCH", "composite/sobjects/Widget__c/External_Id__c", body), lambda: all(len(widget_ids(server, e)) == 1 for e in exts)


def _composite(server):
    name = f"Comp-{uuid.uuid4().hex[:8]}"
    body = {"allOrNone": False, "compositeRequest": [
        {"method": "POST", "url": f"/services/data/{V}/sobjects/Account", "referenceId": "acc", "body": {"Name": name}},
        {"method": "POST", "url": f"/services/data/{V}/sobjects/Contact", "referenceId": "con",
         "body": {"LastName": name, "AccountId": "@{acc.id}"}},
    ]}
    return ("POST", "composite", body), lambda: count_contacts(server, name) == 1 and soql(
        server, f"SELECT COUNT() FROM Account WHERE Name = '{name}'")["totalSize"] == 1


def _composite_batch(server):
    name = f"Batch-{uuid.uuid4().hex[:8]}"
    body = {"batchRequests": [{"method": "POST", "url": f"{V}/sobjects/Contact", "richInput": {"LastName": name}},
                              {"method": "POST", "url": f"{V}/sobjects/Contact", "richInput": {"LastName": name}}]}
    return ("POST", "composite/batch", body), lambda: count_contacts(server, name) == 2


ROUTES = {
    "POST sobjects/{t}": ("POST", "*/sobjects/Contact", _post_sobject),
    "PATCH sobjects/{t}/{id}": ("PATCH", "*/sobjects/Contact/*", _patch_sobject),
    "DELETE sobjects/{t}/{id}": ("DELETE", "*/sobjects/Contact/*", _delete_sobject),
    "PATCH sobjects/{t}/{extField}/{value}": ("PATCH", "*/sobjects/Widget__c/External_Id__c/*", _upsert_external),
    "POST composite/sobjects": ("POST", "*/composite/sobjects", _post_collection),
    "PATCH composite/sobjects": ("PATCH", "*/composite/sobjects", _patch_collection),
    "DELETE composite/sobjects": ("DELETE", "*/composite/sobjects", _delete_collection),
    "PATCH composite/sobjects/{t}/{extField}": ("PATCH", "*/composite/sobjects/Widget__c/External_Id__c", _upsert_collection),
    "POST composite": ("POST", "*/composite", _composite),
    "POST composite/batch": ("POST", "*/composite/batch", _composite_batch),
}


@pytest.fixture(scope="module")
def admin_server():
    from devserver_harness import DevServer

    s = DevServer("--admin")
    yield s
    s.stop()


@pytest.mark.parametrize("route", list(ROUTES))
def test_drop_after_commits_on_every_write_route(admin_server, route):
    method, glob, make = ROUTES[route]
    (verb, path, body), committed = make(admin_server)
    assert verb == method
    set_faults(admin_server, f"{method} {glob} drop=after times=1")
    try:
        s = session()  # a fresh connection: nothing may resend the request behind our back
        with pytest.raises(requests.exceptions.ConnectionError):
            s.request(method, f"{admin_server.api}/{path}", json=body, timeout=30)
        state = session().get(f"{admin_server.url}/__devserver/faults").text
        assert "fired 1" in state, state
    finally:
        session().delete(f"{admin_server.url}/__devserver/faults")
    # The client heard nothing, yet the server handled and committed the write.
    assert committed(), f"{route}: the dropped request was not committed"


def test_drop_before_commits_nothing_on_collections(admin_server):
    name = f"Before-{uuid.uuid4().hex[:8]}"
    set_faults(admin_server, "POST */composite/sobjects drop=before times=1")
    try:
        with pytest.raises(requests.exceptions.ConnectionError):
            session().post(f"{admin_server.api}/composite/sobjects",
                           json={"allOrNone": False, "records": [{"attributes": {"type": "Contact"}, "LastName": name}]}, timeout=30)
    finally:
        session().delete(f"{admin_server.url}/__devserver/faults")
    assert count_contacts(admin_server, name) == 0


def test_keepalive_drop_is_what_a_naive_client_resends(admin_server):
    """On a kept-alive connection a request dropped after commit looks exactly like a stale idle
    connection the server closed: no byte of answer. Clients that resend in that case (libcurl
    does for any method, http.client users often do) create the record twice."""
    host, port = urllib.parse.urlsplit(admin_server.url).netloc.split(":")
    name = f"KeepAlive-{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", f"/services/data/{V}/limits", headers=headers)
    first = conn.getresponse()
    assert first.status == 200 and first.getheader("Connection", "keep-alive").lower() != "close"
    first.read()
    sock = conn.sock
    set_faults(admin_server, "POST */sobjects/Contact drop=after times=1")
    try:
        body = json.dumps({"LastName": name})
        conn.request("POST", f"/services/data/{V}/sobjects/Contact", body=body, headers=headers)
        assert conn.sock is sock, "the POST did not go out on the kept-alive connection"
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            conn.getresponse()
        # Committed although unanswered...
        assert count_contacts(admin_server, name) == 1
        # ...so the naive "stale connection: reconnect and resend" creates it again.
        conn.close()
        conn.request("POST", f"/services/data/{V}/sobjects/Contact", body=body, headers=headers)
        again = conn.getresponse()
        assert again.status == 201
        again.read()
        assert count_contacts(admin_server, name) == 2
    finally:
        conn.close()
        session().delete(f"{admin_server.url}/__devserver/faults")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_resends_a_post_dropped_on_a_reused_connection(admin_server):
    """libcurl (what the engine uses) retries a request on a fresh connection when a reused one
    dies before any answer, POST included: the dropped-after-commit create is made twice."""
    name = f"Curl-{uuid.uuid4().hex[:8]}"
    set_faults(admin_server, "POST */sobjects/Contact drop=after times=1")
    try:
        auth = f"Authorization: Bearer {TOKEN}"
        out = subprocess.run(
            ["curl", "-sS", "-v", "-o", "/dev/null", "-H", auth, f"{admin_server.api}/limits", "--next",
             "-sS", "-H", auth, "-H", "Content-Type: application/json", "-d", json.dumps({"LastName": name}),
             f"{admin_server.api}/sobjects/Contact"],
            capture_output=True, text=True, timeout=60)
    finally:
        session().delete(f"{admin_server.url}/__devserver/faults")
    assert "Re-using existing connection" in out.stderr, out.stderr
    assert out.returncode == 0 and '"success":true' in out.stdout, out.stderr
    assert count_contacts(admin_server, name) == 2


# ---- clock offset ----


def _parse_sf(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%f%z")


def _raw_date_headers(server, path):
    """Every Date header of one answer (http.client keeps duplicates, requests would join them)."""
    host, port = urllib.parse.urlsplit(server.url).netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {TOKEN}"})
        r = conn.getresponse()
        r.read()
        return r.msg.get_all("Date") or []
    finally:
        conn.close()


def test_clock_offset_shifts_stamps_and_date_header(start_server):
    server = start_server("--clock-offset", "-600")
    real = datetime.datetime.now(datetime.timezone.utc)
    s = session()
    r = s.post(f"{server.api}/sobjects/Contact", json={"LastName": "Skewed"})
    assert r.status_code == 201
    rec = s.get(f"{server.api}/sobjects/Contact/{r.json()['id']}").json()
    for name in ("CreatedDate", "LastModifiedDate", "SystemModstamp"):
        lag = (real - _parse_sf(rec[name])).total_seconds()
        assert 590 <= lag <= 610, (name, rec[name], lag)
    dates = _raw_date_headers(server, f"/services/data/{V}/limits")
    assert len(dates) == 1, dates
    header_lag = (real - email.utils.parsedate_to_datetime(dates[0])).total_seconds()
    assert 589 <= header_lag <= 611, dates
    # updated window and latestDateCovered follow the server clock.
    now_server = real - datetime.timedelta(seconds=600)
    start = (now_server - datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    end = (real + datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    upd = s.get(f"{server.api}/sobjects/Contact/updated", params={"start": start, "end": end}).json()
    assert r.json()["id"] in upd["ids"]
    covered = (real - _parse_sf(upd["latestDateCovered"])).total_seconds()
    assert 590 <= covered <= 670, upd
    # A window ending at the real "now minus 9 minutes" does not see a record the skewed server
    # stamped 10 minutes back... but one ending at real now does (the trap for client clocks).
    early_end = (real - datetime.timedelta(minutes=11)).strftime("%Y-%m-%dT%H:%M:%SZ")
    early = s.get(f"{server.api}/sobjects/Contact/updated",
                  params={"start": (real - datetime.timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ"), "end": early_end}).json()
    assert r.json()["id"] not in early["ids"]


def test_clock_offset_moves_soql_date_literals(start_server):
    # 23 hours ahead: either TODAY is tomorrow, or (late in the UTC day) it is the day after.
    server = start_server("--clock-offset", "+86400")
    s = session()
    cid = s.post(f"{server.api}/sobjects/Contact", json={"LastName": "Tomorrow"}).json()["id"]
    today = soql(server, "SELECT Id FROM Contact WHERE CreatedDate = TODAY")
    assert [r["Id"] for r in today["records"]] == [cid]
    yesterday = soql(server, "SELECT Id FROM Contact WHERE CreatedDate = YESTERDAY")
    assert yesterday["totalSize"] == 0
    real_today = datetime.datetime.now(datetime.timezone.utc).date()
    assert _parse_sf(s.get(f"{server.api}/sobjects/Contact/{cid}").json()["CreatedDate"]).date() == real_today + datetime.timedelta(days=1)


def test_clock_admin_endpoint(start_server):
    server = start_server("--admin")
    s = session()
    assert s.get(f"{server.url}/__devserver/clock").json()["offsetSeconds"] == 0
    r = s.put(f"{server.url}/__devserver/clock", json={"offsetSeconds": 300})
    assert r.status_code == 200 and r.json()["offsetSeconds"] == 300
    real = datetime.datetime.now(datetime.timezone.utc)
    dates = _raw_date_headers(server, f"/services/data/{V}/limits")
    assert len(dates) == 1
    assert 299 <= (email.utils.parsedate_to_datetime(dates[0]) - real).total_seconds() <= 301
    cid = s.post(f"{server.api}/sobjects/Contact", json={"LastName": "Ahead"}).json()["id"]
    stamp = _parse_sf(s.get(f"{server.api}/sobjects/Contact/{cid}").json()["LastModifiedDate"])
    assert 295 <= (stamp - real).total_seconds() <= 305
    # Lowered at run time: stamps never go back (one ms apart until the clock catches up).
    assert s.put(f"{server.url}/__devserver/clock", data="-300").json()["offsetSeconds"] == -300
    cid2 = s.post(f"{server.api}/sobjects/Contact", json={"LastName": "After"}).json()["id"]
    stamp2 = _parse_sf(s.get(f"{server.api}/sobjects/Contact/{cid2}").json()["LastModifiedDate"])
    assert stamp2 > stamp and (stamp2 - stamp).total_seconds() < 1
    dates = _raw_date_headers(server, f"/services/data/{V}/limits")
    assert 299 <= (real - email.utils.parsedate_to_datetime(dates[0])).total_seconds() <= 302
    assert s.put(f"{server.url}/__devserver/clock", data="86401").status_code == 400
    assert s.put(f"{server.url}/__devserver/clock", data="soon").status_code == 400
    assert s.delete(f"{server.url}/__devserver/clock").json()["offsetSeconds"] == 0
    # Token expiry stays on the real clock: an issued token still works with the clock a day ahead.
    tok = requests.post(f"{server.url}/services/oauth2/token",
                        data={"grant_type": "password", "username": "dev@example.com", "password": "devpassword"}).json()
    s.put(f"{server.url}/__devserver/clock", data="86400")
    assert requests.get(f"{server.api}/limits", headers={"Authorization": f"Bearer {tok['access_token']}"}).status_code == 200
    plain = start_server()
    assert session().get(f"{plain.url}/__devserver/clock").status_code == 404


def test_no_offset_keeps_one_real_date_header(start_server):
    server = start_server()
    dates = _raw_date_headers(server, f"/services/data/{V}/limits")
    assert len(dates) == 1
    lag = (datetime.datetime.now(datetime.timezone.utc) - email.utils.parsedate_to_datetime(dates[0])).total_seconds()
    assert -2 <= lag <= 2


@pytest.mark.parametrize("value", ["86401", "-90000", "ten", ""])
def test_bad_clock_offset_is_rejected(value):
    r = subprocess.run([binary_path(), "--port", "0", "--clock-offset", value], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "clock-offset" in r.stderr


def test_help_documents_the_new_faults():
    r = subprocess.run([binary_path(), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for text in ("--clock-offset", "repeat-locator", "/__devserver/clock"):
        assert text in r.stdout, text


# ---- repeat-locator ----


def test_repeat_locator_serves_the_same_page_again(start_server):
    server = start_server("--admin", "--seed", "Contact=12", "--min-batch-size", "5", "--default-batch-size", "5")
    s = session()
    q = "SELECT Id FROM Contact ORDER BY Id"
    clean = soql(server, q)
    assert clean["done"] is False and len(clean["records"]) == 5
    set_faults(server, "GET */query* repeat-locator")
    first = soql(server, q)
    assert first["done"] is False and first["records"] == clean["records"]
    url = first["nextRecordsUrl"]
    assert url.endswith("-0")
    # A naive client following nextRecordsUrl gets the same page, and the same link, forever.
    for _ in range(5):
        page = s.get(f"{server.url}{url}").json()
        assert page["records"] == first["records"] and page["done"] is False
        assert page["nextRecordsUrl"] == url
    # Later pages repeat themselves too.
    set_faults(server, "")
    second_url = soql(server, q)["nextRecordsUrl"]
    second = s.get(f"{server.url}{second_url}").json()
    set_faults(server, "GET */query* repeat-locator times=1")
    again = s.get(f"{server.url}{second_url}").json()
    assert again["records"] == second["records"] and again["nextRecordsUrl"] == second_url and again["done"] is False
    # Once the rule is spent the chain moves on and ends with every record served once.
    ids = [r["Id"] for r in clean["records"]]
    page = s.get(f"{server.url}{second_url}").json()
    assert page["records"] == second["records"] and page["nextRecordsUrl"] != second_url
    while True:
        ids += [r["Id"] for r in page["records"]]
        if page["done"]:
            break
        page = s.get(f"{server.url}{page['nextRecordsUrl']}").json()
    assert len(ids) == 12 and len(set(ids)) == 12
    assert "fired 1" in s.get(f"{server.url}/__devserver/faults").text


def test_repeat_locator_loops_even_a_single_page_and_skips_other_requests(start_server):
    server = start_server("--admin", "--seed", "Contact=3")
    s = session()
    set_faults(server, "repeat-locator times=2")
    # Not a query: passes by without using up the rule.
    assert s.get(f"{server.api}/limits").status_code == 200
    page = soql(server, "SELECT Id FROM Contact")
    assert page["totalSize"] == 3 and page["done"] is False and page["nextRecordsUrl"].endswith("-0")
    again = s.get(f"{server.url}{page['nextRecordsUrl']}").json()
    assert again["records"] == page["records"] and again["nextRecordsUrl"] == page["nextRecordsUrl"]
    # Spent (fired twice): the same locator now ends normally.
    last = s.get(f"{server.url}{page['nextRecordsUrl']}").json()
    assert last["done"] is True and "nextRecordsUrl" not in last and len(last["records"]) == 3
    # COUNT() queries have no records to repeat.
    set_faults(server, "repeat-locator")
    assert soql(server, "SELECT COUNT() FROM Contact") == {"totalSize": 3, "done": True, "records": []}
