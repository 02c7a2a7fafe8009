#pragma once
// heed: header-only C++20 tensors and attention. This header includes everything.
#include "heed/core.hpp"
#include "heed/io.hpp"
#include "heed/kernels.hpp"
#include "heed/nn.hpp"
#include "heed/simd.hpp"
#include "heed/version.hpp"
