"""The README's first hour, verbatim, on a fresh clone.

Every code block of README.md preceded by a line ``<!-- first-hour: NAME -->`` is run as written,
with ``bash -e -o pipefail``, in README order, each in its own shell, from the root of one fresh
``git clone`` of this checkout's HEAD (so uncommitted changes and ignored build directories do not
leak in: commit before running it). ``<!-- first-hour: NAME slow -->`` marks a block too slow for
CI (minutes of compiling nothing else reuses): it runs only with ``SYNCSTORE_FIRST_HOUR=all``.
``<!-- first-hour: NAME uses-cli -->`` marks a block that runs the debug ``syncstore-cli`` the CLI
quick start builds (``.build/debug``; the Datasync and two-phase examples, against the dev server
it serves): with ``SYNCSTORE_FIRST_HOUR=all`` the clone's own build, the quick start's block having
made it; otherwise this checkout's debug build (``$SYNCSTORE_CLI``, which ``scripts/test.sh`` builds
first), linked into the clone for the block only, so that CI runs them in seconds. Without either
the block is skipped, saying why.

Every code block of README.md, marked or not, is also checked without running anything: each
fence is closed (a block left open swallows the prose and headings after it) and each ``json``
block parses, since readers copy them into files.

The blocks run as a new user would run them: ``HOME`` is an empty directory (so ``~/.local`` and
the default store root are the test's own), no ``SYNCSTORE_*``, virtualenv, Python, Node or
loader variables, and a ``PATH`` without this checkout. Only the download caches of SwiftPM (its
package repositories) and pip are shared with the real home, to spare the network.
A background process a block starts is killed with its process group when the block ends. Each
block's time is printed (``pytest -s`` shows it live); the clone is removed at the end
(``SYNCSTORE_FIRST_HOUR_KEEP=1`` keeps it).

Run: ``.venv/bin/python -m pytest -q Tests/readme`` (``scripts/test.sh`` does).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MARKER = re.compile(r"<!--\s*first-hour:(.*?)-->")  # alone on its line (prose may quote it)
FENCE = re.compile(r"(`{3,})([\w-]*)\s*$")
BLOCK_TIMEOUT_S = 40 * 60
FLAGS = {"slow", "uses-cli"}
DOWNLOAD_CACHES = (".cache/org.swift.swiftpm", ".cache/pip")  # SwiftPM's package repositories, pip's downloads


@dataclass
class Block:
    name: str
    flags: List[str]
    language: str
    code: str
    line: int  # of the marker, 1-based


def parse(text: str) -> List[Block]:
    """The marked blocks of a README, in order. A marker must name the block (a word, then known
    flags) and be followed directly by a fenced code block; names are unique."""
    lines = text.split("\n")
    blocks: List[Block] = []
    for i, line in enumerate(lines):
        mark = MARKER.fullmatch(line.strip())
        if not mark:
            continue
        words = mark.group(1).split()
        where = f"README.md:{i + 1}"
        if not words or not re.fullmatch(r"[\w-]+", words[0]) or set(words[1:]) - FLAGS:
            raise ValueError(f"{where}: a marker is <!-- first-hour: NAME [{' '.join(sorted(FLAGS))}] -->, "
                             f"not {line.strip()!r}")
        fence = FENCE.fullmatch(lines[i + 1]) if i + 1 < len(lines) else None
        if fence is None:
            raise ValueError(f"{where}: the first-hour marker {words[0]!r} must be followed directly by a "
                             "``` code block")
        end = next((j for j in range(i + 2, len(lines)) if lines[j].strip() == fence.group(1)), None)
        if end is None:
            raise ValueError(f"{where}: the code block of {words[0]!r} is not closed")
        if any(b.name == words[0] for b in blocks):
            raise ValueError(f"{where}: a second first-hour block named {words[0]!r}")
        blocks.append(Block(words[0], words[1:], fence.group(2), "\n".join(lines[i + 2:end]) + "\n", i + 1))
    return blocks


@dataclass
class Fenced:
    language: str
    code: str
    line: int  # of the opening fence, 1-based
    closed: bool
    inner_fences: List[int] = field(default_factory=list)  # lines inside that open a fence with a language


OPENING = re.compile(r" {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*")


def fenced_blocks(text: str) -> List[Fenced]:
    """Every fenced code block of a Markdown text, as CommonMark pairs fences: a block ends at a
    line of only the same character, at least as many of it. A line inside a block that would
    close it but for a language (```json in a ``` block) is the block's text, so it is noted: a
    block before it was left open."""
    lines = text.split("\n")
    blocks: List[Fenced] = []
    i = 0
    while i < len(lines):
        opening = OPENING.fullmatch(lines[i])
        if not opening:
            i += 1
            continue
        fence, language = opening.group(1), opening.group(2)
        closing = re.compile(rf" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*")
        end = next((j for j in range(i + 1, len(lines)) if closing.fullmatch(lines[j])), None)
        body = lines[i + 1:end if end is not None else len(lines)]
        inner = [i + 2 + k for k, line in enumerate(body) if (o := OPENING.fullmatch(line)) and o.group(2)
                 and o.group(1)[0] == fence[0] and len(o.group(1)) >= len(fence)]
        blocks.append(Fenced(language, "\n".join(body) + "\n", i + 1, end is not None, inner))
        i = (end if end is not None else len(lines)) + 1
    return blocks


BLOCKS = parse(README.read_text())
RUN_ALL = os.environ.get("SYNCSTORE_FIRST_HOUR") == "all"
CHECKOUT_CLI = Path(os.environ.get("SYNCSTORE_CLI") or REPO / ".build/debug/syncstore-cli")


def fence_problems(text: str) -> List[str]:
    problems = []
    for block in fenced_blocks(text):
        if not block.closed:
            problems.append(f"README.md:{block.line}: this ```{block.language} block is never closed")
        for line in block.inner_fences:
            problems.append(f"README.md:{line}: a fence with a language inside the ```{block.language} block of "
                            f"line {block.line}: that block (or one before it) is not closed where it should be")
    return problems


def json_problems(text: str) -> List[str]:
    problems = []
    for block in fenced_blocks(text):
        if block.language == "json":
            try:
                json.loads(block.code)
            except ValueError as error:
                problems.append(f"README.md:{block.line}: this json block does not parse: {error}")
    return problems


def test_every_code_block_is_closed() -> None:
    problems = fence_problems(README.read_text())
    assert not problems, "\n".join(problems)


def test_every_json_block_parses() -> None:
    text = README.read_text()
    assert any(b.language == "json" for b in fenced_blocks(text)), "README.md has no json block: is the parser right?"
    problems = json_problems(text)
    assert not problems, "\n".join(problems)


def test_block_checks_find_what_they_are_for() -> None:
    good = "```sh\necho '```'\n```\n\n````md\n```json\n{}\n```\n````\n```json\n{\"a\": [1]}\n```\n"
    assert [(b.language, b.line, b.closed) for b in fenced_blocks(good)] == [("sh", 1, True), ("md", 5, True),
                                                                            ("json", 10, True)]
    assert fence_problems(good) == [] and json_problems(good) == []
    # A block left open: the next block's opening fence is inside it, and the json is cut wrong.
    left_open = "```sh\nserve &\n### Heading\n```json\n{\"a\": 1}\n```\n\n```json\n{\"b\":\n```\n"
    assert any("line 1" in p for p in fence_problems(left_open))
    assert len(json_problems(left_open)) == 1
    assert fence_problems("text\n```sh\necho\n") == ["README.md:2: this ```sh block is never closed"]
    assert json_problems('```json\n{"syncs": [1]}\n   "x": 2}]}\n```\n') != []


def test_markers_name_blocks_the_readme_has() -> None:
    names = [b.name for b in BLOCKS]
    for required in ("c", "python", "node", "datasync", "twophase"):
        assert required in names, f"README.md has no <!-- first-hour: {required} --> block"
    for block in BLOCKS:
        assert block.language in ("sh", "bash", "shell"), f"README.md:{block.line}: {block.name} is not a shell block"


def test_parse_refuses_markers_it_would_silently_skip() -> None:
    good = ("<!-- first-hour: one -->\n```sh\necho 1\n```\nprose quoting `<!-- first-hour: NAME -->`\n"
            "<!-- first-hour: two slow -->\n````bash\necho 2\n````\n<!-- first-hour: three uses-cli -->\n```sh\n```\n")
    assert [(b.name, b.flags, b.code) for b in parse(good)] == [("one", [], "echo 1\n"), ("two", ["slow"], "echo 2\n"),
                                                                ("three", ["uses-cli"], "\n")]
    for bad in ("<!-- first-hour: one -->\ntext\n```sh\necho\n```\n",        # not followed by the block
                "<!-- first-hour: one fast -->\n```sh\necho\n```\n",          # unknown flag
                "<!-- first-hour: -->\n```sh\necho\n```\n",                   # no name
                "<!-- first-hour: one -->\n```sh\necho\n",                    # not closed
                "<!-- first-hour: a -->\n```sh\n```\n<!-- first-hour: a -->\n```sh\n```\n"):  # twice
        with pytest.raises(ValueError):
            parse(bad)


@dataclass
class Clone:
    root: Path
    env: Dict[str, str]
    failed: Optional[str] = None
    times: Dict[str, float] = field(default_factory=dict)


def user_environment(home: Path) -> Dict[str, str]:
    """The environment of a new user: no variables of ours, a PATH without this checkout."""
    dropped = ("SYNCSTORE_", "VIRTUAL_ENV", "PYTHON", "NODE_", "LD_LIBRARY_PATH", "LD_PRELOAD", "PKG_CONFIG_PATH",
               "CMAKE_", "PIP_", "SWIFTPM_", "CC", "CFLAGS", "LDFLAGS", "TMPDIR", "OLDPWD", "PWD")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not Path(p).resolve().is_relative_to(REPO))
    env["HOME"] = str(home)
    return env


@pytest.fixture(scope="module")
def clone() -> Iterator[Clone]:
    base = Path(tempfile.mkdtemp(prefix="syncstore-first-hour-"))
    root, home = base / "SyncStore", base / "home"
    home.mkdir()
    # Download caches only: a compiler's caches record their own path and refuse another.
    for cache in DOWNLOAD_CACHES:
        if (Path.home() / cache).is_dir():
            (home / cache).parent.mkdir(parents=True, exist_ok=True)
            (home / cache).symlink_to(Path.home() / cache)
    started = time.monotonic()
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(root)], check=True)
    head = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h %s"], capture_output=True, text=True,
                          check=True).stdout.strip()
    print(f"\nfirst hour: fresh clone of {head} in {base} ({time.monotonic() - started:.1f} s)")
    state = Clone(root, user_environment(home))
    yield state
    print("first hour: " + ", ".join(f"{n} {t:.0f} s" for n, t in state.times.items()) +
          f"; total {sum(state.times.values()):.0f} s")
    if os.environ.get("SYNCSTORE_FIRST_HOUR_KEEP") == "1":
        print(f"first hour: kept {base}")
    else:
        started = time.monotonic()
        subprocess.run(["rm", "-rf", str(base)], check=False)  # SwiftPM's checkouts: many files, rm is faster
        print(f"first hour: clone removed ({time.monotonic() - started:.1f} s)")


def run_block(block: Block, clone: Clone) -> subprocess.CompletedProcess[str]:
    script = clone.root.parent / f"first-hour-{block.name}.sh"
    log = clone.root.parent / f"first-hour-{block.name}.log"
    script.write_text(block.code)
    # Output to a file, not a pipe: a background process the block starts keeps its stdout open.
    with log.open("w") as out:
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", str(script)], cwd=clone.root, env=clone.env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = -1
            out.write(f"\n(killed after {BLOCK_TIMEOUT_S} s)\n")
        finally:
            # What the block left running in the background (a server started with &) ends with it.
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            proc.wait()
    return subprocess.CompletedProcess(proc.args, code, log.read_text(errors="replace"), "")


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_first_hour_block(block: Block, clone: Clone) -> None:
    if "slow" in block.flags and not RUN_ALL:
        pytest.skip(f"{block.name} is marked slow (SYNCSTORE_FIRST_HOUR=all runs it)")
    if clone.failed:
        pytest.skip(f"an earlier block failed ({clone.failed})")
    linked: Optional[Path] = None
    if "uses-cli" in block.flags and not RUN_ALL:
        # The quick start's block, which builds the clone's CLI, did not run: this checkout's build stands in.
        if not CHECKOUT_CLI.is_file():
            pytest.skip(f"{block.name} runs the debug syncstore-cli: build it (swift build --product syncstore-cli, "
                        f"or scripts/test.sh readme) or run with SYNCSTORE_FIRST_HOUR=all ({CHECKOUT_CLI} is missing)")
        linked = clone.root / ".build/debug/syncstore-cli"
        if linked.exists() or linked.is_symlink():
            linked = None  # the clone has its own (an earlier block built it)
        else:
            linked.parent.mkdir(parents=True, exist_ok=True)
            linked.symlink_to(CHECKOUT_CLI)
            print(f"first hour: {block.name} runs this checkout's {CHECKOUT_CLI}")
    started = time.monotonic()
    try:
        result = run_block(block, clone)
    finally:
        if linked is not None:  # the clone is left as a reader has it
            linked.unlink()
            for folder in (linked.parent, linked.parent.parent):
                if not any(folder.iterdir()):
                    folder.rmdir()
    clone.times[block.name] = time.monotonic() - started
    print(f"first hour: {block.name} (README.md:{block.line}) {clone.times[block.name]:.1f} s, "
          f"exit {result.returncode}")
    if result.returncode != 0:
        clone.failed = block.name
        tail = "\n".join(result.stdout.splitlines()[-60:])
        pytest.fail(f"README.md:{block.line} block {block.name!r} failed with exit {result.returncode} on a fresh "
                    f"clone:\n{block.code}\n--- its output (last 60 lines) ---\n{tail}")
