"""The dev server's two-phase protocol (--twophase; docs/sync.md#two-phase): fetch, synchronise
with add/update/delete/get, both timestamp formats, the bearer token, and the fault injection
every route gets."""
import datetime
import email.utils
import re
import uuid

import pytest
import requests

from devserver_harness import TOKEN


def session(token=TOKEN):
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {token}"
    return s


def fetch(server, tables=None):
    r = session().get(f"{server.url}/twophase/fetch", params={"tables": tables} if tables else None)
    r.raise_for_status()
    return r.json()


def synchronise(server, body, s=None):
    r = (s or session()).post(f"{server.url}/twophase/synchronise", json=body)
    r.raise_for_status()
    return r.json()


DATETIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_fetch_lists_ids_and_stamps_per_table(start_server):
    server = start_server("--twophase", "--twophase-seed", "3")
    body = fetch(server)
    assert set(body) == {"todo", "budget"}
    assert len(body["todo"]) == 3 and all(set(r) == {"id", "last_update"} and DATETIME.match(r["last_update"]) for r in body["todo"])
    assert len(body["budget"]) == 3 and all(set(r) == {"bid", "last_update"} and ISO.match(r["last_update"]) for r in body["budget"])
    assert list(fetch(server, "budget")) == ["budget"]
    r = session().get(f"{server.url}/twophase/fetch", params={"tables": "nope"})
    assert r.status_code == 400 and "INVALID_TABLE" in r.text


def test_synchronise_add_is_idempotent_and_update_applies_when_newer(start_server):
    server = start_server("--twophase")
    rid = str(uuid.uuid4())
    row = {"id": rid, "title": "a", "last_update": "2026-01-01 10:00:00"}
    first = synchronise(server, {"add": {"todo": [row]}})
    assert first["add"]["todo"][0]["status"] == "created"
    again = synchronise(server, {"add": {"todo": [row]}})
    assert again["add"]["todo"][0]["status"] == "exists"
    assert len(fetch(server)["todo"]) == 1

    older = dict(row, title="older", last_update="2025-12-31 10:00:00")
    stale = synchronise(server, {"update": {"todo": [older]}})["update"]["todo"][0]
    assert stale["status"] == "stale" and stale["row"]["title"] == "a"
    newer = dict(row, title="newer", last_update="2026-01-01T10:00:01Z")
    answer = synchronise(server, {"update": {"todo": [newer]}, "get": {"todo": [rid]}})
    assert answer["update"]["todo"][0]["status"] == "updated"
    # get sees the call's own writes; the stamp is shown in the table's format.
    assert answer["get"]["todo"] == [{"id": rid, "title": "newer", "last_update": "2026-01-01 10:00:01"}]
    # The same update again (a retry after a lost answer) is applied, not stale.
    assert synchronise(server, {"update": {"todo": [newer]}})["update"]["todo"][0]["status"] == "updated"
    missing = synchronise(server, {"update": {"todo": [dict(row, id=str(uuid.uuid4()))]}})
    assert missing["update"]["todo"][0]["status"] == "missing"


def test_delete_get_and_unstamped_rows(start_server):
    server = start_server("--twophase")
    rid = str(uuid.uuid4())
    # No last_update: the server stamps it (ISO table: milliseconds).
    made = synchronise(server, {"add": {"budget": [{"bid": rid, "cost": 200}]}})
    assert ISO.match(made["add"]["budget"][0]["last_update"])
    # An empty object stands for no rows, whatever the table (the protocol's own examples).
    gone = synchronise(server, {"delete": {"budget": [rid, rid]}, "get": {"budget": [rid]}, "add": {"invitations": {}}})
    assert [d["status"] for d in gone["delete"]["budget"]] == ["deleted", "missing"]
    assert gone["get"] == {}
    assert fetch(server)["budget"] == []


