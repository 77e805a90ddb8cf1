#include "graph/parameter_init.h"

#include <torch/torch.h>

#include <cmath>

namespace monet {

int64_t weight_fan_in(at::IntArrayRef shape) {
  if (shape.size() < 2) return shape.empty() ? 1 : shape[0];
  int64_t fan = shape[1];
  for (size_t i = 2; i < shape.size(); ++i) fan *= shape[i];
  return fan;
}

at::Tensor materialize_parameter(const InitSpec& spec, at::IntArrayRef shape,
                                 at::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  auto t = at::empty(shape, at::TensorOptions().dtype(dtype));
  switch (spec.kind) {
    case InitKind::kZeros:
      return t.zero_();
    case InitKind::kOnes:
      return t.fill_(1);
    case InitKind::kKaimingNormalFanOut:
      return torch::nn::init::kaiming_normal_(t, 0.0, torch::kFanOut, torch::kReLU);
    case InitKind::kKaimingUniformDefault:
      return torch::nn::init::kaiming_uniform_(t, std::sqrt(5.0));
    case InitKind::kUniformFanIn: {
      const double bound = spec.fan_in > 0 ? 1.0 / std::sqrt(double(spec.fan_in)) : 0.0;
      return t.uniform_(-bound, bound);
    }
    case InitKind::kNormal:
      return t.normal_(0.0, spec.std);
    case InitKind::kTruncNormal:
      // Same construction as torch.nn.init.trunc_normal_ (inverse-CDF sampling).
      {
        const double a = -2.0, b = 2.0;
        auto norm_cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
        const double l = norm_cdf(a / spec.std), u = norm_cdf(b / spec.std);
        t.uniform_(2 * l - 1, 2 * u - 1);
        t.erfinv_();
        t.mul_(spec.std * std::sqrt(2.0));
        return t.clamp_(a, b);
      }
  }
  return t;
}

std::string init_name(InitKind kind) {
  switch (kind) {
    case InitKind::kZeros:
      return "zeros";
    case InitKind::kOnes:
      return "ones";
    case InitKind::kKaimingNormalFanOut:
      return "kaiming_normal_fan_out";
    case InitKind::kKaimingUniformDefault:
      return "kaiming_uniform_default";
    case InitKind::kUniformFanIn:
      return "uniform_fan_in";
    case InitKind::kNormal:
      return "normal";
    case InitKind::kTruncNormal:
      return "trunc_normal";
  }
  return "?";
}

}  // namespace monet
