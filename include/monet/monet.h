// monet: train deep networks in a fraction of the memory.
//
// The public C++ API. A `Model` is a network (a zoo model or a TorchScript file) with
// its parameters and buffers as ordinary torch::Tensors. `PlannedModel` plans it under a
// memory budget (MONeT's 0-1 program, or another planner; plans cached on disk) and runs
// training steps under that plan: forward, loss and the planned backward, with every
// parameter's gradient accumulated into its .grad() as autograd would. Any torch::optim
// optimizer then steps the same tensors:
//
//   monet::Model model = monet::Model::load({"resnet18", /*batch=*/32});
//   monet::PlanOptions options;
//   options.budget = "0.5x";  // of autograd's peak for a whole training step
//   options.optimizer = monet::OptimizerKind::kSGDMomentum;
//   monet::PlannedModel planned(model, options);
//   torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
//   for (...) {
//     monet::zero_grad(model.parameters());
//     monet::StepResult r = planned.step(images, labels);
//     sgd.step();
//   }
//
// Errors: std::invalid_argument for bad input from the caller (an unknown model or
// planner, a malformed budget), with two kinds of it carrying details: UnsupportedOperator
// (a traced operator monet cannot import) and PlanMismatch (a plan file or a batch for
// another model or shape); BudgetError for a budget no plan fits; std::runtime_error
// otherwise.
// Units: bytes for memory, seconds for time.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "monet/lossy.h"

namespace monet {

/// The loss a traced model is trained with (zoo models have their own).
enum class LossKind {
  kCrossEntropy,   // logits [N, C] or [N, C, ...] against int64 classes [N] or [N, ...]
  kMSE,            // mean squared error against a float target of the output's shape
  kBCEWithLogits,  // binary cross-entropy with logits against a float target
  kSum,            // the output summed (no target)
  /// A language model's loss: logits [N, T, V] (classes last) against int64 tokens
  /// [N, T], cross-entropy averaged over every position.
  kSequenceCrossEntropy,
};
const char* loss_kind_name(LossKind kind);
/// "cross_entropy", "mse", "bce_with_logits", "sum", "sequence_cross_entropy"; throws
/// std::invalid_argument.
LossKind loss_kind_from_name(const std::string& name);

/// "float32", "float64", "int64", "int32" or "bool": the element types an input may have;
/// throws std::invalid_argument naming them for any other name (the graph layer's table,
/// graph/model_config.h, which the CLI's --input-shape reads too).
torch::Dtype input_dtype_from_name(const std::string& name);

/// Which implementations a traced model's activations, batch norms and attention get.
enum class TracedOperatorPath {
  kSpecialised,  // monet's own operators, several implementations each; attention fused
  kGeneric,      // generic ATen nodes (to measure what the specialised ones save): batch
                 // norm then normalises with batch statistics and keeps no running ones
};

/// One input of a traced model's forward.
struct ModelInput {
  std::vector<int64_t> shape;  // batch first
  /// The element type fed; none: int64 token ids where an embedding reads the input,
  /// otherwise the model's floating type (its parameters': float32, float64 or bfloat16).
  std::optional<torch::Dtype> dtype;
};

/// "8,3,224,224" or "8,16:int64": an input's shape, batch first, and optionally its element
/// type (input_dtype_from_name's names), as the CLI's --input-shape takes it. Throws
/// std::invalid_argument naming what is wrong.
ModelInput model_input_from_string(const std::string& text);

/// What to build: a zoo model (`monet models` lists them) at a size, or a model traced
/// in Python with torch.jit.trace(...).save(path) and the input shape to plan it for.
struct ModelSpec {
  std::string model;                 // zoo name ("resnet50") or TorchScript path (.pt/.pth)
  int64_t batch = 1;                 // zoo models: samples per step
  std::vector<int64_t> image;        // zoo models: spatial size (H, W); empty = the model's own
  double width = 1.0;                // zoo models: channel width multiplier
  int64_t classes = 0;               // zoo models: output classes; 0 = the model's own
  std::vector<int64_t> input_shape;  // TorchScript models: input shape, batch first
  /// TorchScript models returning a tuple or dict: the output trained (an index or a
  /// key); empty = the first.
  std::string output;
  LossKind loss = LossKind::kCrossEntropy;  // TorchScript models: the loss
  /// TorchScript models: whether the planner may use lossy implementations (monet/lossy.h);
  /// their gradients differ slightly from autograd's.
  LossyImplementations lossy = LossyImplementations::kExcluded;
  /// TorchScript models: their activations', batch norms' and attention's operators.
  TracedOperatorPath operator_path = TracedOperatorPath::kSpecialised;
  /// TorchScript models whose forward takes several tensors (tokens and a mask, image and
  /// text), or one of a given element type: every input, in forward's order, in the
  /// place of input_shape (which then stays empty).
  std::vector<ModelInput> inputs;
};

/// A traced operator monet cannot import. `operator_name`: e.g. "aten::argmax";
/// `source`: the Python source line that produced it (file:line and the line's text) when
/// the trace recorded one.
class UnsupportedOperator : public std::invalid_argument {
 public:
  UnsupportedOperator(const std::string& what, std::string operator_name, std::string source)
      : std::invalid_argument(what),
        operator_name(std::move(operator_name)),
        source(std::move(source)) {}
  std::string operator_name;
  std::string source;
};

/// A plan file made for another model or shape, or a batch whose shape is not the one the
/// model was planned for.
class PlanMismatch : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A network and its trainable state. Copies share the same tensors.
class Model {
 public:
  /// Builds the model; parameters come from the TorchScript file, or from the zoo's
  /// torchvision initialisation seeded by `seed`. Throws std::invalid_argument for an
  /// unknown model, bad sizes or an unsupported traced operator.
  static Model load(const ModelSpec& spec, uint64_t seed = 0);

