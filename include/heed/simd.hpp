#pragma once
// The simd layer: batch aliases, xsimd version shims, a scalar fallback, vector primitives.
#include "heed/simd/arch.hpp"
#include "heed/simd/vector_ops.hpp"
