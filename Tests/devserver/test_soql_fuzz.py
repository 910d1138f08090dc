"""Fuzz the SOQL and SOSL parsers through HTTP: random and mutated queries must get a 200
or a Salesforce-shaped 400, never a 5xx, a crash, a dropped connection or a hang.

FUZZ_ITERATIONS (default 3000) and FUZZ_SEED (default 20261122) control the run.
"""
import os
import random
import time
import urllib.parse

import pytest
import requests

from devserver_harness import TOKEN

CORPUS = [
    "SELECT Id FROM Contact",
    "SELECT Id, FirstName, LastName, Account.Name FROM Contact WHERE LastName LIKE 'S%' ORDER BY LastName DESC NULLS LAST LIMIT 10 OFFSET 5",
    "SELECT Name, (SELECT Id, LastName FROM Contacts WHERE Email != null ORDER BY LastName LIMIT 2) FROM Account WHERE Industry IN ('Banking', 'Retail')",
    "SELECT COUNT() FROM Contact WHERE CreatedDate > 2025-01-01T00:00:00Z AND (Title = 'CEO' OR NOT Title = null)",
    "SELECT LastName, COUNT(Id) c FROM Contact GROUP BY LastName ORDER BY COUNT(Id) DESC LIMIT 3",
    "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE Birthdate < 1980-01-01) AND AnnualRevenue >= 1000.5",
    "SELECT Id, Name FROM Widget__c WHERE Active__c = true AND Ship_Date__c = LAST_N_DAYS:30 AND Account__r.Name != 'x\\'y'",
    "SELECT Id FROM Opportunity WHERE CloseDate = THIS_YEAR AND Amount > -5 AND Probability NOT IN (10, 20)",
    "SELECT Id FROM Contact WHERE LastModifiedDate >= 2025-01-01T00:00:00.000+0000 ORDER BY LastModifiedDate, Id",
    "SELECT Id FROM Contact WHERE Email LIKE '%\\_%' FOR VIEW",
]
SOSL_CORPUS = [
    "FIND {Smith} IN ALL FIELDS RETURNING Contact(Id, Name WHERE Title != null LIMIT 5), Account(Id)",
    "FIND {Tok*} RETURNING Contact",
    'FIND {"San Francisco"} IN NAME FIELDS LIMIT 10',
]
VOCAB = [
    "SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "IN", "LIKE", "LIMIT", "OFFSET", "ORDER", "BY", "GROUP", "ASC", "DESC",
    "NULLS", "FIRST", "LAST", "HAVING", "FIELDS(ALL)", "COUNT()", "COUNT(Id)", "null", "true", "false", "TODAY", "LAST_N_DAYS:", "(", ")", ",", ".",
    "=", "!=", "<>", "<", ">", "<=", ">=", "'", "\\", "'\\'", "'abc'", "'%'", "0", "-1", "1.5", "99999999999999999999999",
    "2026-01-01", "2026-13-45", "2026-01-01T00:00:00Z", "2026-01-01T25:00:00+0000", "Id", "Name", "Contact", "Account",
    "Contacts", "Account.Name", "Account.Owner.Name", "Widget__c", "Account__r.Name", "{", "}", "FIND", "RETURNING", ":", ";",
    "\x00", "é", "\u202e", "ALL ROWS", "FOR UPDATE", "WITH SECURITY_ENFORCED", "TYPEOF", "(SELECT", "Id)", "%", "_", "*",
]


def mutate(rng, q):
    ops = rng.randint(1, 4)
    for _ in range(ops):
        choice = rng.random()
        if not q:
            q = rng.choice(VOCAB)
        pos = rng.randrange(len(q) + 1)
        if choice < 0.25:
            end = min(len(q), pos + rng.randint(1, 12))
            q = q[:pos] + q[end:]
        elif choice < 0.5:
            q = q[:pos] + " " + rng.choice(VOCAB) + " " + q[pos:]
        elif choice < 0.65:
            q = q[:pos]
        elif choice < 0.8:
            a, b = sorted(rng.randrange(len(q) + 1) for _ in range(2))
            q = q[:pos] + q[a:b] + q[pos:]
        elif choice < 0.9:
            q = q[:pos] + chr(rng.randrange(1, 0x2FF)) + q[pos:]
        else:
            q = q.upper() if rng.random() < 0.5 else q.lower()
    return q