  const ModelSpec& spec() const;
  /// Parameters in graph order: leaf tensors with requires_grad, the model's own storage
  /// (an optimizer stepping them changes the model).
  std::vector<torch::Tensor> parameters() const;
  /// state_dict-style names with the parameters, and with the buffers (batch-norm
  /// running statistics), in graph order. A traced model's parameter that does not require
  /// gradients (a frozen backbone's) is a buffer here: it gets no gradient, as in PyTorch.
  std::vector<std::pair<std::string, torch::Tensor>> named_parameters() const;
  std::vector<std::pair<std::string, torch::Tensor>> named_buffers() const;
  /// Shape and dtype of the input batch and of the targets step() takes (an empty shape
  /// when the loss takes no target: LossKind::kSum; step() then takes an undefined one).
  std::vector<int64_t> input_shape() const;
  std::vector<int64_t> target_shape() const;
  /// Every input's shape and element type, in forward's order (one for most models).
  std::vector<std::vector<int64_t>> input_shapes() const;
  std::vector<torch::ScalarType> input_dtypes() const;
  /// Shape of the model's output: what PlannedModel::forward returns (e.g. logits).
  std::vector<int64_t> output_shape() const;
  torch::ScalarType target_dtype() const;
  /// Graph fingerprint: identifies the computation and its shapes (plans and
  /// checkpoints record it).
  std::string fingerprint() const;
  /// Training steps taken (counts batch-norm updates; saved as num_batches_tracked).
  int64_t steps() const;
  /// Operators in the graph (the loss among them), and of them those on the generic ATen
  /// path: run by ATen with autograd's backward, no specialised implementation to choose.
  int64_t node_count() const;
  int64_t generic_node_count() const;

