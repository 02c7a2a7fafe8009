// One instruction-set level of a program that carries several (docs/design.md, "Instruction-set
// levels, and run-time dispatch"): a translation unit compiled with the level's flags includes
// this file and nothing else, and so defines heed::simd::tables_<level>(), that level's kernel
// tables, for the choice made at run time (simd::attention_kernels with HEED_DISPATCH).
// CMake's heed_dispatch(<target>) writes these translation units; by hand, one per level:
//   x86-64:  -march=x86-64, -march=x86-64-v3, -march=x86-64-v4, -march=x86-64-v4 -mavx512bf16
//   AArch64: -march=armv8-a
// each a file holding `#include <heed/simd/dispatch_level.ipp>`, and HEED_DISPATCH defined for the
// whole program.
// Everything such a translation unit compiles is in the level's own namespace
// (simd/detail/level_namespace.hpp), so none of its code can stand in for another level's:
// ctest simd/dispatch_levels_own_their_symbols lists each level object's shared symbols.

#define HEED_DISPATCH_LEVEL_UNIT 1
#include "heed/simd/kernel_table.hpp"

const heed::simd::LevelTables* heed::simd::HEED_SIMD_LEVEL_TABLES() noexcept {
  return &heed::simd::HEED_SIMD_LEVEL_NAMESPACE::level_tables;
}
