"""Fidelity: the real simple-salesforce client against the devserver over HTTPS."""
import datetime
import re
import uuid

import pytest
from devserver_harness import trusting_session
from simple_salesforce.exceptions import (
    SalesforceExpiredSession,
    SalesforceGeneralError,
    SalesforceMalformedRequest,
    SalesforceResourceNotFound,
)

ID_RE = re.compile(r"^[0-9A-Za-z]{18}$")
TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000$")


def all_contacts(sf, fields="Id, FirstName, LastName, Email, Title, AccountId, Birthdate, HasOptedOutOfEmail, LastModifiedDate, MailingCity"):
    return sf.query_all(f"SELECT {fields} FROM Contact")["records"]


def test_query_shape(sf):
    sf.query("SELECT Id FROM Contact LIMIT 1")
    assert sf.api_usage["api-usage"].used > 0  # parsed from Sforce-Limit-Info
    res = sf.query("SELECT Id, FirstName, LastName, Account.Name, LastModifiedDate FROM Contact WHERE AccountId != null LIMIT 5")
    assert res["totalSize"] == 5 and res["done"] is True and "nextRecordsUrl" not in res
    for r in res["records"]:
        assert r["attributes"]["type"] == "Contact"
        assert r["attributes"]["url"] == f"/services/data/v60.0/sobjects/Contact/{r['Id']}"
        assert ID_RE.match(r["Id"]) and r["Id"].startswith("003")
        assert TS_RE.match(r["LastModifiedDate"])
        assert list(r.keys()) == ["attributes", "Id", "FirstName", "LastName", "Account", "LastModifiedDate"]
        assert r["Account"]["attributes"]["type"] == "Account" and isinstance(r["Account"]["Name"], str)


def test_query_paging_default_batch_and_query_all(sf):
    count = sf.query("SELECT COUNT() FROM Contact")["totalSize"]
    assert count >= 2500
    first = sf.query("SELECT Id FROM Contact")
    assert first["totalSize"] == count and first["done"] is False
    assert len(first["records"]) == 2000
    assert re.match(r"^/services/data/v60\.0/query/01g[0-9A-Za-z]+-2000$", first["nextRecordsUrl"])
    everything = sf.query_all("SELECT Id FROM Contact ORDER BY LastModifiedDate")
    ids = [r["Id"] for r in everything["records"]]
    assert len(ids) == count == len(set(ids))


def test_batch_size_header(sf):
    res = sf.query("SELECT Id FROM Contact", headers={"Sforce-Query-Options": "batchSize=500"})
    assert len(res["records"]) == 500 and res["nextRecordsUrl"].endswith("-500")
    more = sf.query_more(res["nextRecordsUrl"], identifier_is_url=True)
    assert len(more["records"]) == 500 and more["nextRecordsUrl"].endswith("-1000")
    assert not {r["Id"] for r in res["records"]} & {r["Id"] for r in more["records"]}


def test_where_clauses_match_client_side_filtering(sf):
    rows = all_contacts(sf)

    def check(where, predicate):
        got = {r["Id"] for r in sf.query_all(f"SELECT Id FROM Contact WHERE {where}")["records"]}
        want = {r["Id"] for r in rows if predicate(r)}
        assert got == want, where
        return got

    check("LastName = 'smith'", lambda r: (r["LastName"] or "").lower() == "smith")  # case-insensitive
    check("LastName IN ('Lee', 'Silva') AND NOT (Title = 'CEO')", lambda r: r["LastName"] in ("Lee", "Silva") and r["Title"] != "CEO")
    check("Title != 'CEO'", lambda r: r["Title"] != "CEO")  # != includes nulls, as in SOQL
    check("Email = null", lambda r: r["Email"] is None)
    check("FirstName LIKE 'Ma%'", lambda r: (r["FirstName"] or "").lower().startswith("ma"))
    check("LastName NOT IN ('Smith') OR MailingCity = 'Tokyo'", lambda r: r["LastName"] not in ("Smith",) or r["MailingCity"] == "Tokyo")
    check("Birthdate >= 1980-01-01 AND Birthdate < 1990-01-01", lambda r: r["Birthdate"] is not None and "1980-01-01" <= r["Birthdate"] < "1990-01-01")
    check("NOT (Email LIKE '%1%')", lambda r: "1" not in (r["Email"] or ""))
    check("NOT (Birthdate > 1990-01-01)", lambda r: not (r["Birthdate"] is not None and r["Birthdate"] > "1990-01-01"))
    check("HasOptedOutOfEmail = true", lambda r: r["HasOptedOutOfEmail"] is True)
    check("LastModifiedDate > 2025-01-01T00:30:00Z", lambda r: r["LastModifiedDate"] > "2025-01-01T00:30:00.000+0000")
    check("LastModifiedDate <= 2025-01-01T02:00:00.000+0200", lambda r: r["LastModifiedDate"] <= "2025-01-01T00:00:00.000+0000")
    check("LastName LIKE 'O\\'%'", lambda r: (r["LastName"] or "").startswith("O'"))


