"""The Streaming API (CometD long-polling with replay) and the Change Data Capture events it serves."""
import re
import threading
import time

import requests

from devserver_harness import TOKEN, API_VERSION

VERSION = "60.0"
REPLAY_ERROR = ("400::The replayId {%s} you provided was invalid.  Please provide a valid ID, "
                "-2 to replay all events, or -1 to replay only new events.")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
FAST = ("--cometd-timeout-ms", "300")


def rest(server, token=TOKEN):
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {token}"
    return s


class Bayeux:
    """A long-polling client keeping cookies, as a CometD client does."""

    def __init__(self, server, version=VERSION, token=TOKEN):
        self.url = f"{server.url}/cometd/{version}"
        self.http = rest(server, token)
        self.client_id = None
        self.seq = 0

    def _id(self):
        self.seq += 1
        return str(self.seq)

    def send(self, *messages, status=200, session=None):
        r = (session or self.http).post(self.url, json=list(messages), timeout=30)
        assert r.status_code == status, r.text
        return r

    def handshake(self):
        r = self.send({"channel": "/meta/handshake", "version": "1.0", "supportedConnectionTypes": ["long-polling"],
                       "ext": {"replay": True}, "id": self._id()})
        reply = r.json()[0]
        assert reply["successful"], reply
        self.client_id = reply["clientId"]
        return reply, r

    def subscribe(self, channel, replay=None):
        msg = {"channel": "/meta/subscribe", "clientId": self.client_id, "subscription": channel, "id": self._id()}
        if replay is not None:
            msg["ext"] = {"replay": {channel: replay}}
        return self.send(msg).json()[0]

    def connect(self, session=None):
        """(events, the connect reply)."""
        out = self.send({"channel": "/meta/connect", "clientId": self.client_id, "connectionType": "long-polling",
                         "id": self._id()}, session=session).json()
        assert out[-1]["channel"] == "/meta/connect", out
        return out[:-1], out[-1]

    def start(self, *channels, replay=None):
        """Handshake, subscribe, and the first connect (answered at once)."""
        self.handshake()
        for c in channels:
            assert self.subscribe(c, replay)["successful"]
        return self.connect()[0]

    def events(self, n, deadline=10):
        """Connects until `n` events came (or the deadline passed)."""
        got = []
        end = time.time() + deadline
        while len(got) < n and time.time() < end:
            got += self.connect()[0]
        return got


def header(event):
    return event["data"]["payload"]["ChangeEventHeader"]


