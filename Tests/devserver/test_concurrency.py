"""Many clients at once: no errors, no lost writes, stamps stay unique and increasing."""
import concurrent.futures
import threading

import requests

from devserver_harness import TOKEN


def test_parallel_clients(start_server):
    server = start_server("--seed", "Account=50,Contact=3000")
    errors = []
    created = []
    lock = threading.Lock()

    def worker(n):
        s = requests.Session()
        s.trust_env = False
        s.headers["Authorization"] = f"Bearer {TOKEN}"
        for i in range(25):
            r = s.post(f"{server.api}/sobjects/Contact", json={"LastName": f"P{n}-{i}"})
            if r.status_code != 201:
                errors.append(r.text)
                continue
            cid = r.json()["id"]
            with lock:
                created.append(cid)
            if s.patch(f"{server.api}/sobjects/Contact/{cid}", json={"Title": "t"}).status_code != 204:
                errors.append("patch")
            q = s.get(f"{server.api}/query", params={"q": "SELECT Id, LastName FROM Contact ORDER BY LastModifiedDate DESC"})
            if q.status_code != 200 or len(q.json()["records"]) != 2000:
                errors.append(f"query {q.status_code}")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(8)))
    assert not errors, errors[:5]
    assert len(created) == 200 == len(set(created))
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    stamps = [r["SystemModstamp"] for r in s.get(f"{server.api}/query", params={
        "q": "SELECT SystemModstamp FROM Contact WHERE Title = 't' ORDER BY SystemModstamp"}).json()["records"]]
    assert len(stamps) == 200 == len(set(stamps))
    assert server.alive()