def test_order_by_limit_offset(sf):
    res = sf.query("SELECT Id, Title, LastName FROM Contact ORDER BY Title DESC NULLS LAST, LastName ASC LIMIT 50 OFFSET 10")
    recs = res["records"]
    assert len(recs) == 50
    titles = [r["Title"] for r in recs]
    non_null = [t for t in titles if t is not None]
    assert [t.lower() for t in non_null] == sorted([t.lower() for t in non_null], reverse=True)
    full = sf.query("SELECT Id FROM Contact ORDER BY Title DESC NULLS LAST, LastName ASC LIMIT 60")["records"]
    assert [r["Id"] for r in full[10:60]] == [r["Id"] for r in recs]
    nulls_first = sf.query("SELECT Title FROM Contact ORDER BY Title NULLS FIRST LIMIT 1")["records"][0]
    assert nulls_first["Title"] is None


def test_child_subquery_and_parent_fields(sf):
    res = sf.query("SELECT Id, Name, (SELECT Id, LastName FROM Contacts ORDER BY LastName LIMIT 3) FROM Account WHERE Id IN (SELECT AccountId FROM Contact) LIMIT 5")
    assert res["totalSize"] == 5
    for acc in res["records"]:
        child = acc["Contacts"]
        assert child["done"] is True and 1 <= child["totalSize"] <= 3
        names = [c["LastName"] for c in child["records"]]
        assert [n.lower() for n in names] == sorted(n.lower() for n in names)
        for c in child["records"]:
            back = sf.query(f"SELECT Account.Id FROM Contact WHERE Id = '{c['Id']}'")["records"][0]
            assert back["Account"]["Id"] == acc["Id"]
    lonely_id = sf.Account.create({"Name": "No Contacts Ltd"})["id"]
    lonely = sf.query("SELECT Id, (SELECT Id FROM Contacts) FROM Account WHERE Id NOT IN (SELECT AccountId FROM Contact)")
    assert lonely_id in [a["Id"] for a in lonely["records"]]
    for acc in lonely["records"]:
        assert acc["Contacts"] is None


def test_count_and_aggregates(sf):
    total = sf.query("SELECT COUNT() FROM Contact")
    assert total["records"] == [] and total["totalSize"] >= 2500
    limited = sf.query("SELECT COUNT() FROM Contact LIMIT 7")
    assert limited["totalSize"] == 7
    agg = sf.query("SELECT LastName, COUNT(Id) cnt FROM Contact GROUP BY LastName ORDER BY COUNT(Id) DESC")
    assert agg["records"][0]["attributes"]["type"] == "AggregateResult"
    assert sum(r["cnt"] for r in agg["records"]) == sf.query("SELECT COUNT() FROM Contact WHERE LastName != null")["totalSize"]
    having = sf.query("SELECT LastName, COUNT(Id) cnt FROM Contact GROUP BY LastName HAVING COUNT(Id) > 80 AND MAX(Title) != 'x'")
    assert {r["LastName"] for r in having["records"]} == {r["LastName"] for r in agg["records"] if r["cnt"] > 80}