  /// Random inputs (in forward's order) and a target of the model's shapes and types, the
  /// same for the same `seed`: synthetic data (`monet train --synthetic`, benchmarks).
  /// Token ids are drawn below the row count of the embedding that reads them, class
  /// targets below the class count, masks and float targets as fair coins. The target is
  /// undefined when the loss takes none.
  std::pair<std::vector<torch::Tensor>, torch::Tensor> synthetic_batch(uint64_t seed) const;

  /// Makes the model use `tensors` (state_dict names, as named_parameters() and
  /// named_buffers() give them) as its parameters and buffers: the same tensors, no copy,
  /// so that another owner (a Python nn.Module) and this model train one set of weights.
  /// Every parameter and buffer must be given, with its shape; parameters must be
  /// floating-point leaves and are set to require gradients. Call it before planning.
  /// Throws std::invalid_argument naming a missing, unknown or misshaped tensor.
  void share_tensors(const std::vector<std::pair<std::string, torch::Tensor>>& tensors);

  /// Writes the weights atomically (temporary file + rename). A TorchScript model is
  /// written as a TorchScript file with the new values (torch.jit.load reads it); a zoo
  /// model as a state_dict (torch.load reads it; it loads into the torchvision model of
  /// the same name). Throws std::runtime_error when the file cannot be written.
  void save(const std::string& path) const;

  struct Impl;

