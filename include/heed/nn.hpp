#pragma once
// The nn layer: modules that own parameters, load PyTorch state_dicts and call kernels.
#include "heed/nn/activation.hpp"
#include "heed/nn/embedding.hpp"
#include "heed/nn/layer_norm.hpp"
#include "heed/nn/linear.hpp"
#include "heed/nn/multihead_attention.hpp"
#include "heed/nn/positional_encoding.hpp"
#include "heed/nn/transformer_encoder.hpp"
#include "heed/nn/transformer_encoder_layer.hpp"
#include "heed/nn/vision/cbam.hpp"
#include "heed/nn/vision/se_block.hpp"
#include "heed/nn/vision/spatial_attention.hpp"
#include "heed/nn/weights.hpp"
