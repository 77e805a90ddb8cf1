// Plan: the single description of how to run one training iteration, an ordered
// program the executor runs and the simulator replays. Forward instructions before the
// first backward instruction form the forward pass; forward instructions after it are
// recomputations. Tensors are freed as soon as no later instruction reads them, or
// earlier by an explicit kFree.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/model_config.h"
#include "ops/op_impl.h"

namespace monet {

/// A malformed or mismatched plan; the message names the offending instruction.
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class InstrKind { kForward, kBackward, kFree };
/// Which tensor of a node an instruction frees.
enum class Slot { kOutput, kIntermediate };

struct Instruction {
  InstrKind kind = InstrKind::kForward;
  int node = -1;
  std::string impl;                        // kForward / kBackward: implementation name
  BackwardPart part = BackwardPart::kAll;  // kBackward
  Slot slot = Slot::kOutput;               // kFree
};

struct Plan {
  std::string graph_fingerprint;  // Graph::fingerprint() of the graph it was made for
  std::string planner;            // who made it ("storeall", "chen", "monet", ...)
  /// What to build the graph from when the plan is loaded on its own: a zoo model name
  /// and its configuration (empty model when the caller supplies the graph).
  std::string model;
  ModelConfig config;
  std::vector<Instruction> program;
};

/// "forward conv1 [default]"-style rendering for messages and listings.
std::string describe(const Graph& graph, const Instruction& instr);

nlohmann::json plan_to_json(const Graph& graph, const Plan& plan);
/// Reads only the model and configuration a plan file names (to build its graph).
void read_plan_model(const nlohmann::json& json, std::string* model, ModelConfig* config);
/// The optimizer update mode a plan file was made for ("optimizer_update"; absent:
/// after-backward). Build the graph with it before plan_from_json.
UpdateMode plan_update_mode(const nlohmann::json& json);
/// Parses and checks against `graph`: fingerprint, update mode, node names,
/// implementation names.
/// Throws PlanError naming the instruction at fault.
Plan plan_from_json(const Graph& graph, const nlohmann::json& json);

/// The forward instructions of `plan` whose implementation is lossy (ForwardImplInfo::lossy:
/// its backward's gradients differ slightly from autograd's).
int lossy_forwards(const Graph& graph, const Plan& plan);

/// Whether each value needs a gradient: parameters, and activations computed from them.
std::vector<bool> values_needing_grad(const Graph& graph);
/// Nodes whose backward must run (an input needs a gradient).
std::vector<bool> nodes_needing_backward(const Graph& graph);

}  // namespace monet