def create(s, server, type_, body, **headers):
    r = s.post(f"{server.api}/sobjects/{type_}", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_handshake_subscribe_connect_round_trip(start_server):
    server = start_server(*FAST)
    c = Bayeux(server)
    reply, r = c.handshake()
    assert reply == {"channel": "/meta/handshake", "clientId": reply["clientId"], "successful": True, "version": "1.0",
                     "supportedConnectionTypes": ["long-polling"], "ext": {"replay": True, "payload.format": True},
                     "advice": {"reconnect": "retry", "interval": 0, "timeout": 300}, "id": "1"}
    assert re.match(r"^BAYEUX_BROWSER=\w+; Path=/$", r.headers["Set-Cookie"])
    sub = c.subscribe("/data/ContactChangeEvent", -1)
    assert sub == {"channel": "/meta/subscribe", "clientId": c.client_id, "successful": True,
                   "subscription": "/data/ContactChangeEvent", "id": "2"}
    events, connect = c.connect()  # the first connect answers at once
    assert events == []
    assert connect == {"channel": "/meta/connect", "clientId": c.client_id, "successful": True,
                       "advice": {"reconnect": "retry", "interval": 0, "timeout": 300}, "id": "3"}
    # Several messages in one POST are each answered; the message type may be appended to the URL.
    r = c.http.post(c.url + "/subscribe", json=[
        {"channel": "/meta/subscribe", "clientId": c.client_id, "subscription": "/data/AccountChangeEvent", "id": "a"},
        {"channel": "/meta/unsubscribe", "clientId": c.client_id, "subscription": "/data/AccountChangeEvent", "id": "b"}])
    assert [(m["channel"], m["successful"], m["id"]) for m in r.json()] == [("/meta/subscribe", True, "a"), ("/meta/unsubscribe", True, "b")]
    r = c.send({"channel": "/meta/disconnect", "clientId": c.client_id, "id": "d"})
    assert r.json()[0]["successful"]
    _, gone = c.connect()
    assert gone["error"] == "403::Unknown client"


def test_cookie_is_required(start_server):
    server = start_server(*FAST)
    c = Bayeux(server)
    c.handshake()
    bare = rest(server)  # no cookie jar of that client
    for msg in ({"channel": "/meta/subscribe", "clientId": c.client_id, "subscription": "/data/ContactChangeEvent", "id": "5"},
                {"channel": "/meta/connect", "clientId": c.client_id, "connectionType": "long-polling", "id": "6"}):
        reply = c.send(msg, session=bare).json()[0]
        assert reply["successful"] is False and reply["error"] == "403::Unknown client"
        assert reply["advice"] == {"reconnect": "handshake", "interval": 0} and reply["id"] == msg["id"]
    # With its cookie the same client is fine.
    assert c.subscribe("/data/ContactChangeEvent")["successful"]


def test_create_update_delete_event_shapes(start_server):
    server = start_server(*FAST)
    s = rest(server)
    c = Bayeux(server)
    assert c.start("/data/ContactChangeEvent") == []
    before = int(time.time() * 1000)
    cid = create(s, server, "Contact", {"FirstName": "Ada", "LastName": "Lovelace", "Email": "ada@example.com", "Title": "Countess"},
                 **{"Sforce-Call-Options": "client=syncstore-test, defaultNamespace=ns"})
    r = s.patch(f"{server.api}/sobjects/Contact/{cid}", json={"LastName": "King", "Email": None, "Title": "Countess"})
    assert r.status_code == 204
    assert s.delete(f"{server.api}/sobjects/Contact/{cid}").status_code == 204
    events = c.events(3)
    assert [e["channel"] for e in events] == ["/data/ContactChangeEvent"] * 3
    created, updated, deleted = events
    ids = [e["data"]["event"]["replayId"] for e in events]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert len({e["data"]["schema"] for e in events}) == 1 and isinstance(events[0]["data"]["schema"], str)

    h = header(created)
    assert h["entityName"] == "Contact" and h["recordIds"] == [cid] and h["changeType"] == "CREATE"
    assert h["changeOrigin"] == f"com/salesforce/api/rest/{VERSION};client=syncstore-test"
    assert UUID.match(h["transactionKey"]) and h["sequenceNumber"] == 1
    assert before - 1000 <= h["commitTimestamp"] <= int(time.time() * 1000) + 1000
    assert h["commitUser"].startswith("005") and isinstance(h["commitNumber"], int) and h["changedFields"] == []
    body = {k: v for k, v in created["data"]["payload"].items() if k != "ChangeEventHeader"}
    assert ISO.match(body.pop("CreatedDate")) and ISO.match(body.pop("LastModifiedDate"))
    # Every non-null field; Contact.Name is compound (FirstName, LastName), nested as in an org.
    assert body == {"Name": {"FirstName": "Ada", "LastName": "Lovelace"}, "Email": "ada@example.com", "Title": "Countess",
                    "HasOptedOutOfEmail": False}

    h = header(updated)
    assert h["changeType"] == "UPDATE" and h["recordIds"] == [cid]
    assert h["changeOrigin"] == f"com/salesforce/api/rest/{VERSION}"
    assert h["changedFields"] == ["Name.LastName", "Email", "LastModifiedDate"]
    assert h["transactionKey"] != header(created)["transactionKey"] and h["commitNumber"] > header(created)["commitNumber"]
    body = {k: v for k, v in updated["data"]["payload"].items() if k != "ChangeEventHeader"}
    assert ISO.match(body.pop("LastModifiedDate"))
    assert body == {"Name": {"LastName": "King"}, "Email": None}  # Title did not change

    h = header(deleted)
    assert h["changeType"] == "DELETE" and h["recordIds"] == [cid] and h["changedFields"] == []
    assert list(deleted["data"]["payload"]) == ["ChangeEventHeader"]


def test_every_event_also_on_change_events_channel(start_server):
    server = start_server(*FAST)
    s = rest(server)
    c = Bayeux(server)
    c.start("/data/ChangeEvents", "/data/AccountChangeEvent", "/data/Widget__ChangeEvent")
    aid = create(s, server, "Account", {"Name": "Acme"})
    wid = create(s, server, "Widget__c", {"Name": "W", "Active__c": True})
    cid = create(s, server, "Contact", {"LastName": "Only on all"})
    events = c.events(5)
    got = [(e["channel"], header(e)["recordIds"][0], e["data"]["event"]["replayId"]) for e in events]
    by_id = {}
    for channel, rid, replay in got:
        by_id.setdefault(rid, []).append((channel, replay))
    assert sorted(ch for ch, _ in by_id[aid]) == ["/data/AccountChangeEvent", "/data/ChangeEvents"]
    assert sorted(ch for ch, _ in by_id[wid]) == ["/data/ChangeEvents", "/data/Widget__ChangeEvent"]
    assert by_id[cid] == [("/data/ChangeEvents", by_id[cid][0][1])]
    assert len({r for _, r in by_id[aid]}) == 1 and len({r for _, r in by_id[wid]}) == 1  # same replayId on both
    assert [r for _, _, r in got] == sorted(r for _, _, r in got)  # replay order
    assert c.connect()[0] == []  # each delivered once per subscription


def test_composite_collections_batch_and_upsert_publish(start_server):
    server = start_server(*FAST)
    s = rest(server)
    c = Bayeux(server)
    c.start("/data/ChangeEvents")
    r = s.post(f"{server.api}/composite/sobjects", json={"allOrNone": False, "records": [
        {"attributes": {"type": "Contact"}, "LastName": f"C{i}"} for i in range(3)]})
    ids = [x["id"] for x in r.json()]
    r = s.post(f"{server.api}/composite", json={"compositeRequest": [
        {"method": "POST", "url": f"/services/data/v{VERSION}/sobjects/Account", "referenceId": "acc", "body": {"Name": "Comp"}},
        {"method": "PATCH", "url": f"/services/data/v{VERSION}/sobjects/Contact/{ids[0]}", "referenceId": "upd",
         "body": {"AccountId": "@{acc.id}"}}]})
    assert [x["httpStatusCode"] for x in r.json()["compositeResponse"]] == [201, 204]
    r = s.post(f"{server.api}/composite/batch", json={"batchRequests": [
        {"method": "DELETE", "url": f"v{VERSION}/sobjects/Contact/{ids[1]}"}]})
    assert r.json()["hasErrors"] is False
    r = s.patch(f"{server.api}/sobjects/Widget__c/External_Id__c/W-1", json={"Name": "Upserted"})
    assert r.status_code == 201
    r = s.patch(f"{server.api}/composite/sobjects/Widget__c/External_Id__c", json={"records": [
        {"attributes": {"type": "Widget__c"}, "External_Id__c": "W-1", "Name": "Again"}]})
    assert r.json()[0]["success"]
    events = c.events(8)
    kinds = [(header(e)["entityName"], header(e)["changeType"]) for e in events]
    assert kinds == [("Contact", "CREATE")] * 3 + [("Account", "CREATE"), ("Contact", "UPDATE"), ("Contact", "DELETE"),
                                                     ("Widget__c", "CREATE"), ("Widget__c", "UPDATE")]
    # One collection call is one transaction, its records numbered in it.
    first3 = [header(e) for e in events[:3]]
    assert len({h["transactionKey"] for h in first3}) == 1 and [h["sequenceNumber"] for h in first3] == [1, 2, 3]
    assert [h["recordIds"][0] for h in first3] == ids
    assert header(events[4])["changedFields"] == ["AccountId", "LastModifiedDate"]
    assert events[7]["data"]["payload"]["Name"] == "Again" and "External_Id__c" not in events[7]["data"]["payload"]


def test_rolled_back_writes_publish_nothing(start_server):
    server = start_server(*FAST, "--admin")
    s = rest(server)
    c = Bayeux(server)
    c.start("/data/ChangeEvents")
    r = s.post(f"{server.api}/composite/sobjects", json={"allOrNone": True, "records": [
        {"attributes": {"type": "Contact"}, "LastName": "Good"}, {"attributes": {"type": "Contact"}, "FirstName": "No last name"}]})
    assert [x["success"] for x in r.json()] == [False, False]
    r = s.post(f"{server.api}/composite", json={"allOrNone": True, "compositeRequest": [
        {"method": "POST", "url": f"/services/data/v{VERSION}/sobjects/Account", "referenceId": "a", "body": {"Name": "Rolled back"}},
        {"method": "POST", "url": f"/services/data/v{VERSION}/sobjects/Contact", "referenceId": "b", "body": {"Bogus__c": 1}}]})
    assert r.json()["compositeResponse"][0]["httpStatusCode"] == 400
    assert s.post(f"{server.api}/sobjects/Contact", json={"FirstName": "x"}).status_code == 400
    # Partial success without allOrNone: only the record that was written.
    r = s.post(f"{server.api}/composite/sobjects", json={"records": [
        {"attributes": {"type": "Contact"}, "LastName": "Kept"}, {"attributes": {"type": "Contact"}, "Email": "bad"}]})
    kept = r.json()[0]["id"]
    events = c.events(1) + c.connect()[0]
    assert [(header(e)["changeType"], header(e)["recordIds"]) for e in events] == [("CREATE", [kept])]
    assert requests.get(f"{server.url}/__devserver/events").json()["count"] == 1


def test_replay_all_new_and_after_id(start_server):
    server = start_server(*FAST)
    s = rest(server)
    ids = [create(s, server, "Account", {"Name": f"A{i}"}) for i in range(3)]
    everything = Bayeux(server)
    replayed = everything.start("/data/AccountChangeEvent", replay=-2)
    assert [header(e)["recordIds"][0] for e in replayed] == ids
    replay_ids = [e["data"]["event"]["replayId"] for e in replayed]
    new_only = Bayeux(server)
    assert new_only.start("/data/AccountChangeEvent", replay=-1) == []
    default = Bayeux(server)  # no replay extension entry: -1
    assert default.start("/data/AccountChangeEvent") == []
    after = Bayeux(server)
    assert [e["data"]["event"]["replayId"] for e in after.start("/data/AccountChangeEvent", replay=replay_ids[0])] == replay_ids[1:]
    fourth = create(s, server, "Account", {"Name": "A3"})
    for client in (everything, new_only, default, after):
        assert [header(e)["recordIds"][0] for e in client.events(1)] == [fourth]
    # After a re-handshake, the replay resumes after the given id.
    again = Bayeux(server)
    assert [header(e)["recordIds"][0] for e in again.start("/data/AccountChangeEvent", replay=replay_ids[2])] == [fourth]
    # A replay id past the newest is refused.
    bad = Bayeux(server)
    bad.handshake()
    reply = bad.subscribe("/data/AccountChangeEvent", 999999)
    assert reply["successful"] is False and reply["error"] == REPLAY_ERROR % 999999
    assert reply["subscription"] == "/data/AccountChangeEvent"


def test_replay_id_too_old_after_purge(start_server):
    server = start_server(*FAST, "--admin")
    s = rest(server)
    for i in range(3):
        create(s, server, "Account", {"Name": f"A{i}"})
    info = requests.get(f"{server.url}/__devserver/events").json()
    assert info["count"] == 3 and info["oldestReplayId"] == 1 and info["newestReplayId"] == 3
    r = requests.post(f"{server.url}/__devserver/events/purge")
    assert r.status_code == 200 and r.json()["purged"] == 3 and r.json()["count"] == 0
    c = Bayeux(server)
    c.handshake()
    reply = c.subscribe("/data/AccountChangeEvent", 1)
    assert reply["successful"] is False
    assert reply["error"] == ("400::The replayId {1} you provided was invalid.  Please provide a valid ID, -2 to replay all "
                              "events, or -1 to replay only new events.")
    assert c.subscribe("/data/AccountChangeEvent", 3)["successful"]  # the newest: nothing was lost after it
    assert c.subscribe("/data/ChangeEvents", -2)["successful"]
    assert c.connect()[0] == []
    newer = create(s, server, "Account", {"Name": "after purge"})
    got = c.events(2)
    assert sorted(e["channel"] for e in got) == ["/data/AccountChangeEvent", "/data/ChangeEvents"]
    assert {header(e)["recordIds"][0] for e in got} == {newer} and got[0]["data"]["event"]["replayId"] > 3


def test_retention_keeps_the_newest(start_server):
    server = start_server(*FAST, "--admin", "--event-retention", "3")
    s = rest(server)
    for i in range(5):
        create(s, server, "Account", {"Name": f"A{i}"})
    info = requests.get(f"{server.url}/__devserver/events").json()
    assert (info["count"], info["oldestReplayId"], info["newestReplayId"], info["retention"]) == (3, 3, 5, 3)
    c = Bayeux(server)
    c.handshake()
    assert c.subscribe("/data/AccountChangeEvent", 1)["error"] == REPLAY_ERROR % 1
    assert c.subscribe("/data/AccountChangeEvent", 2)["successful"]
    assert [e["data"]["event"]["replayId"] for e in c.connect()[0]] == [3, 4, 5]


def test_unknown_channel(start_server):
    server = start_server(*FAST)
    c = Bayeux(server)
    c.handshake()
    for channel in ("/data/FooChangeEvent", "/data/Widget__cChangeEvent", "/topic/Whatever", "/data/contactchangeevent"):
        reply = c.subscribe(channel, -1)
        assert reply["successful"] is False
        assert reply["error"] == "400::The channel you requested to subscribe to does not exist {%s}" % channel


def test_unknown_client_fault_forgets_the_session(start_server):
    server = start_server(*FAST, "--faults", "POST /cometd/* unknown-client times=1")
    c = Bayeux(server)
    c.handshake()  # a handshake names no client: the fault passes it by
    reply = c.subscribe("/data/ContactChangeEvent", -1)
    assert reply["successful"] is False and reply["error"] == "403::Unknown client"
    assert reply["advice"] == {"reconnect": "handshake", "interval": 0}
    _, connect = c.connect()  # the fault fired once, but the session is gone
    assert connect["error"] == "403::Unknown client"
    assert c.start("/data/ContactChangeEvent") == []  # a new handshake works


def test_idle_client_expires(start_server):
    server = start_server(*FAST, "--cometd-session-ms", "300")
    c = Bayeux(server)
    c.start("/data/ContactChangeEvent")
    _, ok = c.connect()  # held 300 ms: not idle meanwhile
    assert ok["successful"]
    time.sleep(0.6)
    _, gone = c.connect()
    assert gone["successful"] is False and gone["error"] == "403::Unknown client"
    assert gone["advice"]["reconnect"] == "handshake"


def test_long_poll_held_until_an_event(start_server):
    server = start_server("--cometd-timeout-ms", "10000")
    s = rest(server)
    c = Bayeux(server)
    c.start("/data/ContactChangeEvent")
    result = {}

    def poll():
        result["answer"] = c.connect()
        result["at"] = time.monotonic()

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.5)
    assert t.is_alive()  # held
    # The held poll blocks neither the store nor other requests.
    t0 = time.monotonic()
    assert s.get(f"{server.api}/query", params={"q": "SELECT Id FROM Contact"}).status_code == 200
    assert time.monotonic() - t0 < 0.5
    cid = create(s, server, "Contact", {"LastName": "Wakes the poll"})
    written = time.monotonic()
    t.join(5)
    assert not t.is_alive()
    events, reply = result["answer"]
    assert reply["successful"] and [header(e)["recordIds"] for e in events] == [[cid]]
    assert result["at"] - written < 0.15


