# Conan 2 recipe for heed, a header-only library (https://docs.conan.io/2/). The version is
# read from include/heed/version.hpp, the one place it is written.
#   conan create . --build=missing              (with eigen and xsimd from a remote)
#   scripts/check-packages                     (offline: the system's Eigen and xsimd, see there)
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout

required_conan_version = ">=2.0"


class HeedConan(ConanFile):
    name = "heed"
    description = "Header-only C++20 tensors and attention that compute what PyTorch computes"
    license = "MIT"
    topics = ("attention", "transformer", "tensor", "header-only", "simd")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "include/*", "cmake/heedDispatch.cmake", "LICENSE"
    no_copy_source = True

    def set_version(self):
        header = load(self, os.path.join(self.recipe_folder, "include", "heed", "version.hpp"))
        parts = [re.search(rf"#define HEED_VERSION_{p} (\d+)", header).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        self.requires("eigen/3.4.0")
        # heed supports Debian's xsimd 8.1 and xsimd 13 and 14 (include/heed/simd/arch.hpp)
        self.requires("xsimd/[>=8.1 <15]")

    def package_id(self):
        self.info.clear()

    def validate(self):
        if self.settings.get_safe("compiler.cppstd"):
            check_min_cppstd(self, 20)

    def build(self):
        pass  # headers only

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", os.path.join(self.source_folder, "include"), os.path.join(self.package_folder, "include"))
        # what heed_dispatch's translation units include
        copy(self, "*.ipp", os.path.join(self.source_folder, "include"), os.path.join(self.package_folder, "include"))
        copy(self, "heedDispatch.cmake", os.path.join(self.source_folder, "cmake"),
             os.path.join(self.package_folder, "share", "cmake", "heed"))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        # the names `cmake --install` gives: find_package(heed), heed::heed, pkg-config heed
        self.cpp_info.set_property("cmake_file_name", "heed")
        self.cpp_info.set_property("cmake_target_name", "heed::heed")
        self.cpp_info.set_property("pkg_config_name", "heed")
        self.cpp_info.requires = ["eigen::eigen", "xsimd::xsimd"]
        if self.settings.os in ["Linux", "FreeBSD"]:
            self.cpp_info.system_libs = ["pthread"]  # heed's worker team is std::threads
        # heed_dispatch(<target>), as heedConfig.cmake gives it to find_package(heed) users:
        # CMakeDeps writes a config of its own and includes this module from it
        self.cpp_info.set_property("cmake_build_modules", [os.path.join("share", "cmake", "heed", "heedDispatch.cmake")])
