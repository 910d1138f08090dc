"""The dev server's Datasync table routes (--datasync): list with $filter/$orderby/$top/$skip/
$count/__includedeleted and nextLink paging, client ids and 409, If-Match and 412, soft delete,
the bearer token, and the same faults as the Salesforce routes."""
import requests

from devserver_harness import TOKEN


def session(token=TOKEN):
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {token}"
    s.headers["ZUMO-API-VERSION"] = "3.0.0"
    return s


def all_pages(s, url, params):
    items, pages = [], 0
    r = s.get(url, params=params)
    while True:
        assert r.status_code == 200, r.text
        body = r.json()
        items += body["items"]
        pages += 1
        if not body.get("nextLink"):
            return items, pages, body
        r = s.get(body["nextLink"])


def test_list_filter_order_paging_count(start_server):
    server = start_server("--datasync", "--datasync-seed", "todo=95/10", "--datasync-page-size", "20")
    s = session()
    url = f"{server.url}/tables/todo"
    items, pages, _ = all_pages(s, url, {"$orderby": "updatedAt,id", "$count": "true"})
    assert len(items) == 95 and len({i["id"] for i in items}) == 95 and pages == 5
    keys = [(i["updatedAt"], i["id"]) for i in items]
    assert keys == sorted(keys)
    # Ten rows share each updatedAt; ge the 3rd stamp, and a field filter.
    stamp = items[25]["updatedAt"]
    first = s.get(url, params={"$filter": f"(updatedAt ge '{stamp}') and (complete eq false)", "$count": "true", "$top": "3"}).json()
    expected = [i for i in items if i["updatedAt"] >= stamp and not i["complete"]]
    assert first["count"] == len(expected) and len(first["items"]) == 3 and "nextLink" not in first
    bare = s.get(url, params={"$filter": f"updatedAt gt {stamp} and rank le 50"}).json()
    assert {i["id"] for i in bare["items"]} == {i["id"] for i in items if i["updatedAt"] > stamp and i["rank"] <= 50}
    skipped = s.get(url, params={"$orderby": "rank desc", "$skip": "90"}).json()
    assert [i["rank"] for i in skipped["items"]] == [5, 4, 3, 2, 1]
    assert s.get(url, params={"$filter": "rank eq"}).status_code == 400
    assert s.get(url, params={"$filter": "(" * 50000 + "rank eq 1" + ")" * 50000}).status_code == 400
    assert s.get(url, params={"$filter": "not " * 29 + "rank eq 1"}).status_code == 200
    assert s.get(url, params={"$filter": "not " * 31 + "rank eq 1"}).status_code == 400
    assert session("wrong").get(url).status_code == 401
    zumo = requests.get(url, headers={"X-ZUMO-AUTH": TOKEN})
    assert zumo.status_code == 200 and len(zumo.json()["items"]) == 20


def test_create_conflict_if_match_soft_delete(start_server):
    server = start_server("--datasync")
    s = session()
    url = f"{server.url}/tables/notes"
    r = s.post(url, json={"id": "n1", "text": "hello"})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["id"] == "n1" and created["deleted"] is False and created["version"]
    assert r.headers["ETag"] == f'"{created["version"]}"'
    again = s.post(url, json={"id": "n1", "text": "other"})
    assert again.status_code == 409 and again.json()["text"] == "hello"
    generated = s.post(url, json={"text": "no id"}).json()
    assert len(generated["id"]) == 36

    stale = s.put(f"{url}/n1", json={"text": "x"}, headers={"If-Match": '"nope"'})
    assert stale.status_code == 412 and stale.json()["version"] == created["version"]
    ok = s.put(f"{url}/n1", json={"text": "changed"}, headers={"If-Match": f'"{created["version"]}"'})
    assert ok.status_code == 200 and ok.json()["text"] == "changed"
    assert ok.json()["version"] != created["version"] and ok.json()["updatedAt"] > created["updatedAt"]
    forced = s.put(f"{url}/n1", json={"text": "forced"})
    assert forced.status_code == 200
    assert s.delete(f"{url}/n1", headers={"If-Match": f'"{ok.json()["version"]}"'}).status_code == 412
    assert s.delete(f"{url}/n1").status_code == 204
    assert s.get(f"{url}/n1").status_code == 410
    gone = s.get(f"{url}/n1", params={"__includedeleted": "true"}).json()
    assert gone["deleted"] is True and gone["updatedAt"] > forced.json()["updatedAt"]
    assert s.delete(f"{url}/n1").status_code == 410
    assert s.delete(f"{url}/n1", headers={"If-Match": '"nope"'}).status_code == 410, "410 comes before If-Match"
    assert [i["id"] for i in s.get(url).json()["items"]] == [generated["id"]]
    listed = s.get(url, params={"__includedeleted": "true", "$filter": "deleted eq true"}).json()
    assert [i["id"] for i in listed["items"]] == ["n1"]

    # A replace of a soft-deleted entity (TableController.ReplaceAsync): 410, before If-Match,
    # unless the query has __includedeleted=true; then it replaces it, its "deleted" included.
    assert s.put(f"{url}/n1", json={"id": "n1", "text": "back"}).status_code == 410
    assert s.put(f"{url}/n1", json={"id": "n1", "text": "back"}, headers={"If-Match": '"nope"'}).status_code == 410
    stale = s.put(f"{url}/n1", params={"__includedeleted": "true"}, json={"id": "n1", "text": "back"}, headers={"If-Match": '"nope"'})
    assert stale.status_code == 412 and stale.json()["deleted"] is True
    assert s.put(f"{url}/n1", params={"__includedeleted": "true"}, json={"id": "n1", "deleted": "no"}).status_code == 400
    back = s.put(f"{url}/n1", params={"__includedeleted": "true"}, json={"id": "n1", "text": "back", "deleted": False})
    assert back.status_code == 200, back.text
    assert back.json()["deleted"] is False and back.json()["text"] == "back" and back.json()["updatedAt"] > gone["updatedAt"]
    assert s.get(f"{url}/n1").json()["text"] == "back"
    assert sorted(i["id"] for i in s.get(url).json()["items"]) == sorted([generated["id"], "n1"])
    again = s.put(f"{url}/n1", json={"id": "n1", "text": "gone again", "deleted": True})
    assert again.status_code == 200 and again.json()["deleted"] is True
    assert s.get(f"{url}/n1").status_code == 410


def test_faults_apply_to_tables(start_server):
    server = start_server("--datasync", "--faults", "POST /tables/* drop=after times=1;GET /tables/* status=503 times=1")
    s = session()
    url = f"{server.url}/tables/todo"
    try:
        s.post(url, json={"id": "a", "v": 1})
        raise AssertionError("the answer should have been dropped")
    except requests.ConnectionError:
        pass
    assert s.get(url).status_code == 503
    items = s.get(url).json()["items"]
    assert [i["id"] for i in items] == ["a"], "drop=after commits before dropping"
