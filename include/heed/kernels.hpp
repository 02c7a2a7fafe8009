#pragma once
// The kernels layer: softmax, masks, score policies and the tiled attention driver.
#include "heed/kernels/attention.hpp"
#include "heed/kernels/conv2d.hpp"
#include "heed/kernels/pooling.hpp"
#include "heed/kernels/mask.hpp"
#include "heed/kernels/score.hpp"
#include "heed/kernels/softmax.hpp"
