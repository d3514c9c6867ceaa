# Sourced by tests/gpu/run.sh and tests/gpu/carry_dry_run.sh: the build and
# run environment over a carry unpacked into $SIEVE_DEPS (tests/gpu/carry.py
# unpack). Nothing here reaches outside the prefix for a carried package:
#   carry_cmake_args   CMake looks only in the prefix (no system prefixes,
#                      no PATH-derived ones) and runs the carried pkgconf,
#                      whose search path is the prefix's .pc files alone;
#   with_debian_ucx    runs a command on the carried libraries (Debian's
#                      UCX 1.13, the one the build links against);
#   with_cuda_ucx      runs it with the wheel's UCX 1.22 (CUDA support)
#                      chosen at run time instead: same soname libucp.so.0,
#                      found first on LD_LIBRARY_PATH; its modules are found
#                      next to its libucs (UCX_MODULE_DIR must not point at
#                      Debian's 1.13 modules).
# The libraries are put on LD_LIBRARY_PATH only for the commands that need
# them, so CMake, nvcc and Python's own libraries never see them.
: "${SIEVE_DEPS:?SIEVE_DEPS must name the unpacked carry}"
deps_lib=$SIEVE_DEPS/usr/lib/x86_64-linux-gnu
# Some packages (libnl) install under /lib rather than /usr/lib.
deps_run=$deps_lib:$SIEVE_DEPS/lib/x86_64-linux-gnu
cuda_ucx_lib=$SIEVE_DEPS/ucx-cu13/libucx/lib
cuda_ucx_bundled=$SIEVE_DEPS/ucx-cu13/libucx_cu13.libs

command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
# With PATH-derived prefixes off (PATH holds /usr/bin, whose ../lib and
# ../include CMake would search), the tools are named here.
carry_cmake_args=(
  -DCMAKE_MAKE_PROGRAM="$(command -v ninja)"
  -DCMAKE_C_COMPILER="$(command -v cc)"
  -DCMAKE_CXX_COMPILER="$(command -v c++)"
  $(command -v nvcc >/dev/null && echo "-DCMAKE_CUDA_COMPILER=$(command -v nvcc)")
  -DCMAKE_PREFIX_PATH="$SIEVE_DEPS/usr"
  # The prefix's multiarch include directory, as the compiler's own
  # /usr/include/x86_64-linux-gnu (OpenSSL's configuration.h lives there).
  -DCMAKE_C_STANDARD_INCLUDE_DIRECTORIES="$SIEVE_DEPS/usr/include/x86_64-linux-gnu"
  -DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES="$SIEVE_DEPS/usr/include/x86_64-linux-gnu"
  -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF
  -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
  -DPKG_CONFIG_EXECUTABLE="$SIEVE_DEPS/bin/pkg-config"
  -DOPENSSL_ROOT_DIR="$SIEVE_DEPS/usr"
  -DOPENSSL_USE_STATIC_LIBS=OFF
  -DGTest_DIR="$deps_lib/cmake/GTest"
  -Ducx_DIR="$deps_lib/cmake/ucx"
  # The tests' Python (pytest, numpy) is not part of the GPU run.
  -DSIEVE_PYTHON=/nonexistent
)
export PKG_CONFIG_LIBDIR="$deps_lib/pkgconfig:$SIEVE_DEPS/usr/share/pkgconfig"
export PKG_CONFIG_PATH=""

with_debian_ucx() {
  LD_LIBRARY_PATH="$deps_run${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    UCX_MODULE_DIR="$deps_lib/ucx" "$@"
}

with_cuda_ucx() {
  env -u UCX_MODULE_DIR \
    LD_LIBRARY_PATH="$cuda_ucx_lib:$cuda_ucx_bundled:$deps_run${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$@"
}
