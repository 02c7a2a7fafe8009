#pragma once
// The simd layer: batch aliases, xsimd version shims, a scalar fallback, vector primitives,
// the GEMM micro-kernel; cpu_info(), what the CPU can do and which kernels run.
#include "heed/simd/arch.hpp"
#include "heed/simd/attention_kernel.hpp"
#include "heed/simd/convert.hpp"
#include "heed/simd/cpu.hpp"
#include "heed/simd/gemm_kernel.hpp"
#include "heed/simd/vector_ops.hpp"
