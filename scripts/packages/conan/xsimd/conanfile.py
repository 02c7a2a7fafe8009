# Offline stand-in for ConanCenter's xsimd recipe (scripts/check-packages): packages the xsimd
# headers this machine has (Debian's libxsimd-dev, /usr/include/xsimd) under the names
# ConanCenter's recipe gives them (xsimd/<version>, find_package(xsimd), target xsimd).
import os
import re

from conan import ConanFile
from conan.tools.files import copy, load

INCLUDE = "/usr/include"


class SystemXsimdConan(ConanFile):
    name = "xsimd"
    package_type = "header-library"
    license = "BSD-3-Clause"
    description = "xsimd's headers as installed on this system (a local stand-in for ConanCenter's recipe)"

    def set_version(self):
        config = load(self, os.path.join(INCLUDE, "xsimd", "config", "xsimd_config.hpp"))
        parts = [re.search(rf"#define XSIMD_VERSION_{p} (\d+)", config).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def package_id(self):
        self.info.clear()

    def package(self):
        copy(self, "*", os.path.join(INCLUDE, "xsimd"), os.path.join(self.package_folder, "include", "xsimd"))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_file_name", "xsimd")
        self.cpp_info.set_property("cmake_target_name", "xsimd")
