#pragma once
// A deliberate violation for the ctest layering/detects_an_upward_include: core includes nn.
#include "heed/nn/linear.hpp"
