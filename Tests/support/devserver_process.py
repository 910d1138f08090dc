"""The one Python fixture that runs a syncstore-devserver process on 127.0.0.1 (port 0), shared by
every Python suite: bindings/python/tests, Tests/devserver, Tests/chaos. Each suite adds what it
needs (its token, API version, request helpers) on top of `DevServer`.

The binary is $SYNCSTORE_DEVSERVER (a relative path is taken from the repository root), else the
SwiftPM debug build `.build/debug/syncstore-devserver`; it is not built here (scripts/test.sh
builds it). Stdlib only: the chaos suite's host processes import it too.

A suite imports it after putting this directory on sys.path:
    sys.path.insert(0, str(REPO / "Tests" / "support"))
"""
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def binary_path():
    """The dev server binary: the only place the Python suites read SYNCSTORE_DEVSERVER."""
    path = Path(os.environ.get("SYNCSTORE_DEVSERVER") or REPO / ".build/debug/syncstore-devserver")
    if not path.is_absolute():
        path = REPO / path
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"syncstore-devserver is not built at {path}: build it (swift build) or set SYNCSTORE_DEVSERVER")
    return str(path)


class DevServer:
    """One running server: `url` is the first line it printed, `api` its REST root for `api_version`.

    `stderr`: a path the server's log goes to; by default a temporary file (an unread pipe could
    fill up and block the server), shown when the server does not start.
    """

    def __init__(self, *args, token, api_version="v62.0", tls=None, stderr=None, startup_timeout=120):
        self.token = token
        self.cmd = [binary_path(), "--host", "127.0.0.1", "--port", "0", "--token", token, *args]
        if tls:
            self.cmd += ["--tls-cert", tls[0], "--tls-key", tls[1]]
        self.stderr = open(stderr, "w+b") if stderr else tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=self.stderr)
        line = b""
        deadline = time.time() + startup_timeout
        while time.time() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        if not line.startswith(b"http"):
            self.proc.kill()
            self.proc.wait()
            self.stderr.seek(0)
            log = self.stderr.read().decode(errors="replace")
            self.stderr.close()
            raise RuntimeError(f"devserver did not print its URL: {' '.join(self.cmd)}\n{log}")
        self.url = line.decode().strip()
        self.api = f"{self.url}/services/data/{api_version}"

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()
