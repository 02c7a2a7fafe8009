#pragma once
// The I/O layer: safetensors (mapped), .npy, JSON, PNG and attention heatmaps.
#include "heed/io/heatmap.hpp"
#include "heed/io/json.hpp"
#include "heed/io/npy.hpp"
#include "heed/io/png.hpp"
#include "heed/io/safetensors.hpp"
