// Built by the ctest kernels/mixed_scalar_types_do_not_compile, which expects the build to FAIL
// with attention's static_assert: bfloat16 queries against float keys and values.
#include "heed/heed.hpp"

int main() {
  const auto q = heed::cast<heed::bfloat16>(heed::randn<float>({1, 1, 4, 8}, 1));
  const auto k = heed::randn<float>({1, 1, 4, 8}, 2), v = heed::randn<float>({1, 1, 4, 8}, 3);
  return heed::attention(q, k, v).output.numel() > 0 ? 0 : 1;
}
