#include "graph/graph_builder.h"

#include "graph/aten_call.h"

#include <cmath>

namespace monet {

int64_t scale_channels(int64_t channels, double width, int64_t min_channels) {
  return std::max<int64_t>(min_channels, std::llround(double(channels) * width));
}

Graph GraphBuilder::finish() {
  copy_views_where_needed(graph_);
  graph_.validate();
  return std::move(graph_);
}

int GraphBuilder::input(const std::string& name, std::vector<int64_t> shape) {
  return graph_.add_input(name, std::move(shape), std::nullopt, ValueKind::kInput);
}

int GraphBuilder::class_target(const std::string& name, int64_t batch) {
  return graph_.add_input(name, {batch}, at::kLong, ValueKind::kTarget);
}

int GraphBuilder::mask_target(const std::string& name, std::vector<int64_t> shape) {
  return graph_.add_input(name, std::move(shape), std::nullopt, ValueKind::kTarget);
}

void GraphBuilder::weight_and_bias(const std::string& name, std::vector<int64_t> wshape,
                                   int64_t bias_len, const LayerInit& init,
                                   std::vector<int>* inputs) {
  const int64_t fan_in = weight_fan_in(wshape);
  inputs->push_back(graph_.add_parameter(name + ".weight", std::move(wshape), init.weight));
  if (bias_len > 0) {
    InitSpec b = init.bias;
    if (b.kind == InitKind::kUniformFanIn) b.fan_in = fan_in;
    inputs->push_back(graph_.add_parameter(name + ".bias", {bias_len}, b));
  }
}

int GraphBuilder::conv(int x, const std::string& name, const ConvSpec& spec) {
  const auto& xs = graph_.value(x).shape;
  const size_t spatial = xs.size() - 2;
  std::vector<int64_t> w = {spec.out_channels, xs[1] / spec.groups};
  for (size_t i = 0; i < spatial; ++i)
    w.push_back(spec.kernel.size() == 1 ? spec.kernel[0] : spec.kernel.at(i));
  std::vector<int> inputs = {x};
  weight_and_bias(name, w, spec.bias ? spec.out_channels : 0, spec.init, &inputs);
  OpAttrs a;
  a.kernel.assign(w.begin() + 2, w.end());
  a.stride.assign(spatial, spec.stride);
  a.padding.assign(spatial, spec.padding);
  a.dilation.assign(spatial, 1);
  a.groups = spec.groups;
  return graph_.add_node(OpKind::kConv, name, inputs, a);
}

int GraphBuilder::conv_transpose(int x, const std::string& name, int64_t out_channels,
                                 int64_t kernel, int64_t stride, LayerInit init) {
  const auto& xs = graph_.value(x).shape;
  const size_t spatial = xs.size() - 2;
  std::vector<int64_t> w = {xs[1], out_channels};
  for (size_t i = 0; i < spatial; ++i) w.push_back(kernel);
  std::vector<int> inputs = {x};
  weight_and_bias(name, w, out_channels, init, &inputs);
  OpAttrs a;
  a.kernel.assign(spatial, kernel);
  a.stride.assign(spatial, stride);
  a.padding.assign(spatial, 0);
  a.dilation.assign(spatial, 1);
  a.output_padding.assign(spatial, 0);
  return graph_.add_node(OpKind::kConvTranspose, name, inputs, a);
}

int GraphBuilder::batch_norm(int x, const std::string& name, double eps) {
  const int64_t c = channels(x);
  std::vector<int> inputs = {x};
  inputs.push_back(graph_.add_parameter(name + ".weight", {c}, {InitKind::kOnes}));
  inputs.push_back(graph_.add_parameter(name + ".bias", {c}, {InitKind::kZeros}));
  inputs.push_back(graph_.add_buffer(name + ".running_mean", {c}, {InitKind::kZeros}));
  inputs.push_back(graph_.add_buffer(name + ".running_var", {c}, {InitKind::kOnes}));
  OpAttrs a;
  a.eps = eps;
  return graph_.add_node(OpKind::kBatchNorm, name, inputs, a);
}

int GraphBuilder::batch_norm_without_affine(int x, const std::string& name, double eps) {
  const int64_t c = channels(x);
  std::vector<int> inputs = {x};
  inputs.push_back(graph_.add_buffer(name + ".running_mean", {c}, {InitKind::kZeros}));
  inputs.push_back(graph_.add_buffer(name + ".running_var", {c}, {InitKind::kOnes}));
  OpAttrs a;
  a.eps = eps;
  return graph_.add_node(OpKind::kBatchNorm, name, inputs, a);
}

int GraphBuilder::activation(OpKind op, int x, const std::string& name, bool inplace) {
  OpAttrs a;
  a.inplace = inplace;
  return graph_.add_node(op, name, {x}, a);
}

int GraphBuilder::max_pool(int x, const std::string& name, int64_t kernel, int64_t stride,
                           int64_t padding, bool ceil_mode) {
  const size_t spatial = graph_.value(x).shape.size() - 2;
  OpAttrs a;
  a.kernel.assign(spatial, kernel);
  a.stride.assign(spatial, stride);
  a.padding.assign(spatial, padding);
  a.ceil_mode = ceil_mode;
  return graph_.add_node(OpKind::kMaxPool, name, {x}, a);
}

int GraphBuilder::avg_pool(int x, const std::string& name, int64_t kernel, int64_t stride) {
  const size_t spatial = graph_.value(x).shape.size() - 2;
  OpAttrs a;
  a.kernel.assign(spatial, kernel);
  a.stride.assign(spatial, stride);
  a.padding.assign(spatial, 0);
  return graph_.add_node(OpKind::kAvgPool, name, {x}, a);
}

int GraphBuilder::adaptive_avg_pool(int x, const std::string& name,
                                    std::vector<int64_t> output_size) {
  OpAttrs a;
  a.output_size = std::move(output_size);
  return graph_.add_node(OpKind::kAdaptiveAvgPool, name, {x}, a);
}

int GraphBuilder::add(int a, int b, const std::string& name, bool inplace) {
  OpAttrs attrs;
  attrs.inplace = inplace;
  return graph_.add_node(OpKind::kAdd, name, {a, b}, attrs);
}

int GraphBuilder::mul(int a, int b, const std::string& name) {
  return graph_.add_node(OpKind::kMul, name, {a, b});
}

int GraphBuilder::cat(const std::vector<int>& xs, const std::string& name, int64_t dim) {
  OpAttrs a;
  a.dim = dim;
  return graph_.add_node(OpKind::kCat, name, xs, a);
}

int GraphBuilder::slice(int x, const std::string& name, int64_t dim, int64_t start,
                        int64_t length) {
  OpAttrs a;
  a.dim = dim;
  a.start = start;
  a.length = length;
  return graph_.add_node(OpKind::kSlice, name, {x}, a);
}

int GraphBuilder::channel_shuffle(int x, const std::string& name, int64_t groups) {
  OpAttrs a;
  a.groups = groups;
  return graph_.add_node(OpKind::kChannelShuffle, name, {x}, a);
}

int GraphBuilder::flatten(int x, const std::string& name, int64_t start_dim) {
  OpAttrs a;
  a.dim = start_dim;
  return graph_.add_node(OpKind::kFlatten, name, {x}, a);
}

int GraphBuilder::linear(int x, const std::string& name, int64_t out_features, LayerInit init) {
  const int64_t in_features = graph_.value(x).shape.back();
  std::vector<int> inputs = {x};
  weight_and_bias(name, {out_features, in_features}, out_features, init, &inputs);
  return graph_.add_node(OpKind::kLinear, name, inputs);
}

int GraphBuilder::dropout(int x, const std::string& name, double p, DropoutShape shape) {
  OpAttrs a;
  a.p = p;
  a.dropout_shape = shape;
  return graph_.add_node(OpKind::kDropout, name, {x}, a);
}

int GraphBuilder::cross_entropy(int logits, int target, const std::string& name) {
  return graph_.add_node(OpKind::kCrossEntropyLoss, name, {logits, target});
}

int GraphBuilder::bce_with_logits(int logits, int target, const std::string& name) {
  return graph_.add_node(OpKind::kBCEWithLogitsLoss, name, {logits, target});
}

}  // namespace monet