def test_connect_timeout_answers_empty(start_server):
    server = start_server(*FAST)
    c = Bayeux(server)
    c.start("/data/ContactChangeEvent")
    t0 = time.monotonic()
    events, reply = c.connect()
    assert events == [] and reply["successful"] and reply["advice"]["timeout"] == 300
    assert 0.25 <= time.monotonic() - t0 < 2


def test_second_connect_answers_the_first(start_server):
    server = start_server("--cometd-timeout-ms", "3000")
    c = Bayeux(server)
    c.start("/data/ContactChangeEvent")
    first = {}
    t = threading.Thread(target=lambda: first.update(answer=c.connect(), at=time.monotonic()))
    t.start()
    time.sleep(0.3)
    other = requests.Session()
    other.trust_env = False
    other.headers["Authorization"] = f"Bearer {TOKEN}"
    other.cookies.update(c.http.cookies)
    second = {}
    t2 = threading.Thread(target=lambda: second.update(answer=c.connect(session=other), at=time.monotonic()))
    started = time.monotonic()
    t2.start()
    t.join(2)
    assert not t.is_alive() and first["at"] - started < 0.5
    assert first["answer"] == ([], first["answer"][1]) and first["answer"][1]["successful"]
    assert t2.is_alive()  # the newer one is held
    t2.join(5)


