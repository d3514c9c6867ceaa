#!/usr/bin/env python3
"""The carry of the GPU run: what tests/gpu/run.sh needs beside the source tree.

A GPU machine lent for the run has CUDA, CMake, ninja and Python (with
PyTorch), but no package manager and no network. tests/gpu/fetch_carry.sh
fills tests/gpu/carry/ (ignored by git, at most 64 MiB) on a networked
Debian 12 machine: the Debian packages Sieve builds against (debs/) and a
CUDA-enabled UCX slimmed from PyPI's libucx-cu13 wheel (ucx-cu13.tar.xz).
This script needs only Python 3 (no dpkg, ar or xz on the GPU machine):

  carry.py slim-wheel WHEEL OUT.tar.xz   the wheel's run-time UCX (fetch time)
  carry.py unpack CARRY PREFIX           every .deb under PREFIX/, UCX under
                                         PREFIX/ucx-cu13/, paths relocated
  carry.py check-build BUILD PREFIX      nothing of the build came from /usr
"""
import io
import json
import lzma
import os
import re
import subprocess
import sys
import tarfile
import zipfile

ARCH = "x86_64-linux-gnu"
# What the build takes from the carried packages: a header or library of
# one of these found outside PREFIX means the carry is incomplete.
CARRIED_HEADERS = re.compile(
    r"^/usr/include/(x86_64-linux-gnu/)?(ucp|ucs|uct|ucm|hwloc|hwloc\.h|infiniband|gtest|"
    r"gmock|openssl|libnl3|numa\.h|numaif\.h)")
# (rdma/*.h, which verbs.h includes, are the kernel's headers: linux-libc-dev,
# part of every toolchain, not a carried package.)
CARRIED_LIBS = re.compile(
    r"/usr/lib/" + ARCH + r"/lib(ucp|ucs|uct|ucm|hwloc|ibverbs|rdmacm|gtest|gmock|crypto|ssl|"
    r"nl-3|nl-route-3|numa|udev)[._]")


def extract_all(tar, dest):
    # Packages are trusted and hold absolute symlinks (relinked afterwards).
    if hasattr(tarfile, "fully_trusted_filter"):
        tar.extractall(dest, filter="fully_trusted")
    else:
        tar.extractall(dest)


def read_ar(path):
    """The members of an ar archive (a .deb): name -> bytes."""
    members = {}
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise SystemExit(f"{path}: not an ar archive")
        while True:
            header = f.read(60)
            if len(header) < 60:
                return members
            name = header[:16].decode().strip().rstrip("/")
            size = int(header[48:58].decode().strip())
            members[name] = f.read(size)
            if size % 2:
                f.read(1)


def unpack_deb(path, prefix):
    members = read_ar(path)
    data = next((v for k, v in members.items() if k.startswith("data.tar")), None)
    if data is None:
        raise SystemExit(f"{path}: no data.tar member")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:  # gz and xz (bookworm's)
        extract_all(tar, prefix)


def relink_absolute(prefix):
    """Symlinks the packages make to /usr/... point into PREFIX instead."""
    for root, dirs, files in os.walk(prefix):
        for name in dirs + files:
            p = os.path.join(root, name)
            if os.path.islink(p):
                target = os.readlink(p)
                if target.startswith("/"):
                    os.unlink(p)
                    os.symlink(os.path.relpath(prefix + target, root), p)


