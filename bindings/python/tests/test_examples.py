"""The examples (and the README snippets, which are copies of them) run as shown."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from package_support import PACKAGE_ROOT, TOKEN, DevServer

EXAMPLES = PACKAGE_ROOT / "examples"


def run_example(name: str, *args: str) -> str:
    """Runs an example with a temp directory of its own, which it must leave empty."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        out = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                             timeout=120, env=env)
        assert out.returncode == 0, out.stderr
        assert os.listdir(tmp) == [], f"{name} left {os.listdir(tmp)} in its temp directory"
    return out.stdout


def test_first_steps(tmp_path: Path) -> None:
    assert run_example("first_steps.py", str(tmp_path)).splitlines() == ["Ng 34", "error 2 SYNCSTORE_ERR_NOT_FOUND"]


@pytest.mark.parametrize("name", ["first_steps.py", "encrypted_store.py"])
def test_example_without_a_root_cleans_up(name: str) -> None:
    """Without a root argument the example works in a scratch directory and removes it."""
    assert run_example(name).splitlines()[0] in ("Ng 34", "wrong key: SYNCSTORE_ERR_AUTH")


def test_encrypted_store_example(tmp_path: Path) -> None:
    assert run_example("encrypted_store.py", str(tmp_path)).splitlines() == [
        "wrong key: SYNCSTORE_ERR_AUTH", "hybrid: True", "after change_key: 1 note", "plaintext again: True"]


def test_watch_example(tmp_path: Path) -> None:
    assert run_example("watch_example.py", str(tmp_path)).splitlines() == [
        "contacts inserted [1] by otherHandle", "rows 1 added 1", "rows 2 added 1", "callback heard True"]
    assert run_example("watch_example.py")  # in a scratch directory it removes


@pytest.mark.parametrize("name,expected", [
    ("sync_example.py", ["downloaded 20", "sync up DONE", "reSync DONE", "ghosts removed 0"]),
    ("async_example.py", ["down DONE 20", "reSync DONE ghosts removed 0"]),
    ("cordova_example.py", ["syncDown DONE", "entries 20 first page 5"]),
    ("hybrid_plugin.py", ["sync DONE 20 in smartstore", "entries 20 first page 5", "error SYNCSTORE_ERR_NOT_FOUND",
                          "ghosts removed 0"]),
])
def test_sync_examples(name: str, expected: list[str], shared_server: DevServer) -> None:
    lines = run_example(name, shared_server.url, TOKEN).splitlines()
    assert [line for line in lines if not line.startswith(("progress", "syncDown ", "syncUp "))
            or line.startswith("syncDown DONE") and name == "cordova_example.py"] == expected
    if name not in ("cordova_example.py", "hybrid_plugin.py"):
        assert any(line.startswith(("progress RUNNING", "syncDown RUNNING")) for line in lines)


@pytest.mark.parametrize("readme,minimum", [(PACKAGE_ROOT / "README.md", 4), (PACKAGE_ROOT.parents[1] / "README.md", 0)])
def test_readme_code_is_example_code(readme: Path, minimum: int) -> None:
    """Python code shown in the package README (and in the repository README, when it shows
    some) is a verbatim part of an example that test_first_steps / test_sync_examples run."""
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.S)
    assert len(blocks) >= minimum
    sources = [p.read_text() for p in EXAMPLES.glob("*.py")]
    for block in blocks:
        assert any(block.strip() in source for source in sources), block[:200]
