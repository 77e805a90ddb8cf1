// How the public API's loss kinds become a traced model's import options: the graph's
// loss operator, and where a cross-entropy finds the classes. Shared by the API and the
// CLI (which builds graphs from the same options).
#pragma once

#include <monet/monet.h>

#include <string>

#include "graph/model_config.h"
#include "graph/op_kind.h"

namespace monet {

/// The graph's loss operator for `kind`.
OpKind loss_op(LossKind kind);
/// How a traced model is trained on `output` (empty: its first) with `loss`.
ImportOptions import_options(const std::string& output, LossKind loss);

}  // namespace monet
