"""Benchmark (not a test): sync down through the Python package vs the simple-salesforce +
sqlite3 baseline (bench/sync_down_python.py), same server, same records, same machine.

A syncstore-devserver on 127.0.0.1 serves N Contacts over HTTPS (simple-salesforce only speaks
https; a self-signed certificate is made with the openssl CLI). Alternating rounds, best kept:

  package   syncstore.Store.sync_down (soql target, maxBatchSize 2000, 3 indexes) + SyncRun.wait
  baseline  simple-salesforce query_all + sqlite3 INSERT OR REPLACE into a table with 3 indexes

Usage (the dev server: $SYNCSTORE_DEVSERVER or --devserver; a release build is best):
  .venv/bin/python bindings/python/bench/bench_sync_down.py [--records 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import syncstore

REPO = Path(__file__).resolve().parents[3]
TOKEN = "bench-token"
SOQL = ("SELECT Id, FirstName, LastName, Email, Phone, Title, AccountId, MailingCity, LastModifiedDate "
        "FROM Contact ORDER BY LastModifiedDate")
INDEXES = [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}, {"path": "Email", "type": "string"}]


def package_round(root: str, name: str, url: str, cert: str) -> tuple[int, float]:
    t0 = time.perf_counter()
    with syncstore.Store(root, name) as store:
        store.register_soup("contacts", INDEXES)
        store.set_remote({"instanceUrl": url, "accessToken": TOKEN, "apiVersion": "v62.0", "caBundle": cert})
        state = store.sync_down({"type": "soql", "query": SOQL, "maxBatchSize": 2000}, "contacts").wait()
        elapsed = time.perf_counter() - t0
    if state["status"] != "DONE":
        sys.exit(f"sync down failed: {state['error']}")
    return int(state["totalSize"]), elapsed


def baseline_round(python: str, db: str, url: str, cert: str) -> tuple[int, float]:
    out = subprocess.run([python, str(REPO / "bench" / "sync_down_python.py"), url, TOKEN, db, "--cafile", cert,
                          "--soql", SOQL], capture_output=True, text=True, check=True).stdout
    values = dict(part.split("=") for part in out.split())
    return int(values["records"]), float(values["seconds"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--devserver", default=os.environ.get("SYNCSTORE_DEVSERVER",
                                                          str(REPO / ".build/debug/syncstore-devserver")))
    ap.add_argument("--python", default=sys.executable, help="interpreter with simple-salesforce for the baseline")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="syncstore-bench-sync-down-")
    server = None
    try:
        cert, key = f"{work}/cert.pem", f"{work}/key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        server = subprocess.Popen([args.devserver, "--host", "127.0.0.1", "--port", "0", "--token", TOKEN,
                                   "--seed", f"Account=1000,Contact={args.records}", "--tls-cert", cert,
                                   "--tls-key", key], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        print(f"sync down {args.records} Contacts over HTTPS from {url} ({args.devserver}), "
              f"{args.rounds} alternating rounds, libsyncstore {syncstore.version()}")
        best_pkg = best_base = float("inf")
        for r in range(args.rounds):
            n_base, t_base = baseline_round(args.python, f"{work}/baseline{r}.db", url, cert)
            n_pkg, t_pkg = package_round(work, f"pkg{r}", url, cert)
            assert n_base == n_pkg == args.records, (n_base, n_pkg)
            best_pkg, best_base = min(best_pkg, t_pkg), min(best_base, t_base)
            print(f"  round {r + 1}: package {t_pkg:.2f} s  simple-salesforce+sqlite3 {t_base:.2f} s", flush=True)
        print(f"sync down  package {args.records / best_pkg:9.0f} records/s  simple-salesforce+sqlite3 "
              f"{args.records / best_base:9.0f} records/s  package is {best_base / best_pkg:.2f}x faster")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
