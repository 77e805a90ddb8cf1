#include "planner/program/monet_mode.h"

#include <stdexcept>

namespace monet {
namespace {

struct ModeName {
  MonetMode mode;
  const char* name;
};
constexpr ModeName kModes[] = {{MonetMode::kAll, "monet"},
                               {MonetMode::kNoOp, "monet-noop"},
                               {MonetMode::kConv, "monet-conv"},
                               {MonetMode::kOutput, "monet-out"},
                               {MonetMode::kIntermediate, "monet-int"},
                               {MonetMode::kInplace, "monet-inplace"}};

bool intermediate_family(const Node& n) {
  return n.op == OpKind::kMaxPool || n.op == OpKind::kDropout;
}

}  // namespace

bool mode_allows_forward(MonetMode mode, const Node& n, const ForwardImplInfo& f, bool is_default) {
  if (f.gist_encoding) return false;  // data-dependent size or lossy: not MONeT's
  if (is_default || mode == MonetMode::kAll) return true;
  if (is_convolution(n.op)) return mode == MonetMode::kConv;
  if (f.emits_intermediate || intermediate_family(n)) return mode == MonetMode::kIntermediate;
  return mode == MonetMode::kInplace;  // the in-place / out-of-place alternative
}

bool mode_allows_backward(MonetMode mode, const Node& n, const BackwardImplInfo& b,
                          bool is_default) {
  if (b.gist_encoding) return false;
  if (is_default || mode == MonetMode::kAll) return true;
  if (is_convolution(n.op)) return mode == MonetMode::kConv;
  if (b.reads_output) return mode == MonetMode::kOutput;
  if (b.reads_intermediate || intermediate_family(n)) return mode == MonetMode::kIntermediate;
  return mode == MonetMode::kInplace;  // input-activated instead of an in-place default
}

MonetMode monet_mode_from_name(const std::string& name) {
  for (const auto& m : kModes)
    if (name == m.name) return m.mode;
  throw std::invalid_argument("unknown MONeT mode '" + name +
                              "' (known: monet, monet-noop, monet-conv, monet-out, monet-int, "
                              "monet-inplace)");
}

const char* monet_mode_name(MonetMode mode) {
  for (const auto& m : kModes)
    if (mode == m.mode) return m.name;
  return "?";
}

}  // namespace monet
