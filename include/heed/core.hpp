#pragma once
// The core layer: tensors, views, shapes, errors, Eigen adapters, random init, parallel-for,
// the executor hook (heed/core/eigen_executor.hpp, the Eigen::ThreadPool adapter, is included
// on its own).
#include "heed/core/assert.hpp"
#include "heed/core/cast.hpp"
#include "heed/core/eigen.hpp"
#include "heed/core/error.hpp"
#include "heed/core/executor.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/random.hpp"
#include "heed/core/scalar.hpp"
#include "heed/core/shape.hpp"
#include "heed/core/tensor.hpp"
#include "heed/core/tensor_view.hpp"