 private:
  friend struct ImplAccess;  // the library's (src/api/impl_access.h)
  std::shared_ptr<Impl> impl_;
};

/// The optimizer a training step runs, as far as memory goes: its state lives through
/// the whole step and its update needs temporaries, both inside the budget.
enum class OptimizerKind {
  kNone,         // no optimizer step (gradients only)
  kSGD,          // plain SGD: no state
  kSGDMomentum,  // SGD with momentum: one buffer per parameter
  kAdam,         // Adam: two moments per parameter
};
const char* optimizer_kind_name(OptimizerKind kind);
/// "sgd" (with momentum when `momentum` > 0), "adam", "adamw" (Adam's memory), "none";
/// throws std::invalid_argument.
OptimizerKind optimizer_kind_from_name(const std::string& name, double momentum);

/// Bytes the optimizer holds (state) and needs at most at once during its update
/// (temporaries: LibTorch's SGD and Adam update one parameter at a time), for `model`.
struct OptimizerMemory {
  int64_t state_bytes = 0;
  int64_t update_bytes = 0;
  int64_t total() const { return state_bytes + update_bytes; }
};
OptimizerMemory optimizer_memory(const Model& model, OptimizerKind kind, double weight_decay = 0);
struct PlanOptions;
/// The same for PlanOptions: its optimizer, weight decay and state share
/// (optimizer_state_share of the state, rounded up). Throws std::invalid_argument for a
/// share outside (0, 1].
OptimizerMemory optimizer_memory(const Model& model, const PlanOptions& options);

/// When the optimizer updates the parameters.
enum class OptimizerUpdate {
  /// The caller's optimizer.step() after the backward: every gradient exists at its end.
  kAfterBackward,
  /// Inside the backward: each parameter is updated, by the optimizer given to
  /// PlannedModel::use_optimizer, as soon as the plan no longer uses it (every use of a
  /// shared parameter counted), and its gradient freed at once. Gradients never all exist
  /// together and the planner uses the bytes. For torch::optim::SGD, Adam and AdamW (and
  /// DataParallel, with the averaged gradients); a step that needs every gradient first
  /// (clipping by global norm, accumulation over micro-batches) takes kAfterBackward.
  kFused,
};
/// "after-backward", "fused".
const char* optimizer_update_name(OptimizerUpdate update);
/// Throws std::invalid_argument naming the known values for any other name.
OptimizerUpdate optimizer_update_from_name(const std::string& name);

/// What a ratio budget ("0.4x") is a ratio of.
enum class BudgetBaseline {
  /// LibTorch autograd's whole training step in this process.
  kAutogradStep,
  /// PyTorch DistributedDataParallel's per-rank step for the same per-rank batch:
  /// autograd's step beside DDP's gradient buckets (one flat copy of every gradient,
  /// alive for the whole step). DataParallel sets it.
  kDataParallelStep,
};
/// "autograd's step", "DDP's per-rank step": what the ratio is of, as messages say it.
const char* budget_baseline_name(BudgetBaseline baseline);

/// How to plan.
/// What ends the planner's searches.
enum class PlanningLimit {
  /// Each stage ends at its share of PlanOptions::time_limit_seconds of wall time.
  kWallClock,
  /// Each stage ends by its own work count (solver nodes, the neighbourhood windows'
  /// sequence, heuristics run to their end) and no clock is read: for the same costs the
  /// plan is the same on every machine and under any load. time_limit_seconds then only
  /// chooses strategies; planning may take longer than it on large models.
  kWork,
};
/// "wall-clock" or "work".
const char* planning_limit_name(PlanningLimit limit);
/// Throws std::invalid_argument naming the known values for any other name.
PlanningLimit planning_limit_from_name(const std::string& name);

struct PlanOptions {
  std::string planner = "monet";  // see monet::planner_names(); default MONeT's program
  /// Peak memory of a whole training step: bytes ("123456789"), "1.5GiB"/"800MiB", or a
  /// ratio of budget_baseline's measured peak for the same step ("0.4x"). Empty: no
  /// budget (only planners that take none: storeall, chen, gist).
  std::string budget;
  BudgetBaseline budget_baseline = BudgetBaseline::kAutogradStep;  // what "0.4x" is of
  OptimizerKind optimizer = OptimizerKind::kSGDMomentum;
  double weight_decay = 0;  // the optimizer's (its update then needs one more temporary)
  /// When the optimizer updates the parameters (kFused: call use_optimizer() before the
  /// first step). The plan is made for it and records it.
  OptimizerUpdate optimizer_update = OptimizerUpdate::kAfterBackward;
  /// The fraction, in (0, 1], of the optimizer's state this process holds: 1 alone;
  /// under data parallelism with sharded optimizer state (ShardMode in
  /// monet/distributed.h, which sets it) the largest rank's share of the parameter bytes.
  /// The budget reserves that much of the state.
  double optimizer_state_share = 1;
  /// Other bytes alive during every step that the budget must leave room for (e.g.
  /// prefetched batches).
  int64_t reserved_bytes = 0;
  /// Bytes a loss of the caller's own holds while it runs, between forward() and the
  /// planned backward, beside the model's output and the output's gradient
  /// (cross-entropy: the log-probabilities and their gradient, two tensors of the output's
  /// size). The planner charges them where the model's loss node runs, in the place of
  /// that node's own working set, not over the whole step as reserved_bytes. 0: the
  /// model's loss node's working set, as step() runs it.
  int64_t loss_bytes = 0;
  double time_limit_seconds = 60;                            // the planner's limit (seconds)
  PlanningLimit planning_limit = PlanningLimit::kWallClock;  // what ends its searches
  /// Plan file to run instead of planning (must be for this model and shape).
  std::string plan_file;
  /// Where plans, smallest budgets, profiles and baseline peaks are cached; empty =
  /// $MONET_CACHE_DIR or ~/.cache/monet.
  std::string cache_dir;
  bool use_cache = true;
  bool progress = true;  // progress lines on stderr
};

/// What planning decided and predicts. A field that is none was not computed: no budget
/// (a planner that takes none), no measured baseline (the budget was not relative), no
/// profiled costs (a heuristic planner without a cost cache), no solver bound.
struct PlanReport {
  std::string planner;
  std::optional<int64_t> budget_bytes;            // the whole step's budget
  std::optional<int64_t> iteration_budget_bytes;  // forward + backward's share of it
  OptimizerMemory optimizer;                      // reserved for the optimizer
  OptimizerUpdate optimizer_update = OptimizerUpdate::kAfterBackward;  // the plan's
  int64_t reserved_bytes = 0;                  // PlanOptions::reserved_bytes
  int64_t loss_bytes = 0;                      // PlanOptions::loss_bytes
  std::optional<int64_t> baseline_peak_bytes;  // budget_baseline's measured peak
  BudgetBaseline budget_baseline = BudgetBaseline::kAutogradStep;  // PlanOptions'
  std::optional<int64_t> predicted_peak_bytes;                     // forward + backward, simulated
  /// What the simulation counts live when the forward begins (parameters, buffers, the
  /// batch): predicted_peak_bytes - predicted_start_bytes is the rise a step's tracked
  /// peak_bytes - start_bytes (StepResult) shows.
  std::optional<int64_t> predicted_start_bytes;
  std::optional<double> predicted_seconds;               // profiled seconds of forward + backward
  std::optional<int64_t> storeall_predicted_peak_bytes;  // the same for store-all
  std::optional<double> storeall_predicted_seconds;
  /// The solver's relative gap between the plan's time and its proven lower bound (0:
  /// optimal); none when there is no bound: no program was solved (a heuristic planner, a
  /// cached plan) or its LP relaxation was not solved within the time limit.
  std::optional<double> solver_gap;
  bool from_cache = false;  // the plan was read from the plan cache (no solve)
  std::string plan_path;    // the cached plan file, when cached
  /// Forwards whose implementation is lossy (ModelSpec::lossy offered them): the
  /// gradients then differ slightly from autograd's. 0 for an exact plan.
  int lossy_forwards = 0;
};

/// The whole-step budgets (bytes) a model can be planned for with given PlanOptions
/// (optimizer, weight decay, reserved bytes; the costs are profiled, or read from the
/// cache): anything from smallest_bytes up has a plan, store-all needs storeall_bytes,
/// and no plan of any planner exists below floor_bytes. The smallest budget's search is
/// cached too, by model, planner, time and planning limit: a second call, or a BudgetError
/// after it, does not search again.
struct BudgetRange {
  /// The smallest budget the planner finds a plan for (`monet plan`'s, the same function:
  /// the MONeT program with the budget minimised, or a heuristic's leaner plan) + the rest.
  int64_t smallest_bytes = 0;
  int64_t storeall_bytes = 0;  // store-all's simulated peak + the rest
  int64_t floor_bytes = 0;     // the iteration's memory floor + the rest
};
BudgetRange budget_range(const Model& model, const PlanOptions& options);

/// A budget no plan fits. smallest_bytes: the smallest whole-step budget for which the
/// planner finds a plan (BudgetRange::smallest_bytes); proven_bound_bytes: a whole-step budget
/// below which no plan of any planner can exist (the iteration's memory floor plus the same). Each
/// is none where it was not computed (no costs).
class BudgetError : public std::runtime_error {
 public:
  BudgetError(const std::string& what, std::optional<int64_t> smallest_bytes,
              std::optional<int64_t> proven_bound_bytes = std::nullopt)
      : std::runtime_error(what),
        smallest_bytes(smallest_bytes),
        proven_bound_bytes(proven_bound_bytes) {}
  std::optional<int64_t> smallest_bytes;
  std::optional<int64_t> proven_bound_bytes;
};

/// One training step's measurement.
struct StepResult {
  double loss = 0;          // NaN after forward(): the loss is the caller's
  int64_t peak_bytes = 0;   // absolute peak during forward and backward (tracked allocator)
  int64_t start_bytes = 0;  // tracked bytes live when the forward began (peak_bytes' base)
  double seconds = 0;       // wall time of forward, loss and backward
};

/// A model planned under a budget; runs training steps under its plan.
class PlannedModel {
 public:
  /// Plans `model` (or loads options.plan_file). Throws BudgetError when no plan fits,
  /// std::invalid_argument for bad options.
  PlannedModel(Model model, const PlanOptions& options = {});
  ~PlannedModel();
  PlannedModel(PlannedModel&&) noexcept;
  PlannedModel& operator=(PlannedModel&&) noexcept;