def test_sosl_search(sf):
    res = sf.search("FIND {Miller} IN ALL FIELDS RETURNING Contact(Id, FirstName, LastName WHERE LastName = 'Miller' LIMIT 5), Account(Id, Name)")
    recs = res["searchRecords"]
    contacts = [r for r in recs if r["attributes"]["type"] == "Contact"]
    assert 1 <= len(contacts) <= 5 and all(r["LastName"] == "Miller" for r in contacts)
    quick = sf.quick_search("Tokyo")
    assert quick["searchRecords"], "quick_search finds records by any text field"


def test_crud_roundtrip(sf):
    created = sf.Contact.create({"FirstName": "Ada", "LastName": "Lovelace", "Email": "ada@example.com", "Birthdate": "1815-12-10"})
    assert created["success"] is True and created["errors"] == [] and ID_RE.match(created["id"])
    cid = created["id"]
    rec = sf.Contact.get(cid)
    assert rec["LastName"] == "Lovelace" and rec["Name"] == "Ada Lovelace" and rec["IsDeleted"] is False
    assert rec["CreatedDate"] == rec["LastModifiedDate"] == rec["SystemModstamp"]
    assert sf.Contact.update(cid, {"Title": "Countess"}) == 204
    rec2 = sf.Contact.get(cid)
    assert rec2["Title"] == "Countess" and rec2["SystemModstamp"] > rec["SystemModstamp"]
    partial = sf.Contact.get(cid, headers=None) if False else sf.restful(f"sobjects/Contact/{cid}", params={"fields": "Id,Title"})
    assert set(partial) == {"attributes", "Id", "Title"}
    recent = sf.Contact.metadata()["recentItems"]
    assert recent[0]["Id"] == cid
    assert sf.Contact.delete(cid) == 204
    with pytest.raises(SalesforceResourceNotFound) as e:
        sf.Contact.get(cid)
    assert e.value.content == [{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}]
    deleted = sf.query_all(f"SELECT Id, IsDeleted FROM Contact WHERE Id = '{cid}'", include_deleted=True)["records"]
    assert deleted[0]["IsDeleted"] is True
    assert sf.query(f"SELECT Id FROM Contact WHERE Id = '{cid}'")["totalSize"] == 0


def test_upsert_by_external_id(sf):
    ext = f"EXT-{uuid.uuid4().hex[:8]}"
    assert sf.Widget__c.upsert(f"External_Id__c/{ext}", {"Name": "Sprocket", "Quantity__c": 3}) == 201
    assert sf.Widget__c.upsert(f"External_Id__c/{ext}", {"Quantity__c": 5}) == 200
    rec = sf.Widget__c.get_by_custom_id("External_Id__c", ext)
    assert rec["Quantity__c"] == 5 and rec["Name"] == "Sprocket" and rec["Id"].startswith("a01")
    raw = sf.Widget__c.upsert(f"External_Id__c/{ext}", {"Active__c": True}, raw_response=True)
    assert raw.json() == {"id": rec["Id"], "success": True, "errors": [], "created": False}