def test_bad_token_is_401(start_server):
    server = start_server(*FAST)
    url = f"{server.url}/cometd/{VERSION}"
    handshake = [{"channel": "/meta/handshake", "version": "1.0", "supportedConnectionTypes": ["long-polling"]}]
    for headers in ({}, {"Authorization": "Bearer nope"}):
        r = requests.post(url, json=handshake, headers=headers)
        assert r.status_code == 401
        assert r.json() == [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]
    token = requests.post(f"{server.url}/services/oauth2/token", data={
        "grant_type": "password", "username": "dev@example.com", "password": "devpassword"}).json()["access_token"]
    assert requests.post(url, json=handshake, headers={"Authorization": f"Bearer {token}"}).json()[0]["successful"]


def test_restart_with_db_keeps_events_and_replay_ids(start_server, tmp_path):
    db = str(tmp_path / "events.db")
    server = start_server(*FAST, "--db", db)
    s = rest(server)
    ids = [create(s, server, "Account", {"Name": f"A{i}"}) for i in range(2)]
    before = Bayeux(server).start("/data/AccountChangeEvent", replay=-2)
    server.stop()
    server = start_server(*FAST, "--db", db)
    after = Bayeux(server).start("/data/AccountChangeEvent", replay=-2)
    assert [(e["data"]["event"]["replayId"], header(e)["recordIds"]) for e in after] == \
        [(e["data"]["event"]["replayId"], header(e)["recordIds"]) for e in before]
    assert [header(e)["recordIds"][0] for e in after] == ids
    c = Bayeux(server)
    c.start("/data/AccountChangeEvent", replay=before[-1]["data"]["event"]["replayId"])
    create(s, server, "Account", {"Name": "after restart"})
    new = c.events(1)
    assert new[0]["data"]["event"]["replayId"] > before[-1]["data"]["event"]["replayId"]
    assert header(new[0])["commitNumber"] > header(before[-1])["commitNumber"]


