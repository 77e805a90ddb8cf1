#include "ops/few_bit_gelu.h"

namespace monet {
namespace {

constexpr int kIntervals = 16;
constexpr double kEdge = 3.0;  // the finite intervals cover [-kEdge, kEdge]

// The 15 interval boundaries, float64.
at::Tensor boundaries() {
  return at::linspace(-kEdge, kEdge, kIntervals - 1, at::TensorOptions().dtype(at::kDouble));
}

}  // namespace

at::Tensor few_bit_gelu_codes(const at::Tensor& x) {
  // bucketize: the number of boundaries below each element, 0-15.
  at::Tensor codes =
      at::bucketize(x.flatten(), boundaries().to(x.scalar_type()), /*out_int32=*/true)
          .to(at::kByte);
  if (codes.numel() % 2) codes = at::cat({codes, at::zeros({1}, codes.options())});
  const at::Tensor pairs = codes.view({-1, 2});
  return pairs.select(1, 0).bitwise_or(pairs.select(1, 1).bitwise_left_shift(4));
}

at::Tensor few_bit_gelu_backward(const at::Tensor& grad, const at::Tensor& codes,
                                 const std::string& approximate) {
  // The derivative's value on each interval: 0, the secant slopes between boundaries, 1.
  const at::Tensor b = boundaries();
  const at::Tensor g = at::gelu(b, approximate);
  const at::Tensor slopes = at::diff(g) / at::diff(b);
  const at::Tensor table =
      at::cat({at::zeros({1}, b.options()), slopes, at::ones({1}, b.options())})
          .to(grad.scalar_type());
  const at::Tensor low = codes.bitwise_and(15), high = codes.bitwise_right_shift(4);
  const at::Tensor index = at::stack({low, high}, 1).flatten().narrow(0, 0, grad.numel());
  return grad * table.index_select(0, index.to(at::kLong)).view(grad.sizes());
}

}  // namespace monet
