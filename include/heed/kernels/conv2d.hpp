#pragma once
// 2-D convolution (cross-correlation, as torch.nn.functional.conv2d), NCHW, zero padding.
// At stride 1, a direct kernel, parallel over (batch, output channel): each output plane is
// accumulated in registers, a few rows × one vector of columns at a time, from the input planes
// copied once into zero-padded scratch (simd::conv2d_plane, through the kernel table), with no
// im2col buffer. Other strides run on heed's GEMM (kernels/detail/conv2d_gemm.hpp): the
// receptive fields of a chunk of output pixels gathered into columns (im2col) and multiplied by
// the filters as one matrix, so a ViT's patch embedding (kernel = stride = 16) is one GEMM.

#include <algorithm>
#include <string>

#include "heed/core/error.hpp"
#include "heed/core/parallel.hpp"
#include "heed/core/tensor.hpp"

#define HEED_INTERNAL_HEADER_ALLOWED
#include "heed/kernels/detail/conv2d_direct.hpp"
#include "heed/kernels/detail/conv2d_gemm.hpp"

namespace heed {

/// The options of heed::conv2d (torch.nn.functional.conv2d's stride, padding and dilation).
struct Conv2dOptions {
  index_t padding = 0;   ///< zeros added on every side
  index_t stride = 1;    ///< the step between output positions, in both directions
  index_t dilation = 1;  ///< the step between kernel taps, in both directions
  int num_threads = 0;   ///< 0: heed::num_threads()
};

/// torch.nn.functional.conv2d(x, w, bias, stride, padding, dilation) for x [B, Cin, H, W] and
/// w [Cout, Cin, kh, kw]; bias is empty or [Cout].
template <TensorLike X, TensorLike Wt>
[[nodiscard]] Tensor<scalar_of<X>, 4> conv2d(const X& x, const Wt& w, TensorView<const scalar_of<X>, 1> bias = {},
                                             const Conv2dOptions& options = {}) {
  using T = scalar_of<X>;
  static_assert(rank_of<X> == 4 && rank_of<Wt> == 4, "conv2d takes x [B, C, H, W] and w [Cout, Cin, kh, kw]");
  static_assert(std::is_same_v<scalar_of<Wt>, T>, "x and w must have one scalar type");
  static_assert(std::is_floating_point_v<T>, "conv2d takes float or double tensors (heed::cast 16-bit ones)");
  const auto xv = as_view(x);
  const auto wv = as_view(w);
  const auto fail = [&](const std::string& why) {
    throw ShapeError("heed::conv2d: " + why + " (x " + to_string(xv.shape()) + ", w " + to_string(wv.shape()) +
                     ", bias " + to_string(bias.shape()) + ", padding " + std::to_string(options.padding) +
                     ", stride " + std::to_string(options.stride) + ", dilation " + std::to_string(options.dilation) +
                     ")");
  };
  if (wv.size(1) != xv.size(1))
    fail("w expects " + std::to_string(wv.size(1)) + " input channels, x has " + std::to_string(xv.size(1)));
  if (!bias.empty() && bias.size(0) != wv.size(0)) fail("bias does not have one entry per output channel");
  if (options.padding < 0 || options.stride < 1 || options.dilation < 1)
    fail("padding must be >= 0, stride and dilation >= 1");
  constexpr index_t max_padding = index_t{1} << 40;  // far past any plane; keeps the sizes below in range
  if (options.padding > max_padding) fail("padding beyond 2^40");
  if (xv.size(2) == 0 || xv.size(3) == 0) fail("the input planes are empty (PyTorch refuses them too)");
  // A stride past the padded plane leaves one output row and column, as any such stride does:
  // cut there, so that the kernels' index arithmetic stays in range (found by fuzz_modules).
  const index_t stride = std::min(options.stride, std::max(xv.size(2), xv.size(3)) + 2 * options.padding + 1);
  if (options.dilation > (index_t{1} << 30)) fail("dilation beyond 2^30");
  // the kernel's reach: its taps dilation apart
  const auto reach = [&](index_t taps) { return taps == 0 ? 0 : options.dilation * (taps - 1) + 1; };
  const index_t kh = reach(wv.size(2)), kw = reach(wv.size(3));
  if (xv.size(2) + 2 * options.padding < kh || xv.size(3) + 2 * options.padding < kw)
    fail("the kernel is larger than the padded input");
  const index_t Ho = (xv.size(2) + 2 * options.padding - kh) / stride + 1;
  const index_t Wo = (xv.size(3) + 2 * options.padding - kw) / stride + 1;
  Tensor<T, 4> out({xv.size(0), wv.size(0), Ho, Wo});
  Tensor<T, 4> x_storage, w_storage;
  const auto xd = contiguous(xv, x_storage);
  const auto wd = contiguous(wv, w_storage);
  if (out.numel() == 0) return out;
  if (stride == 1 && options.dilation == 1)
    detail::conv2d_direct<T>(xd, wd, bias, out.view(), options.padding, stride, options.num_threads);
  else
    detail::conv2d_gemm<T>(xd, wd, bias, out.view(), options.padding, stride, options.dilation, options.num_threads);
  return out;
}

}  // namespace heed
