"""Builds libhone.so (CMake target hone_c) and places it in the `hone` package.

Everything else is declared in pyproject.toml. The build is a plain CMake build in
build-python/ (tests and benchmarks off); CMAKE_ARGS adds configure arguments, and
HONE_LIBRARY names a prebuilt libhone.so to package instead.
"""
import os
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        library = os.environ.get("HONE_LIBRARY")
        if not library:
            build = os.path.join(ROOT, "build-python")
            configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                         "-DHONE_BUILD_TESTS=OFF", "-DHONE_BUILD_BENCH=OFF"]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            subprocess.check_call(configure + shlex.split(os.environ.get("CMAKE_ARGS", "")))
            subprocess.check_call(["cmake", "--build", build, "--target", "hone_c"])
            library = os.path.join(build, "lib", "libhone.so")
        target = os.path.join(self.build_lib, "hone")
        os.makedirs(target, exist_ok=True)
        shutil.copy2(library, os.path.join(target, "libhone.so"))


class BinaryDistribution(Distribution):
    """The wheel carries a native library: platform-specific, not pure Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