def test_big_transactions_publish_gap_overflow(start_server):
    server = start_server(*FAST, "--seed", "Account=5,Contact=30", "--event-overflow-threshold", "20")
    c = Bayeux(server)
    seeded = c.start("/data/ChangeEvents", replay=-2)
    assert [(header(e)["entityName"], header(e)["changeType"]) for e in seeded] == [("Account", "CREATE")] * 5 + [("Contact", "GAP_OVERFLOW")]
    gap = seeded[-1]
    assert header(gap)["recordIds"] == ["000000000000000AAA"] and header(gap)["changeOrigin"] == ""
    assert list(gap["data"]["payload"]) == ["ChangeEventHeader"] and header(gap)["changedFields"] == []
    # An API transaction past the threshold too: one GAP_OVERFLOW per object.
    s = rest(server)
    r = s.post(f"{server.api}/composite/sobjects", json={"records": [
        {"attributes": {"type": "Contact"}, "LastName": f"C{i}"} for i in range(15)] + [
        {"attributes": {"type": "Account"}, "Name": f"A{i}"} for i in range(10)]})
    assert all(x["success"] for x in r.json())
    got = c.events(2)
    assert [(header(e)["entityName"], header(e)["changeType"]) for e in got] == [("Contact", "GAP_OVERFLOW"), ("Account", "GAP_OVERFLOW")]
    assert len({header(e)["transactionKey"] for e in got}) == 1
    assert header(got[0])["changeOrigin"] == f"com/salesforce/api/rest/{API_VERSION}"