def test_if_unmodified_since_412(sf):
    cid = sf.Contact.create({"LastName": "Stale"})["id"]
    rec = sf.Contact.get(cid)
    modified = datetime.datetime.strptime(rec["LastModifiedDate"], "%Y-%m-%dT%H:%M:%S.%f%z")
    stale = (modified - datetime.timedelta(seconds=5)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    with pytest.raises(SalesforceGeneralError) as e:
        sf.Contact.update(cid, {"Title": "x"}, headers={"If-Unmodified-Since": stale})
    assert e.value.status == 412 and e.value.content[0]["errorCode"] == "PRECONDITION_FAILED"
    assert sf.Contact.get(cid)["Title"] is None
    fresh = (modified + datetime.timedelta(seconds=5)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert sf.Contact.update(cid, {"Title": "y"}, headers={"If-Unmodified-Since": fresh}) == 204


def test_if_match_etag(sf, https_server, http):
    cid = sf.Contact.create({"LastName": "Etag"})["id"]
    r = http.get(f"{https_server.api}/sobjects/Contact/{cid}")
    etag = r.headers["ETag"]
    ok = http.patch(f"{https_server.api}/sobjects/Contact/{cid}", json={"Title": "a"}, headers={"If-Match": etag})
    assert ok.status_code == 204
    stale = http.patch(f"{https_server.api}/sobjects/Contact/{cid}", json={"Title": "b"}, headers={"If-Match": etag})
    assert stale.status_code == 412 and stale.json()[0]["errorCode"] == "PRECONDITION_FAILED"


def test_collections(sf):
    created = sf.restful("composite/sobjects", method="POST", json={"allOrNone": False, "records": [
        {"attributes": {"type": "Account"}, "Name": "Coll A"},
        {"attributes": {"type": "Contact"}, "LastName": "Coll B"},
        {"attributes": {"type": "Contact"}, "FirstName": "no last name"},
    ]})
    assert [c["success"] for c in created] == [True, True, False]
    assert created[2]["errors"][0]["statusCode"] == "REQUIRED_FIELD_MISSING" and created[2]["errors"][0]["fields"] == ["LastName"]
    acc_id, con_id = created[0]["id"], created[1]["id"]

    updated = sf.restful("composite/sobjects", method="PATCH", json={"allOrNone": False, "records": [
        {"attributes": {"type": "Contact"}, "Id": con_id, "AccountId": acc_id},
        {"attributes": {"type": "Contact"}, "Id": con_id, "Bogus__c": 1},
    ]})
    assert updated[0] == {"id": con_id, "success": True, "errors": []}
    assert updated[1]["success"] is False and updated[1]["errors"][0]["statusCode"] == "INVALID_FIELD"

    fetched = sf.restful("composite/sobjects/Contact", method="POST", json={"ids": [con_id, "003000000000000AAA"], "fields": ["Id", "LastName", "AccountId"]})
    assert fetched[0]["AccountId"] == acc_id and fetched[1] is None

    rolled = sf.restful("composite/sobjects", method="POST", json={"allOrNone": True, "records": [
        {"attributes": {"type": "Account"}, "Name": "Never"},
        {"attributes": {"type": "Account"}},
    ]})
    assert rolled[0]["errors"][0]["statusCode"] == "ALL_OR_NONE_OPERATION_ROLLED_BACK"
    assert sf.query("SELECT COUNT() FROM Account WHERE Name = 'Never'")["totalSize"] == 0

    ext = uuid.uuid4().hex[:8]
    upserted = sf.restful("composite/sobjects/Widget__c/External_Id__c", method="PATCH", json={"allOrNone": False, "records": [
        {"attributes": {"type": "Widget__c"}, "External_Id__c": f"C-{ext}", "Name": "one"},
    ]})
    assert upserted[0]["created"] is True

    deleted = sf.restful("composite/sobjects", method="DELETE", params={"ids": f"{con_id},{acc_id}", "allOrNone": "false"})
    assert [d["success"] for d in deleted] == [True, True]
    again = sf.restful("composite/sobjects", method="DELETE", params={"ids": con_id})
    assert again[0]["success"] is False and again[0]["errors"][0]["statusCode"] == "ENTITY_IS_DELETED"


def test_composite_with_references(sf):
    res = sf.restful("composite", method="POST", json={"allOrNone": True, "compositeRequest": [
        {"method": "POST", "url": "/services/data/v60.0/sobjects/Account", "referenceId": "acct", "body": {"Name": "Composite Co"}},
        {"method": "POST", "url": "/services/data/v60.0/sobjects/Contact", "referenceId": "con", "body": {"LastName": "Ref", "AccountId": "@{acct.id}"}},
        {"method": "GET", "url": "/services/data/v60.0/sobjects/Contact/@{con.id}?fields=AccountId", "referenceId": "get"},
    ]})["compositeResponse"]
    assert [r["httpStatusCode"] for r in res] == [201, 201, 200]
    assert res[2]["body"]["AccountId"] == res[0]["body"]["id"]
    failed = sf.restful("composite", method="POST", json={"allOrNone": True, "compositeRequest": [
        {"method": "POST", "url": "/services/data/v60.0/sobjects/Account", "referenceId": "a", "body": {"Name": "Rollback Co"}},
        {"method": "POST", "url": "/services/data/v60.0/sobjects/Contact", "referenceId": "b", "body": {}},
    ]})["compositeResponse"]
    assert failed[0]["body"][0]["errorCode"] == "PROCESSING_HALTED"
    assert failed[1]["httpStatusCode"] == 400 and failed[1]["body"][0]["errorCode"] == "REQUIRED_FIELD_MISSING"
    assert sf.query("SELECT COUNT() FROM Account WHERE Name = 'Rollback Co'")["totalSize"] == 0


def test_composite_collection_subrequests(sf):
    """sObject Collections inside /composite: a created parent's @{ref.id} resolved in the records,
    the per-record results as the subrequest's body, and at most 5 collection or query subrequests."""
    v = "/services/data/v60.0"
    res = sf.restful("composite", method="POST", json={"allOrNone": False, "compositeRequest": [
        {"method": "POST", "url": f"{v}/sobjects/Account", "referenceId": "parent", "body": {"Name": "Collection Parent Co"}},
        {"method": "POST", "url": f"{v}/composite/sobjects", "referenceId": "kids", "body": {"allOrNone": False, "records": [
            {"attributes": {"type": "Contact"}, "LastName": "Kid One", "AccountId": "@{parent.id}"},
            {"attributes": {"type": "Contact"}, "AccountId": "@{parent.id}"},
            {"attributes": {"type": "Contact"}, "LastName": "Kid Three", "AccountId": "@{parent.id}"}]}},
    ]})["compositeResponse"]
    assert [r["httpStatusCode"] for r in res] == [201, 200]
    kids = res[1]["body"]
    assert [k["success"] for k in kids] == [True, False, True]
    assert kids[1]["errors"][0]["statusCode"] == "REQUIRED_FIELD_MISSING"
    parent = res[0]["body"]["id"]
    got = sf.query(f"SELECT Id, LastName FROM Contact WHERE AccountId = '{parent}' ORDER BY LastName")["records"]
    assert [(r["Id"], r["LastName"]) for r in got] == [(kids[0]["id"], "Kid One"), (kids[2]["id"], "Kid Three")]

    query = {"method": "GET", "url": f"{v}/query?q=SELECT+Id+FROM+Account+LIMIT+1"}
    delete = {"method": "DELETE", "url": f"{v}/composite/sobjects?ids={kids[0]['id']}&allOrNone=false", "referenceId": "del"}
    single = {"method": "GET", "url": f"{v}/sobjects/Contact/{kids[2]['id']}", "referenceId": "one"}
    five = [dict(query, referenceId=f"q{i}") for i in range(4)] + [delete, single]
    res = sf.restful("composite", method="POST", json={"compositeRequest": five})["compositeResponse"]
    assert [r["httpStatusCode"] for r in res] == [200] * 6 and res[4]["body"][0]["success"] is True
    with pytest.raises(SalesforceMalformedRequest) as e:
        sf.restful("composite", method="POST", json={"compositeRequest": [dict(query, referenceId=f"q{i}") for i in range(5)] + [
            dict(delete, url=f"{v}/composite/sobjects?ids={kids[2]['id']}")]})
    assert e.value.content[0]["errorCode"] == "LIMIT_EXCEEDED"
    assert sf.query(f"SELECT COUNT() FROM Contact WHERE Id = '{kids[2]['id']}'")["totalSize"] == 1


def test_error_shapes(sf):
    with pytest.raises(SalesforceMalformedRequest) as e:
        sf.query("SELECT Id FROM Contact WHERE")
    err = e.value.content[0]
    assert set(err) == {"message", "errorCode"} and err["errorCode"] == "MALFORMED_QUERY"
    assert "ERROR at Row:1:Column:" in err["message"]
    with pytest.raises(SalesforceMalformedRequest) as e:
        sf.query("SELECT Nope FROM Contact")
    assert e.value.content[0]["errorCode"] == "INVALID_FIELD" and "No such column 'Nope'" in e.value.content[0]["message"]
    with pytest.raises(SalesforceMalformedRequest) as e:
        sf.query("SELECT Id FROM Nope__c")
    assert e.value.content[0]["errorCode"] == "INVALID_TYPE"
    with pytest.raises(SalesforceMalformedRequest) as e:
        sf.Contact.create({"LastName": "x", "Name": "read only"})
    assert e.value.content == [{"message": e.value.content[0]["message"], "errorCode": "INVALID_FIELD_FOR_INSERT_UPDATE", "fields": ["Name"]}]
    with pytest.raises(SalesforceResourceNotFound) as e:
        sf.Contact.get("003000000000000AAA")
    assert e.value.content[0]["errorCode"] == "NOT_FOUND"


def test_expired_session(https_server, tls_files):
    from simple_salesforce import Salesforce

    bad = Salesforce(instance_url=https_server.url, session_id="wrong", session=trusting_session(tls_files[0]), version="60.0")
    with pytest.raises(SalesforceExpiredSession) as e:
        bad.query("SELECT Id FROM Contact LIMIT 1")
    assert e.value.content == [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]


def test_oauth_password_and_refresh(https_server, tls_files):
    s = trusting_session(tls_files[0])
    token_url = f"{https_server.url}/services/oauth2/token"
    denied = s.post(token_url, data={"grant_type": "password", "username": "dev@example.com", "password": "nope"})
    assert denied.status_code == 400 and denied.json()["error"] == "invalid_grant"
    tok = s.post(token_url, data={"grant_type": "password", "client_id": "x", "username": "dev@example.com", "password": "devpassword"}).json()
    assert tok["instance_url"] == https_server.url and tok["token_type"] == "Bearer"
    q = f"{https_server.api}/query"
    assert s.get(q, params={"q": "SELECT Id FROM Account LIMIT 1"}, headers={"Authorization": f"Bearer {tok['access_token']}"}).status_code == 200
    refreshed = s.post(token_url, data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]}).json()
    assert refreshed["access_token"] != tok["access_token"] and "refresh_token" not in refreshed
    assert s.get(q, params={"q": "SELECT Id FROM Account LIMIT 1"}, headers={"Authorization": f"OAuth {refreshed['access_token']}"}).status_code == 200
    identity = s.get(tok["id"], headers={"Authorization": f"Bearer {refreshed['access_token']}"}).json()
    assert identity["username"] == "dev@example.com" and identity["user_id"].startswith("005")


