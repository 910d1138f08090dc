#!/usr/bin/env python3
"""Benchmark: fetch SELECT <9 fields> FROM Contact over N seeded rows in pages of 2000 from
syncstore-devserver, discarding bodies, and print records/s.

  python3 bench/devserver_fetch.py [--binary PATH] [--rows 100000] [--runs 3] [--url URL --token T]

Without --url it starts the binary (default: the release build in .build/release, then
$SYNCSTORE_DEVSERVER) with --seed Account=1000,Contact=ROWS on 127.0.0.1, port 0.
The client is http.client on one keep-alive connection; it reads each page fully and only
looks for nextRecordsUrl, so the figure measures the server, not JSON parsing in Python.
"""
import argparse
import http.client
import os
import pathlib
import re
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

REPO = pathlib.Path(__file__).resolve().parents[1]
SOQL = "SELECT Id, FirstName, LastName, Email, Phone, Title, AccountId, MailingCity, LastModifiedDate FROM Contact"
NEXT_RE = re.compile(rb'"nextRecordsUrl":"([^"]+)"')
TOTAL_RE = re.compile(rb'"totalSize":(\d+)')


def default_binary():
    for candidate in [REPO / ".build/release/syncstore-devserver", os.environ.get("SYNCSTORE_DEVSERVER", ""),
                      REPO / ".build/release/syncstore-devserver"]:
        if candidate and pathlib.Path(candidate).exists():
            return str(candidate)
    sys.exit("no devserver binary: build with `swift build -c release --product syncstore-devserver` or pass --binary")


def self_signed(directory):
    """A throwaway certificate for --tls, made with the openssl CLI."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def start(binary, rows, tls=None):
    extra = ["--tls-cert", tls[0], "--tls-key", tls[1]] if tls else []
    proc = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0", "--token", "bench",
                             "--seed", f"Account=1000,Contact={rows}", *extra], stdout=subprocess.PIPE)
    line = proc.stdout.readline().decode().strip()
    if not line.startswith("http"):
        proc.kill()
        sys.exit(f"server did not start: {line!r}")
    return proc, line


def fetch_all(base, token, soql=SOQL, cafile=None):
    u = urllib.parse.urlsplit(base)
    if u.scheme == "https":
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=cafile))
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port)
    headers = {"Authorization": f"Bearer {token}", "Sforce-Query-Options": "batchSize=2000"}
    path = "/services/data/v60.0/query?" + urllib.parse.urlencode({"q": soql})
    records = pages = 0
    total = None
    first_page = None
    t0 = time.perf_counter()
    while path:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            sys.exit(f"HTTP {resp.status}: {body[:300]!r}")
        if first_page is None:
            first_page = time.perf_counter() - t0
        pages += 1
        head = body[:400]
        if total is None:
            total = int(TOTAL_RE.search(head).group(1))
        m = NEXT_RE.search(head)
        # Records on this page: the page size, except the last page.
        records += min(2000, total - records)
        path = m.group(1).decode() if m else None
    elapsed = time.perf_counter() - t0
    conn.close()
    return records, pages, elapsed, first_page


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--url")
    ap.add_argument("--token", default="bench")
    ap.add_argument("--soql", default=SOQL, help="query to page through (default: 9 Contact fields)")
    ap.add_argument("--tls", action="store_true", help="serve and fetch over HTTPS (self-signed, via openssl)")
    args = ap.parse_args()
    proc = None
    base = args.url
    tmp = tempfile.TemporaryDirectory()
    tls = self_signed(tmp.name) if args.tls else None
    if not base:
        proc, base = start(args.binary or default_binary(), args.rows, tls)
    try:
        best = 0.0
        for run in range(args.runs):
            records, pages, elapsed, first = fetch_all(base, args.token, args.soql, tls[0] if tls else None)
            rate = records / elapsed
            best = max(best, rate)
            print(f"run {run + 1}: {records} records in {pages} pages, {elapsed:.3f}s (first page {first * 1000:.0f} ms): {rate:,.0f} records/s")
        print(f"best: {best:,.0f} records/s")
    finally:
        if proc:
            proc.terminate()
            proc.wait()
        tmp.cleanup()


if __name__ == "__main__":
    main()
