// Compiled by the ctest core/internal_headers_refuse_direct_inclusion, which expects it to FAIL
// with heed's message: a detail header included before any public heed header.
#include "heed/core/detail/splitmix64.hpp"

int main() {
  return 0;
}
