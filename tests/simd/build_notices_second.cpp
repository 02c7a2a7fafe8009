// The second translation unit of tests/simd/build_notices.cpp: it asks for the same notices.
#include <heed/simd/cpu.hpp>

bool second_translation_unit_included_heed() {
  return heed::cpu_info().kernels == heed::simd::compiled_level;
}
