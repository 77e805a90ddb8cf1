// GraphBuilder: layer-level helpers (conv, batch norm, ...) that add the nodes, the
// parameters and the buffers of one PyTorch module at a time, naming parameters exactly
// as the module's state_dict would ("layer1.0.conv1.weight"), so weights can be moved
// between a zoo graph and its torchvision counterpart by name.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace monet {

/// How a convolution / linear layer initialises its weight and bias.
struct LayerInit {
  InitSpec weight{InitKind::kKaimingUniformDefault};
  /// kUniformFanIn takes the fan-in from the weight automatically.
  InitSpec bias{InitKind::kUniformFanIn};
};

/// nn.Conv2d / nn.Linear default initialisation.
inline LayerInit default_init() { return {}; }

/// torchvision's ResNet and MobileNetV2 convolutions: Kaiming normal (fan out), zero bias.
inline LayerInit kaiming_fan_out_init() {
  return {{InitKind::kKaimingNormalFanOut}, {InitKind::kZeros}};
}

struct ConvSpec {
  int64_t out_channels = 0;
  std::vector<int64_t> kernel;  // one entry per spatial dimension, or one for all
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t groups = 1;
  bool bias = true;
  LayerInit init;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string model_name) : graph_(std::move(model_name)) {}

  Graph& graph() { return graph_; }
  /// Validates and returns the finished graph.
  Graph finish();

  int input(const std::string& name, std::vector<int64_t> shape);
  int class_target(const std::string& name, int64_t batch);
  int mask_target(const std::string& name, std::vector<int64_t> shape);

  int conv(int x, const std::string& name, const ConvSpec& spec);
  int conv_transpose(int x, const std::string& name, int64_t out_channels, int64_t kernel,
                     int64_t stride, LayerInit init = {});
  int batch_norm(int x, const std::string& name, double eps = 1e-5);
  /// nn.BatchNorm(affine=False): running statistics, no weight or bias.
  int batch_norm_without_affine(int x, const std::string& name, double eps = 1e-5);
  /// Element-wise activation (ReLU, ReLU6, hardswish, ...), optionally in place on x
  /// (ReLU and ReLU6 only).
  int activation(OpKind op, int x, const std::string& name, bool inplace);
  int relu(int x, const std::string& name, bool inplace) {
    return activation(OpKind::kReLU, x, name, inplace);
  }
  int relu6(int x, const std::string& name, bool inplace) {
    return activation(OpKind::kReLU6, x, name, inplace);
  }
  int max_pool(int x, const std::string& name, int64_t kernel, int64_t stride, int64_t padding,
               bool ceil_mode = false);
  int avg_pool(int x, const std::string& name, int64_t kernel, int64_t stride);
  int adaptive_avg_pool(int x, const std::string& name, std::vector<int64_t> output_size);
  int add(int a, int b, const std::string& name, bool inplace);
  /// a * b, b broadcast to a's shape (squeeze-excitation scaling).
  int mul(int a, int b, const std::string& name);
  int cat(const std::vector<int>& xs, const std::string& name, int64_t dim = 1);
  int flatten(int x, const std::string& name, int64_t start_dim = 1);
  /// Entries [start, start + length) of dimension `dim` (one of torch.chunk's pieces).
  int slice(int x, const std::string& name, int64_t dim, int64_t start, int64_t length);
  int channel_shuffle(int x, const std::string& name, int64_t groups);
  int linear(int x, const std::string& name, int64_t out_features, LayerInit init = {});
  int dropout(int x, const std::string& name, double p,
              DropoutShape shape = DropoutShape::kElement);
  int cross_entropy(int logits, int target, const std::string& name = "loss");
  int bce_with_logits(int logits, int target, const std::string& name = "loss");

  /// Channel count (dimension 1) of a value.
  int64_t channels(int v) const { return graph_.value(v).shape.at(1); }

 private:
  /// Adds name.weight and, when bias_len > 0, name.bias; appends their ids to inputs.
  void weight_and_bias(const std::string& name, std::vector<int64_t> wshape, int64_t bias_len,
                       const LayerInit& init, std::vector<int>* inputs);
  Graph graph_;
};

/// Scales a channel count by a width multiplier, never below `min_channels`.
int64_t scale_channels(int64_t channels, double width, int64_t min_channels = 1);

}  // namespace monet
