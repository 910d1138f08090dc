#!/usr/bin/env python3
"""Sync-down baseline (b) for bench-sync: what a Python user writes instead of the engine.

simple-salesforce `query_all` (every page, following nextRecordsUrl) and the stdlib sqlite3
module: one table with the record's JSON text and 3 indexed columns (Id unique, LastName,
Email), `INSERT OR REPLACE` (an upsert on Id), one transaction.

  sync_down_python.py URL TOKEN DB_PATH [--cafile PEM] [--soql QUERY]

simple-salesforce always builds https:// URLs from instance_url, so the server must serve TLS;
--cafile is the PEM of its (self-signed) certificate. Prints one line:
records=N seconds=T (from building the client to the commit; interpreter start-up and imports
are not timed, nor is creating the table).
"""
import argparse
import json
import os
import sqlite3
import sys
import time

import requests
from simple_salesforce import Salesforce

SOQL = ("SELECT Id, FirstName, LastName, Email, Phone, Title, AccountId, MailingCity, LastModifiedDate "
        "FROM Contact ORDER BY LastModifiedDate")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("token")
    ap.add_argument("db")
    ap.add_argument("--cafile")
    ap.add_argument("--soql", default=SOQL)
    args = ap.parse_args()

    if os.path.exists(args.db):
        os.remove(args.db)
    conn = sqlite3.connect(args.db)
    conn.execute("CREATE TABLE contacts (id INTEGER PRIMARY KEY, sf_id TEXT UNIQUE, last_name TEXT, email TEXT,"
                 " soup TEXT NOT NULL)")
    conn.execute("CREATE INDEX contacts_last_name ON contacts(last_name)")
    conn.execute("CREATE INDEX contacts_email ON contacts(email)")
    conn.commit()

    t0 = time.perf_counter()
    if args.cafile:
        # What a user does for a self-signed server; the variable wins over session.verify.
        os.environ["REQUESTS_CA_BUNDLE"] = args.cafile
    session = requests.Session()
    sf = Salesforce(instance_url=args.url, session_id=args.token, version="62.0", session=session)
    result = sf.query_all(args.soql)
    records = result["records"]
    with conn:
        conn.executemany(
            "INSERT OR REPLACE INTO contacts (sf_id, last_name, email, soup) VALUES (?, ?, ?, ?)",
            ((r["Id"], r.get("LastName"), r.get("Email"), json.dumps(r)) for r in records))
    elapsed = time.perf_counter() - t0
    (count,) = conn.execute("SELECT count(*) FROM contacts").fetchone()
    conn.close()
    if count != len(records):
        sys.exit(f"stored {count} of {len(records)} records")
    print(f"records={len(records)} seconds={elapsed:.6f}")


if __name__ == "__main__":
    main()