def test_describe_and_versions(sf, https_server, http):
    versions = http.get(f"{https_server.url}/services/data/").json()
    assert {"label": "Winter '21", "url": "/services/data/v50.0", "version": "50.0"} in versions
    assert http.get(f"{https_server.url}/services/data/v30.0/sobjects").status_code == 404
    names = {o["name"]: o for o in sf.describe()["sobjects"]}
    assert {"Account", "Contact", "Opportunity", "Widget__c"} <= set(names)
    assert names["Account"]["keyPrefix"] == "001" and names["Contact"]["keyPrefix"] == "003" and names["Opportunity"]["keyPrefix"] == "006"
    d = sf.Contact.describe()
    fields = {f["name"]: f for f in d["fields"]}
    assert fields["AccountId"]["referenceTo"] == ["Account"] and fields["AccountId"]["relationshipName"] == "Account"
    assert fields["Id"]["type"] == "id" and fields["SystemModstamp"]["updateable"] is False
    ext = {f["name"]: f for f in sf.Widget__c.describe()["fields"]}["External_Id__c"]
    assert ext["externalId"] is True
    assert {"childSObject": "Contact", "field": "AccountId", "relationshipName": "Contacts"}.items() <= next(
        r for r in sf.Account.describe()["childRelationships"] if r["relationshipName"] == "Contacts").items()