  /// Forward, the model's loss against `target`, and the planned backward. Gradients are
  /// added to each parameter's .grad() (set when undefined), as loss.backward() would.
  /// `input` and `target` must have the model's input_shape()/target_shape().
  StepResult step(const torch::Tensor& input, const torch::Tensor& target);
  /// The same for a model of several inputs (Model::input_shapes(), in order).
  StepResult step(const std::vector<torch::Tensor>& inputs, const torch::Tensor& target);

  /// The model's output (e.g. logits) for `input`, computed under the plan in training
  /// mode (batch statistics, active dropout), for a loss of the caller's own:
  ///
  ///   torch::Tensor out = planned.forward(x);
  ///   torch::Tensor loss = my_loss(out, y);
  ///   loss.backward();  // runs the planned backward; gradients go to .grad()
  ///
  /// The output's backward runs the rest of the plan from d loss / d output, in the place
  /// of the built-in loss's backward, so the plan's memory model holds (the caller's loss
  /// itself, a few tensors of the output's size, is not planned: leave room for it with
  /// PlanOptions::loss_bytes, as the Python package does). Until that backward
  /// runs, or the output is destroyed, the iteration's saved tensors stay alive. Under
  /// torch::NoGradGuard the output has no backward. last_step() then reports the
  /// iteration (its loss is NaN: the loss is the caller's).
  torch::Tensor forward(const torch::Tensor& input);
  /// The same for a model of several inputs (Model::input_shapes(), in order).
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs);

