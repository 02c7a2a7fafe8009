# Settings for heed's own tests, benchmarks and examples; never applied to consumers.
option(HEED_WERROR "Treat warnings as errors in heed's own targets" OFF)
set(HEED_MARCH "" CACHE STRING "-march for heed's own targets (empty: the compiler's default)")
option(HEED_MARCH_VARIANTS "Also build the simd and kernel tests at x86-64, x86-64-v3, x86-64-v4 and scalar" OFF)

function(heed_developer_flags target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    # -Wno-sign-conversion: clang folds it into -Wconversion; heed_standalone_headers turns it
    # back on for the library's headers (docs/decisions.md).
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wconversion -Wno-sign-conversion
      -Wshadow -Wnon-virtual-dtor)
    if(HEED_WERROR)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
  # heed's own tests run at the compiler's default ISA on purpose (and in -march variants):
  # silence the baseline-ISA message that a user's build gets (simd/arch.hpp).
  target_compile_definitions(${target} PRIVATE HEED_ALLOW_BASELINE_ISA)
  if(HEED_MARCH)
    target_compile_options(${target} PRIVATE -march=${HEED_MARCH})
    # -march=native on an AVX-512 machine: the same gcc 12 false positives as the v4 variant below.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized -Wno-uninitialized)
    endif()
  endif()
endfunction()

# The compile options that make one -march variant of a test.
# gcc 12's AVX-512 intrinsics headers (_mm512_undefined_* used by xsimd 8.1 and Eigen) trip
# -Wmaybe-uninitialized and, at -O2, -Wuninitialized: both are silenced for that variant only.
function(heed_variant_flags target variant)
  if(variant STREQUAL "x86_64")
    target_compile_options(${target} PRIVATE -march=x86-64)
  elseif(variant STREQUAL "v3")
    target_compile_options(${target} PRIVATE -march=x86-64-v3)
  elseif(variant STREQUAL "v4" OR variant STREQUAL "bf16")
    target_compile_options(${target} PRIVATE -march=x86-64-v4)
    if(variant STREQUAL "bf16")  # AVX-512 BF16: the pair products of bfloat16 attention
      target_compile_options(${target} PRIVATE -mavx512bf16)
    endif()
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized -Wno-uninitialized)
    endif()
  elseif(variant STREQUAL "scalar")
    target_compile_definitions(${target} PRIVATE HEED_SIMD_SCALAR=1)
  endif()
endfunction()