def random_query(rng):
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 30)))


def deep_query(rng):
    depth = rng.choice([50, 500, 5000])
    kind = rng.random()
    if kind < 0.33:
        return "SELECT Id FROM Contact WHERE " + "(" * depth + "Name = 'x'" + ")" * depth
    if kind < 0.66:
        return "SELECT Id FROM Contact WHERE " + "NOT " * depth + "Name = 'x'"
    # Long but under the HTTP layer's request-line limit (~80 KB), which answers 400 without a body.
    return "SELECT Id FROM Contact WHERE " + " OR ".join(f"Name = 'n{i}'" for i in range(min(depth, 1500)))


@pytest.fixture(scope="module")
def fuzz_server():
    from devserver_harness import DevServer

    s = DevServer("--seed", "Account=50,Contact=300,Opportunity=20,Widget__c=20")
    yield s
    s.stop()


def check_response(r, q):
    q = q if len(q) < 300 else q[:300] + "..."
    assert r.status_code in (200, 400), f"{r.status_code} for {q!r}: {r.text[:300]}"
    try:
        body = r.json()
    except ValueError:
        raise AssertionError(f"non-JSON {r.status_code} for {q!r}: {r.content[:300]!r}")
    if r.status_code == 400:
        assert isinstance(body, list) and body and {"message", "errorCode"} <= set(body[0]), f"bad error shape for {q!r}: {body}"
        assert body[0]["errorCode"] in {"MALFORMED_QUERY", "INVALID_FIELD", "INVALID_TYPE", "INVALID_QUERY_FILTER_OPERATOR", "MALFORMED_SEARCH"}, body
    else:
        assert ("totalSize" in body and "records" in body) or "searchRecords" in body


def test_soql_fuzz(fuzz_server):
    iterations = int(os.environ.get("FUZZ_ITERATIONS", "3000"))
    seed = int(os.environ.get("FUZZ_SEED", "20261122"))
    rng = random.Random(seed)
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    stats = {200: 0, 400: 0}
    started = time.monotonic()
    for i in range(iterations):
        r0 = rng.random()
        if r0 < 0.55:
            q, endpoint = mutate(rng, rng.choice(CORPUS)), "query"
        elif r0 < 0.7:
            q, endpoint = mutate(rng, rng.choice(SOSL_CORPUS)), "search"
        elif r0 < 0.95:
            q, endpoint = random_query(rng), rng.choice(["query", "queryAll", "search"])
        else:
            q, endpoint = deep_query(rng), "query"
        if rng.random() < 0.05:
            # Raw bytes, including invalid UTF-8, percent-encoded into the URL.
            raw = bytes(rng.randrange(256) for _ in range(rng.randint(1, 80)))
            url = f"{fuzz_server.api}/{endpoint}?q=" + urllib.parse.quote_from_bytes(raw)
            r = s.get(url, timeout=10)
        else:
            r = s.get(f"{fuzz_server.api}/{endpoint}", params={"q": q}, timeout=10)
        check_response(r, q)
        stats[r.status_code] += 1
        assert fuzz_server.alive(), f"server died on {q!r}"
    elapsed = time.monotonic() - started
    print(f"fuzz: {iterations} queries in {elapsed:.1f}s: {stats}")
    assert stats[200] > 0 and stats[400] > 0
    # Still serving correctly afterwards.
    ok = s.get(f"{fuzz_server.api}/query", params={"q": "SELECT COUNT() FROM Contact"}, timeout=10)
    assert ok.status_code == 200 and ok.json()["totalSize"] == 300


