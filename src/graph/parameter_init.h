// InitSpec: how a parameter or buffer is initialised, mirroring the PyTorch init
// functions torchvision uses, and materialize_parameter() which applies it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace monet {

enum class InitKind {
  kZeros,
  kOnes,
  kKaimingNormalFanOut,    // nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
  kKaimingUniformDefault,  // nn.init.kaiming_uniform_(w, a=sqrt(5)): nn.Conv/nn.Linear default
  kUniformFanIn,           // U(-1/sqrt(fan_in), 1/sqrt(fan_in)): default bias of nn.Conv/Linear
  kNormal,                 // N(0, std)
  kTruncNormal,            // nn.init.trunc_normal_(w, 0, std, -2, 2)
};

struct InitSpec {
  InitKind kind = InitKind::kZeros;
  double std = 0.0;    // kNormal / kTruncNormal: standard deviation
  int64_t fan_in = 0;  // kUniformFanIn: fan-in of the weight the bias belongs to
};

/// A new tensor of `shape` and `dtype`, initialised per `spec` from the global ATen
/// generator (seed it with at::manual_seed for reproducibility).
at::Tensor materialize_parameter(const InitSpec& spec, at::IntArrayRef shape, at::ScalarType dtype);

/// PyTorch's fan-in for a weight tensor: size(1) * prod(size(2:)).
int64_t weight_fan_in(at::IntArrayRef shape);

std::string init_name(InitKind kind);

}  // namespace monet
