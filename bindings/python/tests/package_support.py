"""Helpers of the Python package tests (bindings/python/tests): a real syncstore-devserver process
on 127.0.0.1 (the repository's shared fixture, Tests/support/devserver_process.py) and a fresh
interpreter runner (never mocks). A uniquely named module, so that the suite runs in one pytest
session with the other suites (each has its own conftest.py).

The package under test is the installed one (``pip install ./bindings/python``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Dict, Optional

REPO = Path(__file__).resolve().parents[3]
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
TOKEN = "py-package-token"
API = "v62.0"

sys.path.insert(0, str(REPO / "Tests" / "support"))
import devserver_process  # noqa: E402


class DevServer(devserver_process.DevServer):
    """A dev server process; ``request`` talks to its REST API like another client would."""

    def __init__(self, *args: str) -> None:
        super().__init__(*args, token=TOKEN, api_version=API)
        assert self.url.startswith("http://127.0.0.1:"), self.url
        self.remote = {"instanceUrl": self.url, "accessToken": TOKEN, "apiVersion": API, "retryBaseDelayMs": 10}

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.api}/{path}", data=data, method=method,
                                     headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as answer:
            text = answer.read().decode()
        return json.loads(text) if text else None

    def query(self, soql: str) -> Any:
        return self.request("GET", "query?q=" + urllib.parse.quote(soql))["records"]


def run_python(code: str, *args: str, timeout: float = 120, env: Optional[Dict[str, str]] = None,
               cwd: Optional[str] = None) -> "subprocess.CompletedProcess[str]":
    """Runs code in a fresh interpreter (the same venv), returning the completed process."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=cwd)