def relocate_pc(path, prefix):
    """A .pc file's /usr paths (prefix=, libdir=, -I/usr, -L/usr) into PREFIX."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r"^([A-Za-z_]+)=/usr", lambda m: f"{m.group(1)}={prefix}/usr", text, flags=re.M)
    text = re.sub(r"(-[IL])/usr/", lambda m: f"{m.group(1)}{prefix}/usr/", text)
    with open(path, "w") as f:
        f.write(text)


def relocate(prefix):
    relink_absolute(prefix)
    for pcdir in (f"{prefix}/usr/lib/{ARCH}/pkgconfig", f"{prefix}/usr/share/pkgconfig"):
        if os.path.isdir(pcdir):
            for name in os.listdir(pcdir):
                if name.endswith(".pc"):
                    relocate_pc(os.path.join(pcdir, name), prefix)
    # Debian's UCX CMake package hard-codes prefix /usr (GoogleTest's is relative already).
    ucx_cmake = f"{prefix}/usr/lib/{ARCH}/cmake/ucx"
    for name in os.listdir(ucx_cmake) if os.path.isdir(ucx_cmake) else []:
        p = os.path.join(ucx_cmake, name)
        with open(p) as f:
            text = f.read()
        with open(p, "w") as f:
            f.write(text.replace('set(prefix "/usr")', f'set(prefix "{prefix}/usr")'))


def unpack(carry, prefix):
    debs = sorted(f for f in os.listdir(os.path.join(carry, "debs")) if f.endswith(".deb"))
    if not debs:
        raise SystemExit(f"no .deb in {carry}/debs: run tests/gpu/fetch_carry.sh first")
    os.makedirs(prefix, exist_ok=True)
    for deb in debs:
        unpack_deb(os.path.join(carry, "debs", deb), prefix)
    relocate(prefix)
    ucx = os.path.join(carry, "ucx-cu13.tar.xz")
    if os.path.exists(ucx):
        with tarfile.open(ucx) as tar:
            extract_all(tar, os.path.join(prefix, "ucx-cu13"))
    # pkg-config for CMake: Debian's pkgconf, run with its own library only
    # (LD_LIBRARY_PATH set for it alone, not for the whole run).
    wrapper = os.path.join(prefix, "bin", "pkg-config")
    os.makedirs(os.path.dirname(wrapper), exist_ok=True)
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n"
                f'LD_LIBRARY_PATH="{prefix}/usr/lib/{ARCH}" exec "{prefix}/usr/bin/pkgconf" "$@"\n')
    os.chmod(wrapper, 0o755)
    print(f"unpacked {len(debs)} packages{' and UCX (CUDA)' if os.path.exists(ucx) else ''} "
          f"into {prefix}")


# The wheel's files the run needs: the libraries (one copy each: zip has no
# symlinks, so the wheel stores .so, .so.0 and .so.0.0.0 alike), the modules
# (CUDA, CMA), headers, CMake/pkg-config files, ucx_info and the bundled
# libraries the modules link. Not: static archives, perftest, examples.
def wanted(name):
    if name.endswith(".a") or "perftest" in name or "/examples/" in name:
        return False
    return (name.startswith("libucx/lib/") or name.startswith("libucx/include/")
            or name == "libucx/bin/ucx_info" or name.startswith("libucx_cu13.libs/")
            or ".dist-info/" in name and name.endswith(("METADATA", "LICENSE")))


def slim_wheel(wheel, out):
    with zipfile.ZipFile(wheel) as z, tarfile.open(out, "w:xz",
                                                  preset=9 | lzma.PRESET_EXTREME) as tar:
        names = [n for n in z.namelist() if wanted(n) and not n.endswith("/")]
        full = set(n for n in names if re.search(r"\.so\.\d+\.\d+\.\d+$", n))
        for n in names:
            # libfoo.so and libfoo.so.0 become links to the one libfoo.so.0.0.0.
            real = next((f for f in full if f.startswith(n + ".")), None)
            info = tarfile.TarInfo(n)
            if real is not None and re.search(r"\.so(\.\d+)?$", n):
                info.type = tarfile.SYMTYPE
                info.linkname = os.path.basename(real)
                tar.addfile(info)
                continue
            data = z.read(n)
            info.size = len(data)
            info.mode = 0o755 if (".so" in n or "/bin/" in n) else 0o644
            tar.addfile(info, io.BytesIO(data))
    print(f"{out}: {os.path.getsize(out) / 2**20:.1f} MiB from {os.path.basename(wheel)}")


def check_build(build, prefix):
    """Every header the build read and every library it linked that the carry
    provides came from PREFIX, never from the system's /usr."""
    bad = []
    deps = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True,
                          check=True).stdout
    headers = {line.strip() for line in deps.splitlines() if line.startswith("    ")}
    bad += [h for h in sorted(headers) if CARRIED_HEADERS.match(h)]
    from_prefix = sum(1 for h in headers if h.startswith(prefix))
    with open(os.path.join(build, "build.ninja")) as f:
        ninja = f.read()
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        cache = f.read()
    commands = ""
    cc = os.path.join(build, "compile_commands.json")
    if os.path.exists(cc):
        commands = " ".join(c["command"] for c in json.load(open(cc)))
    for where, text in (("build.ninja", ninja), ("CMakeCache.txt", cache),
                        ("compile_commands.json", commands)):
        for m in set(re.findall(r"(?<![\w/.-])(/usr/(?:lib/" + ARCH + r"/[^\s;\"']+|include/[^\s;\"']+))",
                                text)):
            if CARRIED_LIBS.search(m) or CARRIED_HEADERS.match(m):
                bad.append(f"{m} ({where})")
        if "-I/usr/include" in text:
            bad.append(f"-I/usr/include ({where})")
    if bad:
        print("FAIL: the build used the system's copies of carried packages:")
        for b in bad:
            print("  " + b)
        return 1
    print(f"ok: {len(headers)} headers read, {from_prefix} of them from {prefix}; no carried "
          f"package's header or library came from /usr")
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "unpack":
        unpack(argv[2], os.path.abspath(argv[3]))
    elif len(argv) == 4 and argv[1] == "slim-wheel":
        slim_wheel(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "check-build":
        return check_build(argv[2], os.path.abspath(argv[3]))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
