"""Benchmark (not a test): the Python package against the C ABI on the same workload.

  upsert  ENTRIES Contact-like entries (3 string indexes) in batches of 1000. Python passes lists
          of dicts (store.upsert), C the same JSON text. Twice: without the stored entries
          (return_entries=False / out_json NULL) and with them (Python decodes them to dicts, C
          receives the text and frees it)
  exact   QUERIES exact queries on the indexed Id: a cursor opened with its first page and
          closed (Python: store.query_soup(...) as a context manager, entries read)
  find    the same lookups as one page without a cursor (store.find / syncstore_query_page)

Beside them, what a Python user writes instead of the package ("stdlib"): sqlite3 with the
document as JSON text (json.dumps) and the indexed paths as indexed columns, WAL, one
transaction per batch; a lookup is one SELECT by the indexed column and json.loads of each row.

Best of ROUNDS alternating rounds on fresh stores. The find against stdlib is also timed in
pairs of short blocks on each round's two stores (the median of the pairs' ratios: a 2-core
machine's noise moves the best of whole rounds by a third). The C side is build/bench-binding
(bench/binding_bench.c). Usage:

  .venv/bin/python bindings/python/bench/bench_store.py [--entries 100000] [--queries 10000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import syncstore

REPO = Path(__file__).resolve().parents[3]
FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Ken", "Dennis", "Margaret", "John"]
TITLES = ["Engineer", "Director", "VP Sales", "Analyst", "Buyer", "CEO", "Consultant", "Manager"]
INDEXES = [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}, {"path": "Email", "type": "string"}]


def contact(i: int) -> Dict[str, Any]:
    return {"attributes": {"type": "Contact", "url": "/services/data/v62.0/sobjects/Contact"},
            "Id": f"003{i:015d}", "FirstName": FIRST[i % 10], "LastName": f"Last{(i * 7919) % 1000:04d}",
            "Email": f"person{i}@example.com", "Title": TITLES[i % 8], "Phone": f"+1-555-{i:07d}",
            "MailingCity": "Springfield", "AccountId": f"001{i % 500:015d}",
            "LastModifiedDate": "2026-01-21T23:51:33.000+0000"}


def lookup_keys(entries: int, queries: int) -> List[str]:
    return [f"003{(q * 7) % entries:015d}" for q in range(queries)]


def package_finds(store: syncstore.Store, keys: List[str]) -> float:
    """Seconds for store.find of each key (one page, no cursor)."""
    t0 = time.perf_counter()
    for key in keys:
        spec = {"queryType": "exact", "indexPath": "Id", "matchKey": key, "pageSize": 10}
        assert len(store.find("contacts", spec)) == 1
    return time.perf_counter() - t0


def stdlib_finds(db: sqlite3.Connection, keys: List[str]) -> float:
    """Seconds for the hand-written lookup of each key: one SELECT, json.loads of each row."""
    t0 = time.perf_counter()
    for key in keys:
        rows = [json.loads(doc) for (doc,) in db.execute("SELECT doc FROM contacts WHERE c_id = ? LIMIT 10", (key,))]
        assert len(rows) == 1
    return time.perf_counter() - t0


def python_round(root: str, name: str, batches: List[List[Dict[str, Any]]], entries: int,
                 queries: int, returned: bool) -> Tuple[float, float, float]:
    with syncstore.Store(root, name) as store:
        store.register_soup("contacts", INDEXES)
        t0 = time.perf_counter()
        for batch in batches:
            store.upsert("contacts", batch, return_entries=returned)
        upsert_s = time.perf_counter() - t0
        keys = lookup_keys(entries, queries)
        t0 = time.perf_counter()
        for key in keys:
            spec = {"queryType": "exact", "indexPath": "Id", "matchKey": key, "pageSize": 10}
            with store.query_soup("contacts", spec) as cursor:
                assert len(cursor.entries) == 1
        exact_s = time.perf_counter() - t0
        find_s = package_finds(store, keys)
    return upsert_s, exact_s, find_s


def stdlib_round(root: str, name: str, batches: List[List[Dict[str, Any]]], entries: int,
                 queries: int) -> Tuple[float, float]:
    db = sqlite3.connect(f"{root}/{name}.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE contacts (id INTEGER PRIMARY KEY, doc TEXT NOT NULL, c_id TEXT, c_last TEXT, c_email TEXT)")
    for column in ("c_id", "c_last", "c_email"):
        db.execute(f"CREATE INDEX {column}_idx ON contacts({column})")
    t0 = time.perf_counter()
    for batch in batches:
        db.execute("BEGIN")
        db.executemany("INSERT INTO contacts (doc, c_id, c_last, c_email) VALUES (?, ?, ?, ?)",
                       [(json.dumps(c), c["Id"], c["LastName"], c["Email"]) for c in batch])
        db.execute("COMMIT")
    upsert_s = time.perf_counter() - t0
    find_s = stdlib_finds(db, lookup_keys(entries, queries))
    db.close()
    return upsert_s, find_s


def paired_find(root: str, py_name: str, stdlib_name: str, entries: int, queries: int,
                blocks: int) -> List[float]:
    """package/stdlib time of the same lookups on a round's two stores, reopened: `blocks`
    pairs of `queries` lookups, which side goes first alternating. A pair's two blocks run
    within a second of each other, so a noisy machine moves both."""
    keys = lookup_keys(entries, queries)
    ratios = []
    db = sqlite3.connect(f"{root}/{stdlib_name}.db", isolation_level=None)
    with syncstore.Store(root, py_name) as store:
        for b in range(blocks):
            if b % 2 == 0:
                p, h = package_finds(store, keys), stdlib_finds(db, keys)
            else:
                h, p = stdlib_finds(db, keys), package_finds(store, keys)
            ratios.append(p / h)
    db.close()
    return ratios


def c_round(binary: Path, root: str, name: str, batch_file: Path, entries: int, queries: int,
            returned: bool) -> Tuple[float, float, float]:
    out = subprocess.run([str(binary), root, name, str(batch_file), str(entries), str(queries), str(int(returned))],
                         capture_output=True, text=True, check=True).stdout
    values = dict(part.split("=") for part in out.split())
    return float(values["upsert_s"]), float(values["exact_s"]), float(values["find_s"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--c-bench", default=str(REPO / "build" / "bench-binding"))
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="syncstore-bench-binding-")
    try:
        batches = [[contact(i) for i in range(start, min(start + 1000, args.entries))]
                   for start in range(0, args.entries, 1000)]
        batch_file = Path(work) / "batches.jsonl"
        batch_file.write_text("".join(json.dumps(b, separators=(",", ":")) + "\n" for b in batches))
        print(f"binding benchmark: {args.entries} entries in batches of 1000, {args.queries} exact queries, "
              f"libsyncstore {syncstore.version()} from {syncstore.library_path()}")
        best: Dict[str, float] = {}

        def keep(key: str, value: float) -> None:
            best[key] = min(best.get(key, float("inf")), value)

        pairs: List[float] = []
        for r in range(args.rounds):
            for returned in (False, True):
                tag = "ret" if returned else "noret"
                c = c_round(Path(args.c_bench), work, f"c{r}{tag}", batch_file, args.entries, args.queries, returned)
                p = python_round(work, f"py{r}{tag}", batches, args.entries, args.queries, returned)
                if not returned:
                    h = stdlib_round(work, f"stdlib{r}", batches, args.entries, args.queries)
                    keep("stdlib-upsert", h[0])
                    keep("stdlib-find", h[1])
                    pairs += paired_find(work, f"py{r}{tag}", f"stdlib{r}", args.entries, 1000, 10)
                keep(f"c-{tag}", c[0])
                keep(f"py-{tag}", p[0])
                keep("c-exact", c[1])
                keep("py-exact", p[1])
                keep("c-find", c[2])
                keep("py-find", p[2])
                print(f"  round {r + 1} ({'entries returned' if returned else 'no entries returned'}): "
                      f"upsert C {c[0]:.3f} s Python {p[0]:.3f} s; exact C {c[1]:.3f} s Python {p[1]:.3f} s", flush=True)
        n = args.entries
        for tag, label in (("noret", "upsert (results not returned: C out_json NULL, Python return_entries=False)"),
                           ("ret", "upsert (stored entries returned: C gets the JSON text, Python gets dicts)")):
            print(f"{label}\n        C {n / best['c-' + tag]:9.0f} rows/s  Python {n / best['py-' + tag]:9.0f} rows/s  "
                  f"Python/C time {best['py-' + tag] / best['c-' + tag]:.2f}x (target <= 1.30x)")
        for tag, label in (("exact", "exact (cursor)"), ("find", "find (one page)")):
            print(f"{label:15} C {best['c-' + tag] / args.queries * 1e6:7.1f} us/query  Python "
                  f"{best['py-' + tag] / args.queries * 1e6:7.1f} us/query  Python/C time {best['py-' + tag] / best['c-' + tag]:.2f}x")
        print(f"against stdlib sqlite3 + json (the table a user writes by hand):\n"
              f"  upsert  stdlib {n / best['stdlib-upsert']:9.0f} rows/s  package {n / best['py-noret']:9.0f} rows/s  "
              f"package/stdlib {best['stdlib-upsert'] / best['py-noret']:.2f}x (target >= 0.9x)\n"
              f"  find    stdlib {best['stdlib-find'] / args.queries * 1e6:7.1f} us  package "
              f"{best['py-find'] / args.queries * 1e6:7.1f} us  package/stdlib time "
              f"{best['py-find'] / best['stdlib-find']:.2f}x (target <= 1.3x)\n"
              f"  find    paired blocks of 1000 lookups on each round's stores, reopened: package/stdlib time "
              f"median {statistics.median(pairs):.2f}x ({min(pairs):.2f}-{max(pairs):.2f}, {len(pairs)} pairs)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