  /// The measurement of the last step(), or of the last forward() whose backward has run.
  StepResult last_step() const;

  /// The optimizer that updates the parameters inside the backward under
  /// OptimizerUpdate::kFused (its param_groups' options are read at every update, its
  /// state kept in optimizer.state() as its own step() keeps it; a later
  /// optimizer.step() finds no gradient and changes nothing). It must outlive the steps
  /// it is used for. Throws std::invalid_argument for an optimizer other than
  /// torch::optim::SGD, Adam or AdamW, and std::logic_error for a model planned with
  /// kAfterBackward. step() and forward() of a kFused model throw std::logic_error until
  /// it (or use_update) is called.
  void use_optimizer(torch::optim::Optimizer& optimizer);
  /// The same with an update of the caller's own: `update(parameter, gradient)` must
  /// update that one parameter (a tensor of model().parameters()) from its complete
  /// gradient, which is also its .grad() and is freed when it returns (Python's
  /// torch.optim steps this way, one parameter at a time).
  using ParameterUpdateFn =
      std::function<void(const torch::Tensor& parameter, const torch::Tensor& gradient)>;
  void use_update(ParameterUpdateFn update);

  /// The model's output (e.g. logits) for `input` in evaluation mode (batch norm with
  /// its running statistics, dropout off), without gradients.
  torch::Tensor predict(const torch::Tensor& input);
  torch::Tensor predict(const std::vector<torch::Tensor>& inputs);

  Model& model();
  const PlanReport& report() const;
  /// Writes the plan as JSON (atomically).
  void save_plan(const std::string& path) const;

  struct Impl;

 private:
  friend struct ImplAccess;  // the library's (src/api/impl_access.h)
  std::unique_ptr<Impl> impl_;
};

/// Training checkpoints: the model's parameters, buffers and step count, the
/// optimizer's state, and the data order's seed. Written atomically (temporary file +
/// rename): an interrupted save leaves the previous checkpoint in place.
void save_checkpoint(const std::string& path, const Model& model,
                     torch::optim::Optimizer& optimizer, uint64_t data_seed);
/// Restores a checkpoint into `model` and `optimizer` (made the same way as when it was
/// saved) and returns its data seed. Throws std::invalid_argument, leaving both
/// unchanged, when the file is unreadable, truncated, not a checkpoint, or from another
/// model or shape.
uint64_t load_checkpoint(const std::string& path, Model& model, torch::optim::Optimizer& optimizer);

