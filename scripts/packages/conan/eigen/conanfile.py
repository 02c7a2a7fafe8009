# Offline stand-in for ConanCenter's eigen recipe (scripts/check-packages): packages the Eigen
# headers this machine has (Debian's libeigen3-dev, /usr/include/eigen3) under the names
# ConanCenter's recipe gives them (eigen/<version>, find_package(Eigen3), Eigen3::Eigen).
import os
import re

from conan import ConanFile
from conan.tools.files import copy, load

EIGEN = "/usr/include/eigen3"


class SystemEigenConan(ConanFile):
    name = "eigen"
    package_type = "header-library"
    license = "MPL-2.0"
    description = "Eigen's headers as installed on this system (a local stand-in for ConanCenter's recipe)"

    def set_version(self):
        macros = load(self, os.path.join(EIGEN, "Eigen", "src", "Core", "util", "Macros.h"))
        parts = [re.search(rf"#define EIGEN_{p}_VERSION (\d+)", macros).group(1) for p in ("WORLD", "MAJOR", "MINOR")]
        self.version = ".".join(parts)

    def package_id(self):
        self.info.clear()

    def package(self):
        for folder in ("Eigen", "unsupported"):
            copy(self, "*", os.path.join(EIGEN, folder), os.path.join(self.package_folder, "include", "eigen3", folder))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.includedirs = ["include/eigen3"]
        self.cpp_info.set_property("cmake_file_name", "Eigen3")
        self.cpp_info.set_property("cmake_target_name", "Eigen3::Eigen")
        self.cpp_info.set_property("pkg_config_name", "eigen3")
