"""What Salesforce's own REST clients (the Mobile SDK's force.js, react-native-force's net) send,
answered as an org answers: API versions 31.0-66.0, upsert with `Id` as the external id field,
retrieves that always carry `attributes` and `Id`, the master record type and its layout, and
404 NOT_FOUND for reads of a deleted record."""
import json
import uuid

import pytest

NOT_FOUND = [{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}]
MASTER = "012000000000000AAA"


def api(server, version):
    return f"{server.url}/services/data/v{version}"


def soql(http, server, q):
    r = http.get(f"{server.api}/queryAll", params={"q": q})
    assert r.status_code == 200, r.text
    return r.json()["records"]


def new_contact(http, server, **fields):
    body = {"LastName": f"Org-{uuid.uuid4().hex[:10]}", **fields}
    r = http.post(f"{server.api}/sobjects/Contact", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"], body["LastName"]


def test_versions_31_to_66_listed_and_accepted(https_server, http):
    listed = http.get(f"{https_server.url}/services/data/").json()
    assert [v["version"] for v in listed] == [f"{n}.0" for n in range(31, 67)]
    by_version = {v["version"]: v for v in listed}
    assert by_version["31.0"] == {"label": "Summer '14", "url": "/services/data/v31.0", "version": "31.0"}
    assert by_version["50.0"]["label"] == "Winter '21" and by_version["55.0"]["label"] == "Summer '22"
    assert by_version["65.0"]["label"] == "Winter '26" and by_version["66.0"]["label"] == "Spring '26"
    # Every listed version is served (and nothing outside the list).
    for v in listed:
        r = http.get(f"{https_server.url}{v['url']}/")
        assert r.status_code == 200 and r.json()["sobjects"] == f"{v['url']}/sobjects", v
    for version in ("66.0", "31.0"):
        rec = http.get(f"{api(https_server, version)}/query", params={"q": "SELECT Id FROM Account LIMIT 1"}).json()["records"][0]
        assert rec["attributes"]["url"].startswith(f"/services/data/v{version}/sobjects/Account/")
    for version in ("30.0", "67.0"):
        assert http.get(f"{api(https_server, version)}/sobjects").status_code == 404


def test_post_with_id_as_external_id_creates(https_server, http):
    r = http.post(f"{https_server.api}/sobjects/contact/Id/", json={"FirstName": "Ada", "LastName": "ById"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body == {"id": body["id"], "success": True, "errors": [], "created": True}
    assert body["id"].startswith("003") and r.headers["Location"].endswith(f"/sobjects/Contact/{body['id']}")
    rec = http.get(f"{https_server.api}/sobjects/Contact/{body['id']}", params={"fields": "FirstName,LastName"}).json()
    assert (rec["FirstName"], rec["LastName"]) == ("Ada", "ById")
    # An Id in the body is refused, as in any insert.
    bad = http.post(f"{https_server.api}/sobjects/Contact/Id", json={"Id": body["id"], "LastName": "x"})
    assert bad.status_code == 400 and bad.json()[0]["errorCode"] == "INVALID_FIELD"


def test_patch_with_id_as_external_id_updates(https_server, http):
    cid, _ = new_contact(http, https_server)
    r = http.patch(f"{https_server.api}/sobjects/Contact/Id/{cid}", json={"Title": "Updated by Id"})
    assert r.status_code == 200 and r.json() == {"id": cid, "success": True, "errors": [], "created": False}
    assert soql(http, https_server, f"SELECT Title FROM Contact WHERE Id = '{cid}'")[0]["Title"] == "Updated by Id"


def test_upsert_answers_before_api_46(https_server, http):
    """Before 46.0 an org's upsert has no `created`, and an update answers 204 with no body."""
    old = api(https_server, "45.0")
    r = http.post(f"{old}/sobjects/Contact/Id", json={"LastName": "Old client"})
    assert r.status_code == 201 and set(r.json()) == {"id", "success", "errors"}
    cid = r.json()["id"]
    r = http.patch(f"{old}/sobjects/Contact/Id/{cid}", json={"Title": "old"})
    assert r.status_code == 204 and r.content == b""
    ext = f"OLD-{uuid.uuid4().hex[:8]}"
    r = http.patch(f"{old}/sobjects/Widget__c/External_Id__c/{ext}", json={"Name": "old widget"})
    assert r.status_code == 201 and "created" not in r.json()
    r = http.patch(f"{old}/sobjects/Widget__c/External_Id__c/{ext}", json={"Quantity__c": 2})
    assert r.status_code == 204 and r.content == b""
    # The same upserts at a current version carry `created`.
    r = http.patch(f"{https_server.api}/sobjects/Widget__c/External_Id__c/{ext}", json={"Quantity__c": 3})
    assert r.status_code == 200 and r.json()["created"] is False
    # Resources newer than the version asked for are not there: POST .../Id came with 37.0,
    # sObject Collections with 42.0 and their upsert with 46.0.
    assert http.post(f"{api(https_server, '36.0')}/sobjects/Contact/Id", json={"LastName": "x"}).status_code == 404
    assert http.patch(f"{old}/composite/sobjects/Contact/Id", json={"records": [{"LastName": "x"}]}).json() == NOT_FOUND
    assert http.post(f"{api(https_server, '41.0')}/composite/sobjects/Contact", json={"ids": [cid], "fields": ["Id"]}).status_code == 404
    assert http.post(f"{api(https_server, '42.0')}/composite/sobjects/Contact", json={"ids": [cid], "fields": ["Id"]}).status_code == 200


@pytest.mark.parametrize("all_or_none", [True, False])
def test_collection_upsert_by_id_creates_and_updates(https_server, http, all_or_none):
    existing, _ = new_contact(http, https_server)
    tag = uuid.uuid4().hex[:8]
    records = [
        {"attributes": {"type": "Contact"}, "FirstName": "New", "LastName": f"A-{tag}"},
        {"attributes": {"type": "Contact"}, "Id": existing, "Title": f"T-{tag}"},
        {"LastName": f"B-{tag}"},  # no attributes, as react-native-force's collectionUpsert sends
        {"attributes": {"type": "Contact"}, "Id": None, "LastName": f"C-{tag}"},
    ]
    r = http.patch(f"{https_server.api}/composite/sobjects/Contact/Id", json={"allOrNone": all_or_none, "records": records})
    assert r.status_code == 200, r.text
    res = r.json()
    assert [x["success"] for x in res] == [True] * 4, res
    assert [x["created"] for x in res] == [True, False, True, True]
    assert res[1]["id"] == existing and all(x["errors"] == [] for x in res)
    made = {x["LastName"]: x["Id"] for x in soql(http, https_server, f"SELECT Id, LastName FROM Contact WHERE LastName LIKE '%-{tag}'")}
    assert made == {f"A-{tag}": res[0]["id"], f"B-{tag}": res[2]["id"], f"C-{tag}": res[3]["id"]}
    assert soql(http, https_server, f"SELECT Title FROM Contact WHERE Id = '{existing}'")[0]["Title"] == f"T-{tag}"
    # Upserting the created ones again by their Id updates them.
    again = http.patch(f"{https_server.api}/composite/sobjects/Contact/Id", json={"allOrNone": all_or_none, "records": [
        {"attributes": {"type": "Contact"}, "Id": res[0]["id"], "LastName": f"A2-{tag}"}]}).json()
    assert again == [{"id": res[0]["id"], "success": True, "errors": [], "created": False}]


@pytest.mark.parametrize("all_or_none", [True, False])
def test_collection_upsert_by_id_with_a_failure(https_server, http, all_or_none):
    existing, _ = new_contact(http, https_server, Title="before")
    tag = uuid.uuid4().hex[:8]
    records = [
        {"attributes": {"type": "Contact"}, "LastName": f"N-{tag}"},
        {"attributes": {"type": "Contact"}, "Id": existing, "Title": f"after-{tag}"},
        {"attributes": {"type": "Contact"}, "FirstName": "no last name"},
    ]
    res = http.patch(f"{https_server.api}/composite/sobjects/Contact/Id", json={"allOrNone": all_or_none, "records": records}).json()
    assert res[2]["success"] is False and res[2]["errors"][0]["statusCode"] == "REQUIRED_FIELD_MISSING"
    created = soql(http, https_server, f"SELECT Id, IsDeleted FROM Contact WHERE LastName = 'N-{tag}'")
    title = soql(http, https_server, f"SELECT Title FROM Contact WHERE Id = '{existing}'")[0]["Title"]
    if all_or_none:
        # Every record fails and nothing is written.
        for x in res[:2]:
            assert x["success"] is False and x["errors"][0]["statusCode"] == "ALL_OR_NONE_OPERATION_ROLLED_BACK" and "created" not in x
        assert created == [] and title == "before"
        assert res[1]["id"] == existing and "id" not in res[0]
    else:
        assert [x.get("created") for x in res[:2]] == [True, False] and all(x["success"] for x in res[:2])
        assert [c["Id"] for c in created] == [res[0]["id"]] and title == f"after-{tag}"


def test_retrieve_always_has_attributes_and_id(https_server, http):
    cid, last = new_contact(http, https_server, FirstName="Grace")
    r = http.get(f"{https_server.api}/sobjects/contact/{cid}", params={"fields": "firstName,lastName"})
    assert r.status_code == 200
    rec = r.json()
    assert rec == {"attributes": {"type": "Contact", "url": f"/services/data/v60.0/sobjects/Contact/{cid}"},
                   "FirstName": "Grace", "LastName": last, "Id": cid}
    # Asked for explicitly (any case), it is there once.
    raw = http.get(f"{https_server.api}/sobjects/Contact/{cid}", params={"fields": "ID,LastName"}).text
    assert raw.count('"Id"') == 1 and json.loads(raw)["Id"] == cid
    missing = "003000000000000AAA"
    coll = http.post(f"{https_server.api}/composite/sobjects/contact", json={"ids": [cid, missing], "fields": ["firstName", "LastName"]}).json()
    assert coll[0] == rec and coll[1] is None
    got = http.get(f"{https_server.api}/composite/sobjects/Contact", params={"ids": cid, "fields": "lastname"}).json()
    assert got == [{"attributes": rec["attributes"], "LastName": last, "Id": cid}]


def test_describe_lists_master_record_type_and_its_layout(https_server, http):
    names = [o["name"] for o in http.get(f"{https_server.api}/sobjects").json()["sobjects"]]
    assert {"Account", "Contact", "Opportunity", "Widget__c"} <= set(names)
    for name in names:
        d = http.get(f"{https_server.api}/sobjects/{name}/describe").json()
        layout_url = f"/services/data/v60.0/sobjects/{name}/describe/layouts/{MASTER}"
        assert d["recordTypeInfos"] == [{
            "active": True, "available": True, "defaultRecordTypeMapping": True, "developerName": "Master",
            "master": True, "name": "Master", "recordTypeId": MASTER, "urls": {"layout": layout_url},
        }]
        assert d["urls"]["layouts"] == f"/services/data/v60.0/sobjects/{name}/describe/layouts"
        r = http.get(f"{https_server.url}{layout_url}")
        assert r.status_code == 200, (name, r.text)
        lay = r.json()
        assert isinstance(lay["relatedLists"], list) and lay["id"].startswith("00h") and lay["saveOptions"] == []
        for key in ("detailLayoutSections", "editLayoutSections"):
            section = lay[key][0]
            values = [c["value"] for row in section["layoutRows"] for item in row["layoutItems"] for c in item["layoutComponents"]]
            assert "CreatedDate" in values and section["rows"] == len(section["layoutRows"])
    lay = http.get(f"{https_server.api}/sobjects/account/describe/layouts/012000000000000").json()  # 15-char id
    contacts = [rl for rl in lay["relatedLists"] if rl["name"] == "Contacts"]
    assert contacts and contacts[0]["sobject"] == "Contact" and contacts[0]["field"] == "AccountId"
    item = lay["editLayoutSections"][0]["layoutRows"][0]["layoutItems"][0]
    assert item["layoutComponents"][0]["value"] == "Name" and item["required"] is True
    assert item["layoutComponents"][0]["details"]["name"] == "Name"
    # All layouts with the record type mappings (a describeLayout without a record type).
    every = http.get(f"{https_server.api}/sobjects/Account/describe/layouts/").json()
    assert every["layouts"] == [lay] and every["recordTypeMappings"][0]["recordTypeId"] == MASTER
    assert every["recordTypeMappings"][0]["layoutId"] == lay["id"]
    for unknown in ("0125g000000AbCdEFG", "012000000000001", "not-an-id"):
        r = http.get(f"{https_server.api}/sobjects/Account/describe/layouts/{unknown}")
        assert r.status_code == 404 and r.json() == NOT_FOUND, unknown
    assert http.post(f"{https_server.api}/sobjects/Account/describe/layouts/{MASTER}", json={}).status_code == 405


def test_deleted_record_reads_not_found_writes_entity_is_deleted(https_server, http):
    cid, _ = new_contact(http, https_server)
    assert http.delete(f"{https_server.api}/sobjects/Contact/{cid}").status_code == 204
    for url, params in ((f"sobjects/Contact/{cid}", None), (f"sobjects/contact/{cid}", {"fields": "firstName,lastName"}),
                        (f"sobjects/Contact/Id/{cid}", None)):
        r = http.get(f"{https_server.api}/{url}", params=params)
        assert r.status_code == 404 and r.json() == NOT_FOUND, url
    assert http.head(f"{https_server.api}/sobjects/Contact/{cid}").status_code == 404
    deleted = [{"errorCode": "ENTITY_IS_DELETED", "message": "entity is deleted", "fields": []}]
    r = http.patch(f"{https_server.api}/sobjects/Contact/{cid}", json={"Title": "x"})
    assert r.status_code == 404 and r.json() == deleted
    r = http.delete(f"{https_server.api}/sobjects/Contact/{cid}")
    assert r.status_code == 404 and r.json() == deleted
    r = http.patch(f"{https_server.api}/sobjects/Contact/Id/{cid}", json={"Title": "x"})
    assert r.status_code == 404 and r.json() == deleted
