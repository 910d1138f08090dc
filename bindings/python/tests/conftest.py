"""Fixtures of the Python package tests: real store files under tmp_path and a real
syncstore-devserver process on 127.0.0.1 (helpers in package_support.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

import syncstore
from package_support import DevServer


@pytest.fixture
def server() -> Iterator[DevServer]:
    """A dev server seeded with 250 Contacts."""
    s = DevServer("--seed", "Contact=250")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def shared_server() -> Iterator[DevServer]:
    """A dev server shared by a module's tests (they must not depend on its data)."""
    s = DevServer("--seed", "Contact=20")
    yield s
    s.stop()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[syncstore.Store]:
    with syncstore.Store(tmp_path, {"storeName": "py"}) as s:
        yield s
