#pragma once
// The kernels layer: softmax, masks, score policies, the tiled attention driver, the GEMM's
// blocking and threads, batched products (bmm, baddbmm), conv2d and pooling.
#include "heed/kernels/attention.hpp"
#include "heed/kernels/bmm.hpp"
#include "heed/kernels/conv2d.hpp"
#include "heed/kernels/gemm.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/kernels/rotary.hpp"
#include "heed/kernels/score.hpp"
#include "heed/kernels/softmax.hpp"
#include "heed/kernels/sparse_masks.hpp"
