"""Lifetime safety: dropped unclosed stores, interpreter exit with syncs running, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from package_support import DevServer

# Starts syncs whose callbacks run Python code, then drops the store unclosed while they run.
DROPPED = r"""
import gc, sys, threading, time
import syncstore
root, url, token = sys.argv[1:4]
calls = []
def on_state(state):
    calls.append(state["status"])
    time.sleep(0.01)  # hold the worker inside Python code
def start():
    store = syncstore.Store(root, "dropped")
    store.register_soup("c", [{"path": "Id", "type": "string"}])
    store.set_remote({"instanceUrl": url, "accessToken": token, "apiVersion": "v62.0"})
    before = len(calls)
    run = store.sync_down({"type": "soql", "query": "SELECT Id, LastName FROM Contact"}, "c", callback=on_state)
    while len(calls) == before:
        time.sleep(0.001)
    return run.sync_id
for i in range(5):
    start()          # the Store object is dropped here, its sync still running
    gc.collect()
time.sleep(0.3)
with syncstore.Store(root, "dropped") as again:   # every dropped handle was closed: it opens again
    states = [again.get_sync_status(i)["status"] for i in range(1, 6)]
print(" ".join(states), calls.count("RUNNING"), sum(c in ("DONE", "STOPPED") for c in calls))
"""


def test_a_dropped_unclosed_store_with_a_running_sync_never_crashes(tmp_path: Path) -> None:
    server = DevServer("--seed", "Contact=400", "--min-batch-size", "1", "--default-batch-size", "20",
                       "--faults", "GET */query* latency=20")
    try:
        out = subprocess.run([sys.executable, "-c", DROPPED, str(tmp_path), server.url, "py-package-token"],
                             capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    statuses, running, terminal = words[:5], int(words[5]), int(words[6])
    # Each dropped store was closed by its finalizer: the run stopped and its terminal callback
    # still reached the Python callback.
    assert statuses == ["STOPPED"] * 5 and running == 5 and terminal == 5, out.stdout


# Starts syncs with callbacks (and a blocked waiter thread) and exits at once.
EXIT = r"""
import atexit, sys, threading
import syncstore
root, url, token, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = syncstore.Store(root, "exit%d" % n)
store.register_soup("c", [{"path": "Id", "type": "string"}])
store.set_remote({"instanceUrl": url, "accessToken": token, "apiVersion": "v62.0"})
seen = []
for i in range(3):
    run = store.sync_down({"type": "soql", "query": "SELECT Id, LastName FROM Contact"}, "c",
                          callback=lambda s: seen.append(s["status"]))
threading.Thread(target=run.wait, daemon=True).start()
if n % 2:
    up = store.sync_up("c", callback=lambda s: seen.append(s))
print("started", flush=True)
# Runs before the package's exit handler (atexit is last in, first out): were syncs still running?
atexit.register(lambda: print("running at exit", not run.done, flush=True))
"""


def test_interpreter_exit_with_syncs_running_finishes_100_of_100(tmp_path: Path) -> None:
    server = DevServer("--seed", "Contact=200", "--min-batch-size", "1", "--default-batch-size", "25",
                       "--faults", "GET */query* latency=5")

    def one(n: int) -> tuple[int, str]:
        proc = subprocess.run([sys.executable, "-c", EXIT, str(tmp_path / str(n)), server.url, "py-package-token",
                               str(n)], capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stdout + proc.stderr

    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(one, range(100)))
    finally:
        server.stop()
    failures = [(code, text) for code, text in results
                if code != 0 or text.split("\n")[0] != "started" or "Traceback" in text or "Error" in text]
    assert failures == [], failures[:3]
    assert len(results) == 100
    # The test means something only if the syncs were still running when the interpreter exited.
    still_running = sum("running at exit True" in text for _, text in results)
    print(f"exit with syncs running: 100 of 100 exited cleanly; {still_running} had a run still going at exit")
    assert still_running >= 50, still_running


CTRL_C = r"""
import signal, sys, time
import syncstore
# Python raises KeyboardInterrupt only if SIGINT was not ignored when it started (a test run in
# the background, under nohup, inherits it ignored): this host wants Ctrl-C.
signal.signal(signal.SIGINT, signal.default_int_handler)
class Slow(syncstore.CustomTarget):
    def fetch_page(self, target, since_ms, continuation):
        time.sleep(0.05)
        n = int(continuation or 0)
        return {"records": [{"Id": str(n), "LastModifiedDate": "2025-01-01T00:00:00.000Z"}], "next": str(n + 1)}
with syncstore.Store(sys.argv[1]) as store:
    store.register_soup("c", [{"path": "Id", "type": "string"}])
    store.register_custom_target("slow", Slow())
    run = store.sync_down({"type": "slow"}, "c")
    print("waiting", flush=True)
    try:
        run.wait()
    except KeyboardInterrupt:
        print("interrupted", run.done, flush=True)
    print("closed", store.close() is None, flush=True)
print(run.state["status"])
"""


def test_ctrl_c_interrupts_a_wait(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "waiting"
    time.sleep(0.5)
    started = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.split("\n")[:3] == ["interrupted False", "closed True", "STOPPED"], out + err
    assert time.monotonic() - started < 10