/// Memory at one point of an iteration: after an instruction or an operator (`label`).
struct MemoryTracePoint {
  std::string label;
  int64_t current_bytes = 0;  // live tracked bytes
  int64_t peak_bytes = 0;     // the iteration's peak so far
};

/// Forward and backward under the plan against LibTorch autograd, run interleaved
/// (autograd, plan, autograd, plan, ...) from a copy of the model's weights on one
/// synthetic batch: the model itself is left unchanged. Peaks are absolute (the copy and
/// the model are resident for both alike); times are medians over `iters` iterations
/// after one warm-up.
struct AutogradComparison {
  int64_t peak_bytes = 0, autograd_peak_bytes = 0;
  double seconds = 0, autograd_seconds = 0;
  double overhead = 0;      // seconds / autograd_seconds - 1
  double memory_ratio = 0;  // peak_bytes / autograd_peak_bytes
  std::vector<double> iteration_seconds, autograd_iteration_seconds;  // each measured one
  /// The plan's memory after every instruction of the last iteration, when asked for
  /// (monet/measurement.h).
  std::vector<MemoryTracePoint> trace;
};
AutogradComparison compare_with_autograd(PlannedModel& planned, int iters = 3);

/// Sets every tensor's .grad() to undefined (PyTorch's zero_grad(set_to_none=True)):
/// gradients then take no memory until the next backward.
void zero_grad(const std::vector<torch::Tensor>& parameters);

/// "1.5GiB", "800MiB", "123456789", "0.4x" (of `baseline_peak()`, called only then) ->
/// bytes. Throws std::invalid_argument for anything else, including values that are not
/// finite, not positive or overflow 64 bits.
int64_t parse_budget(const std::string& text, const std::function<int64_t()>& baseline_peak);

/// Peak bytes of a whole training step of `model` under LibTorch autograd with
/// `optimizer` (measured now on a copy of its state, second step: optimizer state
/// allocated). Cached by fingerprint and optimizer unless `cache_dir` is empty.
int64_t measure_autograd_step_peak(const Model& model, OptimizerKind optimizer, double weight_decay,
                                   const std::string& cache_dir);

/// The same for PyTorch DistributedDataParallel's per-rank step (BudgetBaseline::
/// kDataParallelStep): autograd's step with DDP's gradient buckets alive throughout. DDP
/// (gradient_as_bucket_view=False, its default) holds one flat copy of every gradient in
/// its buckets, whatever their size or the number of ranks: this peak exceeds autograd's
/// by the parameters' bytes, as PyTorch's DDP measured in one process does.
int64_t measure_ddp_step_peak(const Model& model, OptimizerKind optimizer, double weight_decay,
                              const std::string& cache_dir);

/// measure_autograd_step_peak or measure_ddp_step_peak, as `options` asks.
int64_t measure_baseline_step_peak(const Model& model, const PlanOptions& options,
                                   const std::string& cache_dir);

/// Memory measured by monet's tracking allocator (the CPU analogue of
/// torch.cuda.max_memory_allocated). install() before creating the tensors to count.
struct MemoryStats {
  static void install();
  static int64_t current_bytes();
  static int64_t peak_bytes();  // since the last reset_peak()
  static void reset_peak();
};

/// Where progress lines (profiling, planning, the solver) and warnings go: `sink` gets
/// each piece of text as it would be written to stderr (whole lines, or a status line
/// starting with '\r' that replaces the previous one), with `warning` set for warnings.
/// It may be called from other threads. An empty function restores stderr.
void set_progress_sink(std::function<void(bool warning, const std::string& text)> sink);

/// The default cache directory: $MONET_CACHE_DIR, else ~/.cache/monet.
std::string default_cache_dir();

/// Every planner name PlanOptions::planner takes.
std::vector<std::string> planner_names();

}  // namespace monet