def test_malformed_bodies_do_not_crash(fuzz_server):
    rng = random.Random(7)
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    bodies = [b"", b"{", b"[]", b"null", b'{"LastName": {"a": 1}}', b'{"LastName": "x", "Birthdate": 5}', b"\xff\xfe",
              b'{"records": "no"}', b'{"compositeRequest": [{"method": "GET"}]}',
              b'{"compositeRequest": [{"method": "GET", "url": "", "referenceId": "a"}]}',
              b'{"compositeRequest": [{"method": "GET", "url": "?", "referenceId": "a"}]}',
              b'{"compositeRequest": [{"method": "POST", "url": "/services/data/v60.0/sobjects/Account", "referenceId": "a", "body": {"Name": "@{a.id}"}}]}',
              b'{"compositeRequest": [{"method": "GET", "url": "/services/data/v60.0/query?q=SELECT+Id+FROM+Account+LIMIT+1", "referenceId": "q"},'
              b' {"method": "GET", "url": "/services/data/v60.0/sobjects/Account/@{q.records[99999999999999999999].Id}", "referenceId": "r"}]}',
              b'{"ids": [".", "", "x"], "fields": [".", "", "Account..Name"]}', b'{"ids": [], "fields": ["."]}', b"[" * 5000, b'{"LastName":"' + b"x" * 100 + b'"}']
    bodies += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))) for _ in range(100)]
    paths = ["sobjects/Contact", "composite/sobjects", "composite", "composite/batch", "sobjects/Widget__c/External_Id__c/k1", "composite/sobjects/Contact"]
    bodies += [b'{"batchRequests": [{"method": "GET", "url": ""}]}', b'{"batchRequests": [{"url": "?"}], "haltOnError": true}',
               b'{"batchRequests": [{"method": "POST", "url": "v60.0/composite/batch", "richInput": {"batchRequests": []}}]}']
    for body in bodies:
        for path in paths:
            for method in ("POST", "PATCH"):
                r = s.request(method, f"{fuzz_server.api}/{path}", data=body, headers={"Content-Type": "application/json"}, timeout=10)
                assert r.status_code < 500, f"{method} {path} {body[:60]!r}: {r.status_code} {r.text[:200]}"
    assert fuzz_server.alive()


def test_paths_headers_and_locators_do_not_crash(fuzz_server):
    rng = random.Random(11)
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    contact = s.get(f"{fuzz_server.api}/query", params={"q": "SELECT Id FROM Contact LIMIT 1"}).json()["records"][0]["Id"]
    first = s.get(f"{fuzz_server.api}/query", params={"q": "SELECT Id FROM Contact"}, headers={"Sforce-Query-Options": "batchSize=200"}).json()
    locator = first["nextRecordsUrl"].rsplit("/", 1)[1].split("-")[0]
    segments = ["sobjects", "Contact", "Account", "Widget__c", "External_Id__c", "describe", "updated", "deleted", contact, contact[:15],
                "query", "queryAll", f"{locator}-200", f"{locator}-99999999999999999999", f"{locator}--1", f"{locator}-9223372036854775807",
                "composite", "search", "connect", "briefcase", "priming-records", "ui-api", "layout", "", "..", "%00", "%ff", "x" * 300]
    headers = ["If-Unmodified-Since", "If-Modified-Since", "If-Match", "If-None-Match", "Sforce-Query-Options", "Content-Type"]
    values = ["", "garbage", "Tue, 99 Foo 99999999999999 99:99:99 GMT", "Mon, 01 Jan 9999 00:00:00 GMT", "*", '"x"',
              "batchSize=-5", "batchSize=99999999999999999999", "batchSize=", "2026-01-01T00:00:00Z"]
    params = [{}, {"start": "2020-01-01T00:00:00Z", "end": "2030-01-01T00:00:00Z"}, {"start": "x", "end": "y"},
              {"relayToken": "rt-9223372036854775807"}, {"changedAfterTimestamp": "9223372036854775807"},
              {"changedAfterTimestamp": "-9223372036854775808"}, {"fields": "Id,Nope"}, {"fields": "Account.Name"}, {"ids": "a,b,,"}]
    for _ in range(1500):
        path = "/".join(rng.choice(segments) for _ in range(rng.randint(1, 4)))
        method = rng.choice(["GET", "GET", "POST", "PATCH", "DELETE", "PUT", "HEAD"])
        h = {rng.choice(headers): rng.choice(values) for _ in range(rng.randint(0, 3))}
        body = rng.choice([b"", b"{}", b'{"LastName": "f"}', b'{"ids": ["x"], "fields": ["Id"]}', b'{"records": []}'])
        r = s.request(method, f"{fuzz_server.api}/{path}", params=rng.choice(params), headers=h, data=body, timeout=10)
        assert r.status_code < 500, f"{method} {path} {h}: {r.status_code} {r.text[:200]}"
    assert fuzz_server.alive()


