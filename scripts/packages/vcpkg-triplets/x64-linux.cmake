# vcpkg's x64-linux triplet (triplets/x64-linux.cmake in microsoft/vcpkg), for the offline proof
# in scripts/check-packages, with one change: no ELF rpath fixup. After every port vcpkg scans the
# package for ELF files with patchelf >= 0.19, which it downloads (Debian 12 has 0.14); heed and
# the Eigen and xsimd stand-ins install no ELF file, so the step has nothing to do here.
set(VCPKG_TARGET_ARCHITECTURE x64)
set(VCPKG_CRT_LINKAGE dynamic)
set(VCPKG_LIBRARY_LINKAGE static)
set(VCPKG_CMAKE_SYSTEM_NAME Linux)
set(VCPKG_FIXUP_ELF_RPATH OFF)
