# Cross-compiles heed's tests for 64-bit ARM (AArch64, NEON) with Debian's cross compiler and
# runs them through qemu-aarch64 (ctest prefixes every test executable with the emulator).
#   apt-get install g++-aarch64-linux-gnu qemu-user
#   cmake --workflow --preset aarch64          (or: bash scripts/test-aarch64)
# Eigen and xsimd are headers: the host's copies (/usr/include) serve the target too.
# GoogleTest is built for the target from Debian's sources in /usr/src/googletest
# (tests/CMakeLists.txt), never taken from the host's x86-64 libraries.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(HEED_AARCH64_MARCH "armv8-a" CACHE STRING "-march of the AArch64 build (armv8-a: NEON, every AArch64 CPU)")

find_program(HEED_AARCH64_CXX aarch64-linux-gnu-g++)
find_program(HEED_AARCH64_QEMU qemu-aarch64)
if(NOT EXISTS "${HEED_AARCH64_CXX}" OR NOT EXISTS "${HEED_AARCH64_QEMU}")
  # (the leading space keeps CMake from wrapping the message: one line to copy)
  message(FATAL_ERROR " heed: the AArch64 build needs Debian's cross compiler and qemu: apt-get install g++-aarch64-linux-gnu qemu-user")
endif()
set(CMAKE_CXX_COMPILER ${HEED_AARCH64_CXX})
set(CMAKE_CXX_FLAGS_INIT "-march=${HEED_AARCH64_MARCH}")
# -L: where qemu finds the target's dynamic loader and libraries (libstdc++, libgomp).
set(CMAKE_CROSSCOMPILING_EMULATOR ${HEED_AARCH64_QEMU} -L /usr/aarch64-linux-gnu)

include(${CMAKE_CURRENT_LIST_DIR}/heedCrossSysroot.cmake)
heed_cross_sysroot(/usr/aarch64-linux-gnu)