def test_updated_and_deleted(sf):
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)
    cid = sf.Contact.create({"LastName": "Changes"})["id"]
    sf.Contact.delete(cid)
    other = sf.Contact.create({"LastName": "Kept"})["id"]
    end = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=1)
    updated = sf.Contact.updated(start, end)
    assert other in updated["ids"] and cid not in updated["ids"]
    deleted = sf.Contact.deleted(start, end)
    assert cid in [d["id"] for d in deleted["deletedRecords"]]


def test_system_modstamp_strictly_increasing(sf):
    res = sf.restful("composite/sobjects", method="POST", json={"records": [
        {"attributes": {"type": "Contact"}, "LastName": f"Tick{i}"} for i in range(50)]})
    ids = [r["id"] for r in res]
    recs = sf.restful("composite/sobjects/Contact", method="POST", json={"ids": ids, "fields": ["Id", "SystemModstamp"]})
    stamps = [r["SystemModstamp"] for r in recs]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_briefcase_and_layout(https_server, http):
    url = f"{https_server.api}/connect/briefcase/priming-records"
    pr = http.get(url).json()
    assert pr["relayToken"] is not None and pr["ruleErrors"] == []
    accounts = pr["primingRecords"]["Account"]["012000000000000AAA"]
    assert ID_RE.match(accounts[0]["id"]) and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", accounts[0]["systemModstamp"])
    served = pr["stats"]["recordCountServed"]
    token = pr["relayToken"]
    while token:
        page = http.get(url, params={"relayToken": token}).json()
        served += page["stats"]["recordCountServed"]
        token = page["relayToken"]
    assert served == pr["stats"]["recordCountTotal"]
    cid = http.post(f"{https_server.api}/sobjects/Account", json={"Name": "Primed"}).json()["id"]
    recent = http.get(url, params={"changedAfterTimestamp": datetime.datetime.now(datetime.timezone.utc).replace(year=2026, month=1, day=1).isoformat()}).json()
    assert cid in [r["id"] for r in recent["primingRecords"]["Account"]["012000000000000AAA"]]
    assert recent["relayToken"] is None and recent["stats"]["recordCountTotal"] < 50
    lay = http.get(f"{https_server.api}/ui-api/layout/Contact", params={"layoutType": "Compact", "mode": "View"}).json()
    assert lay["layoutType"] == "Compact" and lay["sections"][0]["layoutRows"]