def literal_for(rng, ftype):
    if ftype in ("string", "textarea", "email", "phone", "url", "picklist"):
        return rng.choice(["'a'", "'Smith'", "'%'", "'O\\'Brien'", "'\\\\'", "'é'", "''"])
    if ftype in ("int",):
        return str(rng.randint(-5, 10000))
    if ftype in ("double", "currency", "percent"):
        return rng.choice(["0", "1.5", "-3", "1000000"])
    if ftype == "boolean":
        return rng.choice(["true", "false"])
    if ftype == "date":
        return rng.choice(["2025-01-01", "1980-06-30", "TODAY", "LAST_N_DAYS:30", "THIS_YEAR", "N_DAYS_AGO:3", "LAST_N_MONTHS:100000", "NEXT_N_YEARS:2"])
    if ftype == "datetime":
        return rng.choice(["2025-01-01T00:00:00Z", "2025-01-01T01:00:00.000+0000", "2024-12-31T23:00:00-05:00", "YESTERDAY", "LAST_MONTH",
                           "THIS_WEEK", "LAST_N_WEEKS:2", "NEXT_WEEK", "LAST_N_YEARS:100000"])
    return rng.choice(["'001000000000001AAA'", "'003000000000001'"])


def test_generated_valid_queries_all_succeed(fuzz_server):
    """Grammar-driven valid SOQL over the real describe: every query must answer 200."""
    rng = random.Random(int(os.environ.get("FUZZ_SEED", "5")))
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    describe = {t: s.get(f"{fuzz_server.api}/sobjects/{t}/describe").json() for t in ["Account", "Contact", "Opportunity", "Widget__c"]}

    def fields(t):
        return [(f["name"], f["type"]) for f in describe[t]["fields"]]

    def parents(t):
        return [(f["relationshipName"], f["referenceTo"][0]) for f in describe[t]["fields"] if f["type"] == "reference"]

    def predicate(t, depth=0):
        r = rng.random()
        if depth < 2 and r < 0.2:
            op = rng.choice(["AND", "OR"])
            return f"({predicate(t, depth + 1)} {op} {predicate(t, depth + 1)})"
        if depth < 2 and r < 0.3:
            return f"NOT ({predicate(t, depth + 1)})"
        name, ftype = rng.choice(fields(t))
        prefix = ""
        if parents(t) and rng.random() < 0.2:
            rel, target = rng.choice(parents(t))
            name, ftype = rng.choice(fields(target))
            prefix = rel + "."
        if ftype in ("string", "textarea", "email", "phone", "url", "picklist") and rng.random() < 0.3:
            return f"{prefix}{name} LIKE {literal_for(rng, ftype)}"
        if rng.random() < 0.2:
            values = ", ".join(literal_for(rng, ftype) for _ in range(rng.randint(1, 3)) if ftype not in ("boolean",)) or "true"
            if ftype in ("date", "datetime"):
                values = "2025-01-01" if ftype == "date" else "2025-01-01T00:00:00Z"
            if ftype == "boolean":
                return f"{prefix}{name} = {literal_for(rng, ftype)}"
            return f"{prefix}{name} {rng.choice(['IN', 'NOT IN'])} ({values})"
        if rng.random() < 0.1:
            return f"{prefix}{name} {rng.choice(['=', '!='])} null"
        ops = ["=", "!="] if ftype == "boolean" else ["=", "!=", "<", ">", "<=", ">="]
        return f"{prefix}{name} {rng.choice(ops)} {literal_for(rng, ftype)}"

    def special(t):
        r = rng.random()
        groupable = [n for n, ft in fields(t) if ft not in ("textarea", "double")]
        numeric = [n for n, ft in fields(t) if ft in ("int", "double", "currency", "percent")]
        if r < 0.3:
            return f"SELECT COUNT() FROM {t} WHERE {predicate(t)}" + (f" LIMIT {rng.randint(0, 9)}" if rng.random() < 0.3 else "")
        if r < 0.6:
            g = rng.choice(groupable)
            aggs = [f"COUNT(Id) c", f"MAX({rng.choice(groupable)})"] + ([f"SUM({rng.choice(numeric)}) s", f"AVG({rng.choice(numeric)})"] if numeric else [])
            having = f" HAVING COUNT(Id) {rng.choice(['>', '<=', '!='])} {rng.randint(0, 20)}" if rng.random() < 0.4 else ""
            return f"SELECT {g}, {', '.join(rng.sample(aggs, rng.randint(1, len(aggs))))} FROM {t} GROUP BY {g}{having} ORDER BY COUNT(Id) DESC LIMIT 5"
        if r < 0.8 and t == "Account":
            return f"SELECT Id FROM Account WHERE Id {rng.choice(['IN', 'NOT IN'])} (SELECT AccountId FROM Contact WHERE {predicate('Contact')})"
        return f"SELECT FIELDS({rng.choice(['ALL', 'STANDARD', 'CUSTOM'])}) FROM {t} WHERE {predicate(t)} LIMIT 3"

    for _ in range(int(os.environ.get("FUZZ_ITERATIONS", "3000")) // 3):
        t = rng.choice(list(describe))
        if rng.random() < 0.2:
            q = special(t)
            r = s.get(f"{fuzz_server.api}/query", params={"q": q}, timeout=10)
            assert r.status_code == 200, f"{q}: {r.text[:300]}"
            continue
        items = ["Id"] + [n for n, _ in rng.sample(fields(t), rng.randint(1, 5))]
        if parents(t) and rng.random() < 0.4:
            rel, target = rng.choice(parents(t))
            items.append(f"{rel}.{rng.choice(fields(target))[0]}")
        if t == "Account" and rng.random() < 0.3:
            items.append(f"(SELECT Id, LastName FROM Contacts WHERE {predicate('Contact')} ORDER BY LastName LIMIT 3)")
        q = f"SELECT {', '.join(items)} FROM {t}"
        if rng.random() < 0.8:
            q += f" WHERE {predicate(t)}"
        if rng.random() < 0.5:
            name = rng.choice([n for n, ft in fields(t) if ft != "textarea"])
            q += f" ORDER BY {name} {rng.choice(['ASC', 'DESC'])} NULLS {rng.choice(['FIRST', 'LAST'])}"
        if rng.random() < 0.5:
            q += f" LIMIT {rng.randint(0, 50)}"
            if rng.random() < 0.5:
                q += f" OFFSET {rng.randint(0, 20)}"
        endpoint = rng.choice(["query", "queryAll"])
        r = s.get(f"{fuzz_server.api}/{endpoint}", params={"q": q}, timeout=10)
        assert r.status_code == 200, f"{q}: {r.text[:300]}"
        body = r.json()
        assert body["done"] is True and body["totalSize"] == len(body["records"])
    for params in ({"changedAfterTimestamp": "-9223372036854775808"}, {"changedAfterTimestamp": "9223372036854775807"},
                   {"relayToken": "rt-1--9223372036854775808"}, {"relayToken": "rt-0-9223372036854775807"}, {"relayToken": "rt--1"}):
        r = s.get(f"{fuzz_server.api}/connect/briefcase/priming-records", params=params, timeout=10)
        assert r.status_code in (200, 400), f"{params}: {r.status_code}"
    assert fuzz_server.alive()
