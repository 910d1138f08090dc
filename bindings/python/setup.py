"""Build step of the syncstore package: puts libsyncstore.so.<ABI> inside the package.

The library is taken from $SYNCSTORE_LIB when set, else from the source tree's build/lib (made by
`cmake --build build`), else from the package directory (an sdist carries it); when none exists
and the source tree is at hand, the CMake build is run (SwiftPM release build of the library).
Wheels are tagged py3-none-<platform>: pure Python code with a native library beside it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
# The library's file name, from the package's ABI_VERSION (read from syncstore/_lib.py: setup.py
# runs before the package is importable).
_ABI = re.search(r"^ABI_VERSION = (\d+)$", (HERE / "syncstore" / "_lib.py").read_text(), re.M)
if not _ABI:
    raise SystemExit("syncstore/_lib.py defines no ABI_VERSION")
NAME = f"libsyncstore.so.{_ABI.group(1)}"
PACKAGED = HERE / "syncstore" / NAME


def say(message: str) -> None:
    """A progress line. pip shows a build's output with -v (and when it fails); by default only
    a spinner, which turns at each line."""
    print(f"syncstore: {message}", flush=True)


def find_library() -> Path:
    override = os.environ.get("SYNCSTORE_LIB")
    if override:
        path = Path(override)
        if not path.is_file():
            raise SystemExit(f"SYNCSTORE_LIB={override} does not exist")
        say(f"packaging {path} ($SYNCSTORE_LIB)")
        return path
    built = REPO / "build" / "lib" / NAME
    if built.is_file():
        say(f"packaging {built}")
        return built
    if PACKAGED.is_file():
        say(f"packaging {PACKAGED}")
        return PACKAGED
    if (REPO / "CMakeLists.txt").is_file() and (REPO / "include" / "syncstore.h").is_file():
        say(f"{NAME} is not built yet: building it with CMake in {REPO / 'build'} (a SwiftPM release build, "
            "several minutes the first time)")
        subprocess.run(["cmake", "-S", str(REPO), "-B", str(REPO / "build"), "-DCMAKE_BUILD_TYPE=Release"], check=True)
        subprocess.run(["cmake", "--build", str(REPO / "build"), "--target", "syncstore_swift", "-j2"], check=True)
        if built.is_file():
            say(f"built {built}; packaging it")
            return built
    raise SystemExit(f"{NAME} not found: build it (cmake --build build) or set SYNCSTORE_LIB")


class BuildPyWithLibrary(build_py):
    """build_py that also copies the shared library into the built package."""

    def run(self) -> None:
        super().run()
        source = find_library()
        target = Path(self.build_lib) / "syncstore" / NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.resolve() != target.resolve():
            shutil.copy2(source, target)


class SdistWithLibrary(sdist):
    """sdist that carries the built library, so a wheel can be built from it anywhere."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        shutil.copy2(find_library(), Path(base_dir) / "syncstore" / NAME)


class BinaryDistribution(Distribution):
    """The package holds a native library: platform wheels, installed into platlib."""

    def has_ext_modules(self) -> bool:
        return True


class PlatformWheel(bdist_wheel):
    """A platform wheel usable by any Python 3 (ctypes, no extension module)."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=BinaryDistribution, cmdclass={"build_py": BuildPyWithLibrary, "sdist": SdistWithLibrary, "bdist_wheel": PlatformWheel})