def test_briefcase_relay_token_keeps_the_filter(start_server):
    import requests as rq

    server = start_server("--seed", "Account=2500")
    s = rq.Session()
    s.trust_env = False
    s.headers["Authorization"] = "Bearer devserver-test-token"
    url = f"{server.api}/connect/briefcase/priming-records"
    # Seeded Accounts are one second apart from 2025-01-01T00:00:00: skip the first 100.
    after_ms = int(datetime.datetime(2025, 1, 1, 0, 1, 40, 500000, tzinfo=datetime.timezone.utc).timestamp() * 1000)
    page = s.get(url, params={"changedAfterTimestamp": str(after_ms)}).json()
    total = page["stats"]["recordCountTotal"]
    assert 2370 <= total <= 2420
    ids = [r["id"] for r in page["primingRecords"]["Account"]["012000000000000AAA"]]
    while page["relayToken"]:
        page = s.get(url, params={"relayToken": page["relayToken"]}).json()
        assert page["stats"]["recordCountTotal"] == total
        ids += [r["id"] for r in page["primingRecords"].get("Account", {}).get("012000000000000AAA", [])]
    assert len(ids) == len(set(ids)) == total


def test_fields_macro(sf):
    rec = sf.query("SELECT FIELDS(ALL) FROM Widget__c LIMIT 1")["records"][0]
    assert {"Id", "Name", "External_Id__c", "SystemModstamp", "IsDeleted"} <= set(rec)
    custom = sf.query("SELECT FIELDS(CUSTOM) FROM Widget__c LIMIT 1")["records"][0]
    assert set(custom) - {"attributes"} == {k for k in rec if k.endswith("__c")}
    standard = sf.query("SELECT FIELDS(STANDARD) FROM Contact LIMIT 1")["records"][0]
    assert "LastName" in standard and not any(k.endswith("__c") for k in standard)


