#!/usr/bin/env python3
"""The ABI facts are written once, in include/syncstore.h; every copy a file format or a language
forces on us must agree with it.

The header defines SYNCSTORE_VERSION, SYNCSTORE_ABI_VERSION (the soname's suffix) and the status
codes. CMake, SwiftPM, the library, the CLI and the Node addon read them from the header; the
copies checked here are the ones that cannot: package metadata (package.json, pyproject.toml,
the Python package's __version__), the Python package's ABI_VERSION, the status tables users program against (Swift's ErrorCode,
Python's exception classes, the Node typings), the lists of status macro names, and every
"libsyncstore.so.N" written anywhere in the tree (code, scripts and prose). It also checks that
the header documents every sync target type the engine accepts.

Usage: check_abi_facts.py REPO            check (exit 1 with every disagreement)
       check_abi_facts.py REPO --write    rewrite the version and ABI copies from the header
"""

import ast
import json
import re
import sys
from pathlib import Path

# Directories never scanned for soname mentions: build output, dependencies, VCS data.
SKIP_DIRS = {".git", ".build", "node_modules", "__pycache__", ".venv", ".pytest_cache", ".mypy_cache"}
TEXT_SUFFIXES = {".c", ".h", ".swift", ".py", ".js", ".ts", ".json", ".toml", ".md", ".sh", ".txt",
                 ".cmake", ".in", ".map", ".yml", ".yaml", ".cfg", ""}


class Facts:
    def __init__(self, header_text):
        self.version = self.define(header_text, r'"(\d+\.\d+\.\d+)"', "SYNCSTORE_VERSION")
        self.abi = int(self.define(header_text, r"(\d+)", "SYNCSTORE_ABI_VERSION"))
        self.soname = f"libsyncstore.so.{self.abi}"
        # SYNCSTORE_OK and SYNCSTORE_ERR_* : name -> number.
        self.statuses = {m.group(1): int(m.group(2)) for m in
                         re.finditer(r"^#define (SYNCSTORE_(?:OK|ERR_\w+)) (\d+)\s*$", header_text, re.M)}
        if "SYNCSTORE_OK" not in self.statuses or len(self.statuses) < 2:
            raise SystemExit("include/syncstore.h: no SYNCSTORE_OK / SYNCSTORE_ERR_* codes found")
        # Errors only, by the name without the prefix: NOT_FOUND -> 2.
        self.errors = {k[len("SYNCSTORE_ERR_"):]: v for k, v in self.statuses.items() if k != "SYNCSTORE_OK"}

    @staticmethod
    def define(text, value_pattern, name):
        m = re.search(rf"^#define {name} {value_pattern}\s*$", text, re.M)
        if not m:
            raise SystemExit(f"include/syncstore.h defines no {name}")
        return m.group(1)


def compare_names(problems, where, found, expected):
    """found/expected: sets of names."""
    if set(expected) - set(found):
        problems.append(f"{where}: misses {', '.join(sorted(set(expected) - set(found)))} (the header's codes)")
    if set(found) - set(expected):
        problems.append(f"{where}: has {', '.join(sorted(set(found) - set(expected)))}, which the header does not define")


def compare(problems, where, found, expected):
    """found/expected: dicts name -> number. Reports what is missing, extra or different."""
    for name in sorted(set(expected) - set(found)):
        problems.append(f"{where}: no {name} (the header has {name} = {expected[name]})")
    for name in sorted(set(found) - set(expected)):
        problems.append(f"{where}: {name} = {found[name]}, which the header does not define")
    for name in sorted(set(found) & set(expected)):
        if found[name] != expected[name]:
            problems.append(f"{where}: {name} = {found[name]}, the header says {expected[name]}")


# ---- the copies ----

def package_json_version(repo):
    return json.loads((repo / "bindings/node/package.json").read_text())["version"]


PYPROJECT_VERSION = re.compile(r'^(version = ")([^"]*)(")', re.M)
PYTHON_ABI = re.compile(r"^(ABI_VERSION = )(\d+)$", re.M)
PYTHON_DUNDER_VERSION = re.compile(r'^(__version__ = ")([^"]*)(")', re.M)


def python_version(repo):
    m = PYPROJECT_VERSION.search((repo / "bindings/python/pyproject.toml").read_text())
    return m.group(2) if m else None


def python_abi(repo):
    m = PYTHON_ABI.search((repo / "bindings/python/syncstore/_lib.py").read_text())
    return int(m.group(2)) if m else None


