"""python3 -m sieve: the version, which libsieve.so was loaded, and the torch backend's
configuration (what init_process_group("sieve") would do in this environment)."""
import sys

from . import _lib, version


def main():
    v = version()
    print("sieve %d.%d.%d (libsieve SIEVE_VERSION_CODE %d)" % (v // 10000, v // 100 % 100,
                                                              v % 100, v))
    print("library: %s" % _lib.path)
    if _lib.missing:
        print("not exported by this libsieve: %s" % ", ".join(_lib.missing))
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch: not importable (the backend and the DDP hooks need it)")
        return 0
    from . import torch as sieve_torch
    print(sieve_torch.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