def test_delete_cascades_and_clears_lookups(sf):
    acc = sf.Account.create({"Name": "Parent To Delete"})["id"]
    con = sf.Contact.create({"LastName": "Child", "AccountId": acc})["id"]
    wid = sf.Widget__c.create({"Name": "Linked", "Account__c": acc})["id"]
    before = sf.Widget__c.get(wid)["SystemModstamp"]
    sf.Account.delete(acc)
    with pytest.raises(SalesforceResourceNotFound):
        sf.Contact.get(con)  # Contact.AccountId cascades, as in a real org
    widget = sf.Widget__c.get(wid)
    assert widget["Account__c"] is None and widget["SystemModstamp"] > before


def test_composite_batch(sf):
    cid = sf.Contact.create({"LastName": "Batch"})["id"]
    res = sf.restful("composite/batch", method="POST", json={"haltOnError": True, "batchRequests": [
        {"method": "PATCH", "url": f"v60.0/sobjects/Contact/{cid}", "richInput": {"Title": "Batched"}},
        {"method": "GET", "url": f"v60.0/sobjects/Contact/{cid}?fields=Title"},
        {"method": "GET", "url": "v60.0/sobjects/Contact/003000000000000AAA"},
        {"method": "GET", "url": f"v60.0/sobjects/Contact/{cid}"},
    ]})
    assert res["hasErrors"] is True
    assert [r["statusCode"] for r in res["results"]] == [204, 200, 404, 412]
    assert res["results"][1]["result"]["Title"] == "Batched" and res["results"][0]["result"] is None
    assert res["results"][3]["result"][0]["errorCode"] == "BATCH_PROCESSING_HALTED"


def test_query_all_pages_include_deleted(sf):
    ids = [r["id"] for r in sf.restful("composite/sobjects", method="POST", json={"records": [
        {"attributes": {"type": "Opportunity"}, "Name": f"QA{i}", "StageName": "Prospecting", "CloseDate": "2026-03-01"} for i in range(5)]})]
    sf.restful("composite/sobjects", method="DELETE", params={"ids": ",".join(ids[:3])})
    live = sf.query("SELECT COUNT() FROM Opportunity")["totalSize"]
    res = sf.query("SELECT Id, IsDeleted FROM Opportunity", include_deleted=True, headers={"Sforce-Query-Options": "batchSize=200"})
    assert "/queryAll/" in res["nextRecordsUrl"]
    everything = sf.query_all("SELECT Id, IsDeleted FROM Opportunity", include_deleted=True)["records"]
    assert len(everything) == live + 3
    assert {r["Id"] for r in everything if r["IsDeleted"]} >= set(ids[:3])
    assert sf.search("FIND {QA3} IN NAME FIELDS RETURNING Opportunity(Id)")["searchRecords"][0]["Id"] == ids[3]


def test_relative_date_literals(sf):
    cid = sf.Contact.create({"LastName": "Relative"})["id"]
    def has(where):
        return cid in {r["Id"] for r in sf.query_all(f"SELECT Id FROM Contact WHERE LastName = 'Relative' AND {where}")["records"]}
    assert has("CreatedDate = TODAY") and has("CreatedDate = THIS_WEEK") and has("CreatedDate = THIS_MONTH")
    assert has("CreatedDate = LAST_N_DAYS:1") and has("CreatedDate > YESTERDAY") and has("CreatedDate = THIS_YEAR")
    assert not has("CreatedDate = LAST_WEEK") and not has("CreatedDate = N_DAYS_AGO:1") and not has("CreatedDate = LAST_N_MONTHS:2")
    assert not has("CreatedDate = NEXT_N_YEARS:3") and has("CreatedDate < NEXT_WEEK")