def test_bad_calls_change_nothing(start_server):
    server = start_server("--twophase")
    ok = {"id": str(uuid.uuid4()), "title": "ok"}
    for body in [{"add": {"todo": [ok, {"title": "no id"}]}}, {"add": {"nope": [ok]}},
                 {"update": {"todo": [dict(ok, last_update="yesterday")]}}, {"add": [ok]}]:
        r = session().post(f"{server.url}/twophase/synchronise", json=body)
        assert r.status_code == 400, body
    assert fetch(server)["todo"] == []


def test_needs_the_token_and_the_flag(start_server):
    server = start_server("--twophase")
    assert session("wrong").get(f"{server.url}/twophase/fetch").status_code == 401
    plain = start_server()
    assert session().get(f"{plain.url}/twophase/fetch").status_code == 404


def test_drop_after_commit_applies_the_call(start_server):
    server = start_server("--twophase", "--faults", "POST /twophase/synchronise drop=after times=1")
    rid = str(uuid.uuid4())
    with pytest.raises(requests.ConnectionError):
        synchronise(server, {"add": {"todo": [{"id": rid, "title": "x"}]}})
    assert [r["id"] for r in fetch(server)["todo"]] == [rid]


def test_custom_tables_and_clock_offset(start_server):
    server = start_server("--twophase", "--twophase-tables", "wishlist:gid:iso8601", "--clock-offset", "-3600")
    rid = str(uuid.uuid4())
    stamp = synchronise(server, {"add": {"wishlist": [{"gid": rid}]}})["add"]["wishlist"][0]["last_update"]
    date = requests.get(f"{server.url}/twophase/fetch", headers={"Authorization": f"Bearer {TOKEN}"}).headers["Date"]
    assert ISO.match(stamp)
    server_now = email.utils.parsedate_to_datetime(date).timestamp()
    stamped = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    assert abs(stamped - server_now) < 5, "rows are stamped on the server's (shifted) clock"


def test_plain_answers_rows_per_table_and_refuses_a_repeated_add(start_server):
    """--twophase-plain: the answer a server written from the protocol's description gives (per
    table the full rows, like the fetch), and 409 for a call whose add names an id it has."""
    server = start_server("--twophase", "--twophase-plain", "--admin")
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    made = synchronise(server, {"add": {"todo": [{"id": a, "title": "a", "last_update": "2026-01-01 10:00:00"},
                                                 {"id": b, "title": "b"}]}})
    assert set(made) == {"todo"}
    assert [r["id"] for r in made["todo"]] == [a, b]
    assert made["todo"][0] == {"id": a, "title": "a", "last_update": "2026-01-01 10:00:00"}
    assert DATETIME.match(made["todo"][1]["last_update"])
    # A repeated add refuses the whole call: the other add and the delete are not applied.
    r = session().post(f"{server.url}/twophase/synchronise",
                       json={"add": {"todo": [{"id": c, "title": "c"}, {"id": a, "title": "a"}]}, "delete": {"todo": [b]}})
    assert r.status_code == 409 and "DUPLICATE_VALUE" in r.text
    assert sorted(x["id"] for x in fetch(server)["todo"]) == sorted([a, b])
    # Updated rows and gets come back as stored; a deleted row is left out; a stale update
    # answers the stored row.
    answer = synchronise(server, {"update": {"todo": [{"id": a, "title": "older", "last_update": "2025-01-01 10:00:00"}]},
                                  "delete": {"todo": [b]}, "get": {"todo": [b, a], "budget": []}})
    assert answer == {"todo": [{"id": a, "title": "a", "last_update": "2026-01-01 10:00:00"}]}
    # The admin switch: back to the per-operation answer.
    assert session().put(f"{server.url}/__devserver/twophase", data="operations").json() == {"answer": "operations"}
    assert synchronise(server, {"get": {"todo": [a]}})["get"]["todo"][0]["id"] == a
    assert session().put(f"{server.url}/__devserver/twophase", json={"answer": "nope"}).status_code == 400
