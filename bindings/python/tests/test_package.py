"""The installed package: importable anywhere without env vars, typed, every C function bound."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

import syncstore
from syncstore import _lib

from package_support import REPO, run_python


def header_functions() -> list[str]:
    text = (REPO / "include" / "syncstore.h").read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    names = re.findall(r"^[a-z][\w \*]*?\b(syncstore_\w+)\s*\(", text, flags=re.M)
    return sorted(set(names))


def test_imports_from_any_directory_without_env(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SYNCSTORE_LIB", "PYTHONPATH")}
    out = run_python("import syncstore; print(syncstore.library_path()); print(syncstore.version())",
                     env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    path, version = out.stdout.split()
    assert Path(path) == Path(syncstore.__file__).parent / _lib.LIBRARY_NAME
    assert "site-packages" in path, "the tests must run against the installed package"
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)


def test_package_is_typed_and_ships_the_library() -> None:
    here = Path(syncstore.__file__).parent
    assert (here / "py.typed").is_file()
    assert (here / _lib.LIBRARY_NAME).is_file()


def test_syncstore_lib_overrides_the_packaged_library(tmp_path: Path) -> None:
    bogus = tmp_path / "nothing.so"
    out = run_python("import syncstore", env=dict(os.environ, SYNCSTORE_LIB=str(bogus)), cwd=str(tmp_path))
    assert out.returncode != 0 and "nothing.so" in out.stderr and "ImportError" in out.stderr


def test_every_header_function_is_bound_and_used() -> None:
    declared = header_functions()
    assert len(declared) >= 40, declared
    assert sorted(_lib.SIGNATURES) == declared
    # Each one is called by the package's public code (not only declared).
    package = Path(syncstore.__file__).parent
    used: set[str] = set()
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.startswith("syncstore_"):
                used.add(node.attr)
            # lib()["syncstore_..."]: a function object of its own (the lookup path's).
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                    and str(node.slice.value).startswith("syncstore_"):
                used.add(str(node.slice.value))
    assert sorted(used & set(declared)) == declared, sorted(set(declared) - used)
    # Every signature binds in the loaded library.
    lib = _lib.lib()
    for name in declared:
        assert getattr(lib, name).argtypes is not None or name in ("syncstore_version", "syncstore_abi_version")


def test_version_abi_and_status_names() -> None:
    from importlib.metadata import version
    assert syncstore.abi_version() == syncstore.ABI_VERSION
    assert version("syncstore") == syncstore.version()  # pyproject.toml's copy of SYNCSTORE_VERSION
    assert syncstore.status_name(0) == "SYNCSTORE_OK"
    assert syncstore.status_name(2) == "SYNCSTORE_ERR_NOT_FOUND"


def test_library_text_reads_as_json_loads_reads_it() -> None:
    # _lib.load hands the library's text to json's scanner directly; what the scanner declines
    # (here, leading space or trailing text) goes through json.loads, which reads or refuses it.
    import ctypes
    import json
    for text in ['[{"a":"é\\u00e9","n":-1.5e300,"b":[true,null]}]', '"x"', "12", " [1]"]:
        buf = ctypes.create_string_buffer(text.encode("utf-8"))
        assert _lib.load(ctypes.addressof(buf)) == json.loads(text)
    bad = ctypes.create_string_buffer(b"{bad")
    with pytest.raises(json.JSONDecodeError):
        _lib.load(ctypes.addressof(bad))


def library_error_codes() -> list[int]:
    """The error codes the library names: 1 up to the first it calls UNKNOWN."""
    codes: list[int] = []
    while syncstore.status_name(len(codes) + 1) != "SYNCSTORE_ERR_UNKNOWN":
        codes.append(len(codes) + 1)
    return codes


@pytest.mark.parametrize("code", library_error_codes())
def test_an_exception_class_per_status_code(code: int) -> None:
    busy = syncstore.BusyError.code_value
    e = syncstore.error_for_code(code, "msg", retryable=code == busy)
    cls = type(e)
    assert cls is not syncstore.SyncStoreError and isinstance(e, syncstore.SyncStoreError), syncstore.status_name(code)
    assert (cls.__doc__ or "").startswith(f"{syncstore.status_name(code)}:"), cls
    assert e.code == code and e.name == syncstore.status_name(code) and e.retryable == (code == busy)
    assert str(e) == f"{e.name}: msg"


def test_every_public_name_has_a_docstring() -> None:
    import inspect

    from syncstore import aio, cordova, cursor, errors, mobilesync, plugin, smartstore, store, sync, targets
    missing = []
    for module in (syncstore, aio, cordova, cursor, errors, mobilesync, plugin, smartstore, store, sync, targets):
        assert module.__doc__, module.__name__
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                if not obj.__doc__:
                    missing.append(f"{module.__name__}.{name}")
                if inspect.isclass(obj):
                    for attr, member in vars(obj).items():
                        if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                            if not member.__doc__:
                                missing.append(f"{module.__name__}.{name}.{attr}")
    assert missing == []


def test_a_platform_wheel_builds_with_the_library_inside(tmp_path: Path) -> None:
    import subprocess
    import sys
    import zipfile

    from package_support import PACKAGE_ROOT
    out = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(PACKAGE_ROOT)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    wheels = list(tmp_path.glob("*.whl"))
    assert [w.name for w in wheels] == [f"syncstore-{syncstore.version()}-py3-none-linux_x86_64.whl"]
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert any(n.endswith(f"syncstore/{_lib.LIBRARY_NAME}") for n in names)
    assert any(n.endswith("syncstore/py.typed") for n in names)