def test_malformed_input_is_400(start_server):
    server = start_server(*FAST)
    s = rest(server)
    url = f"{server.url}/cometd/{VERSION}"
    r = s.post(url, data=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()[0]["successful"] is False and r.json()[0]["error"].startswith("400::Malformed JSON")
    for body in ([], [1], [{"id": "1"}], "text", [{"channel": "/meta/connect", "clientId": 5}]):
        r = s.post(url, json=body)
        assert r.status_code == 400, body
        assert all(m["successful"] is False and m["error"].startswith("400::") for m in r.json())
    # Still serving.
    assert Bayeux(server).start("/data/ChangeEvents") == []
    for version in ("36.0", "67.0", "v60.0", "60"):
        assert s.post(f"{server.url}/cometd/{version}", json=[]).status_code == 404
    assert s.get(url).status_code == 405
    c = Bayeux(server)
    c.handshake()
    reply = c.send({"channel": "/meta/nothing", "clientId": c.client_id, "id": "x"}).json()[0]
    assert reply["successful"] is False and reply["error"].startswith("400::")
    reply = c.send({"channel": "/data/ContactChangeEvent", "clientId": c.client_id, "data": {}}).json()[0]
    assert reply["successful"] is False and reply["error"].startswith("403::")


def test_clock_set_back_keeps_replay_order(start_server):
    server = start_server(*FAST, "--admin")
    s = rest(server)
    c = Bayeux(server)
    c.start("/data/AccountChangeEvent")
    first = create(s, server, "Account", {"Name": "before"})
    assert requests.put(f"{server.url}/__devserver/clock", data="-3600").status_code == 200
    second = create(s, server, "Account", {"Name": "after the clock went back"})
    got = c.events(2)
    assert [header(e)["recordIds"][0] for e in got] == [first, second]
    assert got[0]["data"]["event"]["replayId"] < got[1]["data"]["event"]["replayId"]
    assert header(got[0])["commitTimestamp"] < header(got[1])["commitTimestamp"]  # stamps never go back


def test_cascade_delete_and_import_publish(start_server):
    server = start_server(*FAST, "--admin")
    s = rest(server)
    c = Bayeux(server)
    c.start("/data/ChangeEvents")
    aid = create(s, server, "Account", {"Name": "Parent"})
    kid = create(s, server, "Contact", {"LastName": "Child", "AccountId": aid})
    wid = create(s, server, "Widget__c", {"Name": "Linked", "Account__c": aid})
    assert s.delete(f"{server.api}/sobjects/Account/{aid}").status_code == 204
    r = requests.post(f"{server.url}/__devserver/import", json={"Account": [{"Name": "Imported"}]})
    assert r.json() == {"imported": 1}
    events = c.events(7)
    got = [(header(e)["entityName"], header(e)["changeType"], header(e)["recordIds"][0]) for e in events]
    assert got[:3] == [("Account", "CREATE", aid), ("Contact", "CREATE", kid), ("Widget__c", "CREATE", wid)]
    # The delete: one transaction, the parent, the cascaded child, the cleared lookup.
    assert sorted(got[3:6]) == sorted([("Account", "DELETE", aid), ("Contact", "DELETE", kid), ("Widget__c", "UPDATE", wid)])
    assert len({header(e)["transactionKey"] for e in events[3:6]}) == 1
    cleared = next(e for e in events[3:6] if header(e)["changeType"] == "UPDATE")
    assert cleared["data"]["payload"]["Account__c"] is None and header(cleared)["changedFields"] == ["Account__c", "LastModifiedDate"]
    assert got[6][:2] == ("Account", "CREATE") and header(events[6])["changeOrigin"] == ""


def test_stopping_answers_held_polls(start_server):
    server = start_server()  # the default 110 s timeout
    c = Bayeux(server)
    c.start("/data/ContactChangeEvent")
    answer = {}
    t = threading.Thread(target=lambda: answer.update(reply=c.connect()))
    t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    server.stop()  # SIGTERM: a graceful shutdown, which waits for requests in flight
    assert time.monotonic() - t0 < 3 and server.proc.returncode == 0
    t.join(5)
    assert answer["reply"][1]["successful"]
