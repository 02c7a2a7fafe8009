#pragma once
// The nn layer: modules that own parameters, load PyTorch state_dicts and call kernels.
#include "heed/nn/vision/cbam.hpp"
#include "heed/nn/vision/se_block.hpp"
#include "heed/nn/vision/spatial_attention.hpp"
#include "heed/nn/weights.hpp"
