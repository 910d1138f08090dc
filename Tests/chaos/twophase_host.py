"""The two-phase crash host (test_chaos_twophase.py): one client's store writing its own rows and
syncing them with the `twophase` target in a loop until it is SIGKILLed.

Every local write is logged to LOG before ("intent") and after ("done") it is made, each line
fsynced, so the parent can tell after a kill which value each row must hold.

    python twophase_host.py ROOT URL CLIENT SEED LOG
"""
import json
import os
import random
import sys

from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_chaos_twophase import TwoPhaseClient  # noqa: E402


def main():
    root, url, client, seed, log_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    rng = random.Random(seed)
    log = open(log_path, "a")

    def record(entry):
        log.write(json.dumps(entry) + "\n")
        log.flush()
        os.fsync(log.fileno())

    host = TwoPhaseClient(root, url, client, rng, record, seq_start=seed % 1_000_000 * 1000)
    while True:
        for _ in range(rng.randint(1, 4)):
            host.local_op()
        sid = host.start_up() if rng.random() < 0.7 else host.start_down()
        host.store.wait_sync(sid, 60_000)


if __name__ == "__main__":
    main()
