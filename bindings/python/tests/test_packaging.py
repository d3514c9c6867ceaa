"""The package installs as Python users expect and finds libsieve.so as before: from the tree
cmake --install writes (the package beside the library, found through _installed.py), and
from pip install ./bindings/python (the library from the loader's path); pyproject's version
is the library's."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import sieve

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, ".."))
LIB = os.environ.get("SIEVE_LIBRARY", sieve.library_path)
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(LIB)))
PROBE = "import sieve, sieve.async_comm; print(sieve.library_path)"


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("SIEVE_LIBRARY", "PYTHONPATH")}
    env.update(extra)
    return env


def test_pyproject_version_is_the_librarys():
    text = open(os.path.join(SRC, "pyproject.toml")).read()
    v = sieve.version()
    assert re.search(r'^version = "%d\.%d\.%d"' % (v // 10000, v // 100 % 100, v % 100), text,
                     re.M), "pyproject.toml version differs from libsieve's %d" % v


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "cmake_install.cmake")),
                    reason="SIEVE_LIBRARY is not in a CMake build tree")
def test_cmake_install_puts_the_package_beside_the_library(tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)], check=True,
                   capture_output=True)
    site = prefix / "lib" / "python3" / "dist-packages"
    assert (site / "sieve" / "torch" / "backend.py").exists()
    out = subprocess.run([sys.executable, "-c", PROBE], env=_env(PYTHONPATH=str(site)),
                         cwd=str(tmp_path), capture_output=True, text=True, check=True)
    loaded = out.stdout.strip()
    assert os.path.realpath(loaded).startswith(os.path.realpath(str(prefix))), loaded


def test_pip_install_finds_the_library_on_the_loader_path(tmp_path):
    src = tmp_path / "src"  # pip builds in the source folder: build a copy
    shutil.copytree(SRC, str(src), ignore=shutil.ignore_patterns("__pycache__", "tests"))
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
                        "--no-deps", "--no-index", "--target", str(target), str(src)],
                       capture_output=True, text=True)
    if r.returncode != 0 and "No module named pip" in r.stderr:
        pytest.skip("pip is not installed for %s" % sys.executable)
    assert r.returncode == 0, r.stderr
    assert (target / "sieve" / "torch" / "__init__.py").exists()
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=str(tmp_path), text=True,
                         env=_env(PYTHONPATH=str(target),
                                  LD_LIBRARY_PATH=os.path.dirname(os.path.abspath(LIB))),
                         capture_output=True, check=True)
    assert out.stdout.strip() == "libsieve.so.0", out.stdout


def test_import_does_not_import_torch():
    # NumPy-only programs (and every spawned rank) must not pay torch's import: seconds.
    probe = "import sys, numpy as np, sieve; sieve.buffers.view(np.zeros(3, np.float32)); " \
            "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=SRC)).stdout
    assert out.strip() == "False"
