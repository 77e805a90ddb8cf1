// PlanFile: a plan as a file (`monet plan -o`, PlannedModel::save_plan): the program of
// instructions one planner made for one model at one size, and that model. `monet show
// --plan`, `monet run` and `monet verify` read plans through it (monet/measurement.h runs
// them); monet/planning.h makes them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "monet/model_description.h"
#include "monet/monet.h"

namespace monet {

/// What a plan does with one operator of its model.
struct OperatorChoice {
  std::string forward;     // the implementation of its first forward ("" when it has none)
  int recomputations = 0;  // its forwards after the first
  std::string backward;    // the implementation of each part of its backward, "+"-joined
};

/// Counts over a plan's program.
struct PlanSummary {
  int instructions = 0;
  int recomputations = 0;  // forwards after the first backward
  int explicit_frees = 0;  // free instructions
  int lossy_forwards = 0;  // forwards with a lossy implementation (gradients differ slightly)
};

class PlanFile {
 public:
  /// Reads, parses and validates the plan at `path` and builds the graph of the model it
  /// names (no weights: the measurements load the model's own when they run it). Throws
  /// std::invalid_argument naming the file and the problem: unreadable, not JSON
  /// (truncated?), made for another model or shape, an invalid program.
  static PlanFile load(const std::string& path);
  /// Writes the plan to `path` atomically (a temporary file and a rename); throws
  /// std::invalid_argument when it cannot be written.
  void save(const std::string& path) const;

  const std::string& path() const;
  const std::string& planner() const;        // the planner that made it ("monet", "chen", ...)
  const std::string& model_name() const;     // a zoo name or the traced file's absolute path
  OptimizerUpdate optimizer_update() const;  // the step it was made for
  PlanSummary summary() const;
  ModelDescription model_description() const;
  /// What the plan does with each operator of model_description().operators.
  std::vector<OperatorChoice> operator_choices() const;

  struct Impl;

 private:
  friend struct ImplAccess;  // the library's (src/api/impl_access.h)
  std::shared_ptr<const Impl> impl_;
};

}  // namespace monet
