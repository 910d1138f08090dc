#!/usr/bin/env python3
"""What sync up's fault safety costs (a benchmark, not a test).

Times the same sync up through two builds of libsyncstore against one dev server with injected
latency: creates (each batch is marked before it is sent, so a lost answer can be reconciled)
and updates (each batch reads back the server's new modification dates, so the next
LEAVE_IF_CHANGED run sees no false conflict). Rounds alternate A and B and the ratio A/B is
taken per round; the median is printed.

    python3 bench/sync_up_cost.py --lib-a build/lib/libsyncstore.so --lib-b OLD/libsyncstore.so \\
        [--records 2000] [--latency 20] [--rounds 5] [--devserver .build/debug/syncstore-devserver]

Each measurement runs in its own process (ctypes loads one library per process).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"


def worker(args):
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
    import syncstore

    with tempfile.TemporaryDirectory() as root:
        store = syncstore.Store(root, {"storeName": "bench"})
        store.register_soup("contacts", [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"},
                                         {"path": "__local__", "type": "string"}])
        store.set_remote({"instanceUrl": args.url, "accessToken": TOKEN})
        tag = f"{os.getpid()}-{time.time_ns()}"
        store.upsert("contacts", [{"attributes": {"type": "Contact"}, "LastName": f"B{tag}-{i}", "__local__": True,
                                   "__locally_created__": True} for i in range(args.records)])
        options = {"fieldlist": ["LastName"], "mergeMode": args.merge_mode}
        started = time.perf_counter()
        state = store.wait_sync(store.sync_up("contacts", options=options))
        create_s = time.perf_counter() - started
        assert state["status"] == "DONE", state
        spec = {"queryType": "range", "indexPath": "_soupEntryId", "pageSize": args.records + 1}
        with store.query_soup("contacts", spec) as cursor:
            entries = cursor.entries
        for e in entries:
            e["LastName"] = e["LastName"] + "-u"
            e["__local__"] = True
            e["__locally_updated__"] = True
        store.upsert("contacts", entries)
        started = time.perf_counter()
        state = store.wait_sync(store.sync_up("contacts", options=options))
        update_s = time.perf_counter() - started
        assert state["status"] == "DONE", state
        store.close()
    print(json.dumps({"create_s": create_s, "update_s": update_s}))


def measure(lib, url, args):
    env = dict(os.environ, SYNCSTORE_LIB=str(lib))
    out = subprocess.run([sys.executable, __file__, "worker", "--url", url, "--records", str(args.records),
                          "--merge-mode", args.merge_mode], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="compare", choices=["compare", "worker"])
    parser.add_argument("--lib-a", default=str(ROOT / "build" / "lib" / "libsyncstore.so"))
    parser.add_argument("--lib-b")
    parser.add_argument("--devserver", default=os.environ.get("SYNCSTORE_DEVSERVER", str(ROOT / ".build" / "debug" / "syncstore-devserver")))
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--latency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--merge-mode", default="OVERWRITE")
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.mode == "worker":
        return worker(args)
    if not args.lib_b:
        parser.error("--lib-b (the baseline library) is required")
    server = subprocess.Popen([args.devserver, "--host", "127.0.0.1", "--port", "0", "--token", TOKEN,
                               "--faults", f"latency={args.latency}"], stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        print(f"sync up of {args.records} records, {args.merge_mode}, {args.latency} ms latency per request, "
              f"{args.rounds} rounds (A = {args.lib_a}, B = {args.lib_b})")
        rows = {"create_s": [], "update_s": []}
        for _ in range(args.rounds):
            a = measure(args.lib_a, url, args)
            b = measure(args.lib_b, url, args)
            for key in rows:
                rows[key].append((a[key], b[key]))
        for key, pairs in rows.items():
            a_med = statistics.median(p[0] for p in pairs)
            b_med = statistics.median(p[1] for p in pairs)
            ratio = statistics.median(p[0] / p[1] for p in pairs)
            print(f"{key[:-2]:7s} A {a_med:.3f} s   B {b_med:.3f} s   A/B {ratio:.3f}   "
                  f"(A {min(p[0] for p in pairs):.3f}-{max(p[0] for p in pairs):.3f}, "
                  f"B {min(p[1] for p in pairs):.3f}-{max(p[1] for p in pairs):.3f})")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
