// The few-bit GELU backward (lossy, offered only with LossyOffer::kOffered):
// GELU's derivative replaced by a function that is constant on each of 16 intervals of
// the input, so the backward needs a 4-bit code per element instead of the input. The
// intervals: (-inf, -3], 14 of equal width up to 3, (3, inf); the value on each is the
// mean of the derivative there (the secant slope of GELU), 0 and 1 on the two tails.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace monet {

/// Bytes of the codes of `numel` elements: two a byte.
inline int64_t few_bit_gelu_bytes(int64_t numel) { return (numel + 1) / 2; }

/// Each element's interval (0-15), packed two a byte (uint8, few_bit_gelu_bytes).
at::Tensor few_bit_gelu_codes(const at::Tensor& x);

/// grad times the derivative's value on each element's interval, for GELU computed with
/// `approximate` ("none" or "tanh"); `codes` from few_bit_gelu_codes.
at::Tensor few_bit_gelu_backward(const at::Tensor& grad, const at::Tensor& codes,
                                 const std::string& approximate);

}  // namespace monet
