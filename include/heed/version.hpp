#pragma once
// The one place the version is written; CMakeLists.txt parses these three lines.
#define HEED_VERSION_MAJOR 0
#define HEED_VERSION_MINOR 1
#define HEED_VERSION_PATCH 0

#define HEED_VERSION (HEED_VERSION_MAJOR * 10000 + HEED_VERSION_MINOR * 100 + HEED_VERSION_PATCH)