def swift_error_code(repo):
    """ErrorCode's cases: raw values and `name`s, as header name -> number."""
    text = (repo / "Sources/SyncStoreCore/StoreError.swift").read_text()
    raw = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*case `?(\w+)`? = (\d+)\s*$", text, re.M)}
    names = dict(re.findall(r'case \.(\w+): return "(\w+)"', text))
    found = {}
    for case, number in raw.items():
        found[names.get(case, f"<ErrorCode.{case} has no name>")] = number
    return found


def python_error_classes(repo):
    """The exception classes: 'SYNCSTORE_ERR_X: ...' docstring and code_value, as X -> number."""
    tree = ast.parse((repo / "bindings/python/syncstore/errors.py").read_text())
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name == "SyncStoreError":
            continue
        doc = ast.get_docstring(node) or ""
        m = re.match(r"SYNCSTORE_ERR_(\w+):", doc)
        values = [n.value.value for n in node.body if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == "code_value" for t in n.targets)
                  and isinstance(n.value, ast.Constant)]
        if m and values:
            found[m.group(1)] = values[0]
        elif m or values:
            found[f"<class {node.name}: docstring and code_value disagree>"] = -1
    return found


def python_fallback_names(repo):
    tree = ast.parse((repo / "bindings/python/syncstore/errors.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_FALLBACK_NAMES" for t in node.targets):
            return {v: k for k, v in ast.literal_eval(node.value).items()}
    return {}


def node_typings_status(repo):
    text = (repo / "bindings/node/index.d.ts").read_text()
    m = re.search(r"const STATUS: Readonly<Record<([^>]*), number>>", text)
    return set(re.findall(r"'(\w+)'", m.group(1))) if m else set()


def node_addon_missing(repo):
    text = (repo / "bindings/node/lib/native.js").read_text()
    m = re.search(r"const ADDON_MISSING = \{ code: '(\w+)', status: (\d+) \}", text)
    return {m.group(1): int(m.group(2))} if m else {}


def macro_name_lists(repo):
    """Lists that spell every status macro (the Node addon's, the C test's): file -> set of names."""
    lists = {}
    addon = (repo / "bindings/node/src/addon.h").read_text()
    m = re.search(r"#define SYNCSTORE_STATUSES\(X\)((?:.*\\\n)*.*)", addon)
    lists["bindings/node/src/addon.h SYNCSTORE_STATUSES"] = set(re.findall(r"X\((SYNCSTORE_\w+)\)", m.group(1))) if m else set()
    test = Path(__file__).resolve().parent / "test_store_api.c"  # the C tests beside this script
    lists[f"{test.relative_to(repo) if test.is_relative_to(repo) else test} NAMED(...)"] = set(
        re.findall(r"NAMED\((SYNCSTORE_\w+)\)", test.read_text()))
    return lists


def target_types(repo):
    """The sync target types the engine accepts, read from the core's Swift sources (wherever the
    files live): sync down's factory switch, sync up's Mode enum and its parent_children test."""
    down, up = set(), set()
    for path in sorted((repo / "Sources/SyncStoreSync").rglob("*.swift")):
        text = path.read_text()
        down |= set(re.findall(r'case "(\w+)": return try \w+Target\(', text))
        if "struct SyncUpTarget" in text:
            m = re.search(r"enum Mode: String \{ case ([\w, ]+) \}", text)
            up |= {c.strip() for c in m.group(1).split(",")} if m else set()
        up |= set(re.findall(r'root\["type"\]\?\.string == "(\w+)"', text))
        down |= set(re.findall(r'root\["type"\]\?\.string == "(\w+)" \} // sync down and up', text))
    return down, up


def header_target_types(header_text, function):
    """The "type"s the comment above `int function(` documents."""
    end = header_text.index(f"int {function}(")
    start = header_text.rindex("/**", 0, end)
    comment = " ".join(re.sub(r"^\s*\*", " ", line) for line in header_text[start:end].splitlines())
    comment = " ".join(comment.split())
    return set(re.findall(r'"type": "(\w+)"', comment)) | set(re.findall(r'\| "(\w+)"', comment))


def soname_mentions(repo):
    """Every libsyncstore.so.N in the tree's text files: (path, line number, N)."""
    found = []
    stack = [repo]
    while stack:
        directory = stack.pop()
        for entry in sorted(directory.iterdir()):
            if entry.is_dir():
                # build trees (build/, .build-fuzz/, ...) hold copies made from the header
                if entry.name not in SKIP_DIRS and not entry.name.lstrip(".").startswith("build") and not entry.is_symlink():
                    stack.append(entry)
            elif entry.suffix in TEXT_SUFFIXES and entry.is_file() and entry.stat().st_size < 2_000_000:
                try:
                    text = entry.read_text()
                except (UnicodeDecodeError, OSError):
                    continue
                for number, line in enumerate(text.splitlines(), 1):
                    for m in re.finditer(r"libsyncstore\.so\.(\d+)", line):
                        found.append((entry.relative_to(repo), number, int(m.group(1))))
    return found


def check(repo, facts):
    problems = []
    if package_json_version(repo) != facts.version:
        problems.append(f"bindings/node/package.json: version {package_json_version(repo)}, the header says {facts.version}")
    if python_version(repo) != facts.version:
        problems.append(f"bindings/python/pyproject.toml: version {python_version(repo)}, the header says {facts.version}")
    m = PYTHON_DUNDER_VERSION.search((repo / "bindings/python/syncstore/__init__.py").read_text())
    if not m or m.group(2) != facts.version:
        problems.append(f"bindings/python/syncstore/__init__.py: __version__ {m.group(2) if m else 'missing'}, "
                        f"the header says {facts.version}")
    if python_abi(repo) != facts.abi:
        problems.append(f"bindings/python/syncstore/_lib.py: ABI_VERSION {python_abi(repo)}, the header says {facts.abi}")
    compare(problems, "Sources/SyncStoreCore/StoreError.swift ErrorCode", swift_error_code(repo), facts.errors)
    compare(problems, "bindings/python/syncstore/errors.py exception classes", python_error_classes(repo), facts.errors)
    fallback = python_fallback_names(repo)
    compare(problems, "bindings/python/syncstore/errors.py _FALLBACK_NAMES", fallback,
            {k: v for k, v in facts.statuses.items() if k in fallback})
    typings = node_typings_status(repo)
    short = {k.replace("SYNCSTORE_ERR_", "").replace("SYNCSTORE_", "") for k in facts.statuses}
    compare_names(problems, "bindings/node/index.d.ts STATUS", typings, short)
    missing = node_addon_missing(repo)
    if not missing:
        problems.append("bindings/node/lib/native.js: no ADDON_MISSING = { code: '...', status: N }")
    compare(problems, "bindings/node/lib/native.js ADDON_MISSING", missing, {k: v for k, v in facts.statuses.items() if k in missing})
    for where, names in macro_name_lists(repo).items():
        compare_names(problems, where, names, facts.statuses)
    header = (repo / "include/syncstore.h").read_text()
    down, up = target_types(repo)
    for kind, types, function in (("down", down, "syncstore_sync_down"), ("up", up, "syncstore_sync_up")):
        if not types:
            problems.append(f"no sync {kind} target types found in Sources/SyncStoreSync (update {Path(__file__).name})")
        undocumented = types - header_target_types(header, function)
        if undocumented:
            problems.append(f"include/syncstore.h: {function}'s comment does not document the sync {kind} "
                            f"target type(s) {', '.join(sorted(undocumented))} that the engine accepts")
    for path, line, number in soname_mentions(repo):
        if number != facts.abi:
            problems.append(f"{path}:{line}: libsyncstore.so.{number}, the header's SYNCSTORE_ABI_VERSION says {facts.soname}")
    return problems


def write(repo, facts):
    path = repo / "bindings/node/package.json"
    text = path.read_text()
    path.write_text(re.sub(r'^(  "version": ")[^"]*(")', rf"\g<1>{facts.version}\g<2>", text, count=1, flags=re.M))
    path = repo / "bindings/python/pyproject.toml"
    path.write_text(PYPROJECT_VERSION.sub(rf"\g<1>{facts.version}\g<3>", path.read_text(), count=1))
    path = repo / "bindings/python/syncstore/__init__.py"
    path.write_text(PYTHON_DUNDER_VERSION.sub(rf"\g<1>{facts.version}\g<3>", path.read_text(), count=1))
    path = repo / "bindings/python/syncstore/_lib.py"
    path.write_text(PYTHON_ABI.sub(rf"\g<1>{facts.abi}", path.read_text(), count=1))


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--write"):
        print("\n".join(__doc__.strip().splitlines()[-2:]))
        return 2
    repo = Path(argv[1]).resolve()
    facts = Facts((repo / "include/syncstore.h").read_text())
    if len(argv) == 3:
        write(repo, facts)
    problems = check(repo, facts)
    if problems:
        print(f"{len(problems)} disagreement(s) with include/syncstore.h (version {facts.version}, {facts.soname}, "
              f"{len(facts.statuses)} status codes):")
        print("\n".join("  " + p for p in problems))
        print(f"Fix them (the version and ABI copies: {Path(__file__).name} REPO --write).")
        return 1
    print(f"OK: version {facts.version}, {facts.soname} and {len(facts.statuses)} status codes agree everywhere")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
