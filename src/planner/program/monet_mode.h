// What the MONeT program may choose: the operator optimisations of a mode (the paper's
// ablation, Figure 4) and where recomputations may run. The program reads them; the
// pipeline (monet_planner.h) and the registry name them.
#pragma once

#include <string>

#include "graph/graph.h"
#include "ops/op_impl.h"

namespace monet {

/// Which operator optimisations the program may use (checkpointing is always on).
enum class MonetMode {
  kAll,           // "monet": every implementation
  kNoOp,          // "monet-noop": default implementations only (checkpointing alone)
  kConv,          // "monet-conv": + convolution algorithms
  kOutput,        // "monet-out": + output-activated backward passes
  kIntermediate,  // "monet-int": + intermediate-activated (1-bit masks, 8-bit argmax)
  kInplace,       // "monet-inplace": + in-place / out-of-place choice
};
/// "monet", "monet-noop", ...; throws std::invalid_argument for an unknown name.
MonetMode monet_mode_from_name(const std::string& name);
const char* monet_mode_name(MonetMode mode);

/// Whether `mode` lets the program choose forward implementation `f` (`is_default`: the
/// operator's default, always allowed) of node `n`; likewise for backward `b`.
bool mode_allows_forward(MonetMode mode, const Node& n, const ForwardImplInfo& f, bool is_default);
bool mode_allows_backward(MonetMode mode, const Node& n, const BackwardImplInfo& b,
                          bool is_default);

/// The default of MonetOptions' and MonetProgramOptions' exact_intermediate_min_fraction
/// (a fraction of the node's output bytes; see MonetProgramOptions).
inline constexpr double kExactIntermediateMinFraction = 0.25;

/// Where the program's recomputations may run.
enum class Recomputations {
  kOutOfPlace,  // every recomputation in a tensor of its own
  /// A ReLU or an add also in place, where its input is neither kept for the next stage
  /// nor read by the stage's backward (the paper's Appendix E): the program then expresses
  /// chain checkpointing's schedules. Its LP relaxation is faster on some models and slower
  /// on others, so it is not the default (docs/PLANNER.md, "Why the defaults").
  kInPlaceWherePossible,
};

}  // namespace monet
