// DataParallel: the plan made on rank 0 and broadcast, rank 0's weights broadcast, and
// every step's gradients averaged in buckets launched from the planned backward.
#include <unistd.h>

#include <monet/distributed.h>

#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "api/atomic_file.h"
#include "api/model_impl.h"
#include "api/planned_model_impl.h"
#include "distributed/gradient_buckets.h"
#include "distributed/parameter_shards.h"
#include "runtime/parameter_update.h"

namespace monet {

struct DataParallel::Impl {
  ProcessGroup pg;
  DataParallelOptions options;
  std::unique_ptr<PlannedModel> planned;
  std::unique_ptr<GradientBuckets> buckets;
  std::vector<size_t> bucket_index;  // by value id: the parameter's index in the buckets
  std::vector<at::Tensor> bucketed;  // the parameters, in the buckets' order
  /// Fused updates (OptimizerUpdate::kFused): the caller's update, and per parameter (in
  /// the buckets' order) whether the plan is done with it this step (its update point
  /// passed) and whether its averaged gradient waits in .grad() for that point.
  PlannedModel::ParameterUpdateFn update;
  std::vector<bool> released, averaged_in_grad;
  /// Sharded: the model's parameters (Model::parameters() order) and their owners.
  std::vector<at::Tensor> parameters;
  std::vector<int> owners;
  /// False once this is destroyed: the backward of a forward()'s output, which may
  /// outlive it, then refuses to end a step it can no longer reach.
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  ~Impl() { *alive = false; }

  /// The bucket's averaged gradient of parameter `i`: its update now if the plan is done
  /// with the parameter, else into .grad() (the local gradient's storage) until it is.
  void averaged(size_t i, const at::Tensor& averaged);
  /// The plan's update point of parameter `i`: its update if its average has arrived.
  void release(size_t i);

  /// Sharded, after the backward: the owned parameters' updates under kAfterBackward
  /// (every rank's gradients then freed) and the owners' broadcast of the parameters.
  void finish_sharded_step();
  /// Before a step's forward: its checks and the buckets' start.
  void begin_step();
  /// After its backward: the last all-reduces, and the sharded updates.
  void finish_step();
  /// The error of step `step` stopped by `e`, naming the ranks that no longer answer.
  DistributedError stopped(const CollectiveError& e, int64_t step) const;

  int rank() const { return pg.group->getRank(); }
  bool sharded() const { return options.shard != ShardMode::kNone; }
  bool fused() const {
    return impl_of(planned->model())->graph.update_mode() == UpdateMode::kFused;
  }
  /// After a failed collective: which ranks still answer through the store.
  std::string peers_report(int64_t step) const;
  /// Runs `gather`, a collective gathering `what` on rank 0: std::invalid_argument passes
  /// through, any other failure becomes a DistributedError naming `what` and the peers.
  template <typename Gather>
  void gathering(const std::string& what, Gather gather) const {
    try {
      gather();
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& e) {
      throw DistributedError("rank " + std::to_string(rank()) + ": gathering " + what +
                             " failed: " + e.what() + peers_report(-2));
    }
  }

  /// Sharded: splits the parameters among the ranks and sizes `plan`'s optimizer state
  /// to the largest rank's share.
  void shard(const Model& model, PlanOptions* plan);
  /// The parameters in the order the plan completes their gradients (the others last),
  /// as the buckets hold them; fills bucket_index, bucketed and, sharded, `bo`'s owners.
  std::vector<at::Tensor> order_buckets(const Model& model, BucketOptions* bo);
  /// Connects the planned backward to the buckets: each completed gradient to its bucket,
  /// the backward's end to finish_step, and under fused updates each update point to
  /// release(); the hooks refuse once this is destroyed.
  void connect(const std::vector<at::Tensor>& tensors, bool fused_updates);
};

namespace {

constexpr char kRankZeroCouldNotPlan[] = "rank 0 could not plan: ";

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

AllReduceTiming timing_of(GradientSync sync) {
  return sync == GradientSync::kDuringBackward ? AllReduceTiming::kDuringBackward
                                               : AllReduceTiming::kAfterBackward;
}

// Rank 0's text to every rank.
std::string broadcast_text(c10d::ProcessGroup& group, const std::string& text,
                           std::chrono::milliseconds timeout) {
  c10d::BroadcastOptions opts;
  opts.timeout = timeout;
  std::vector<at::Tensor> size{at::tensor({static_cast<int64_t>(text.size())}, at::kLong)};
  group.broadcast(size, opts)->wait(timeout);
  const int64_t n = size[0].item<int64_t>();
  std::vector<at::Tensor> bytes{at::empty({n}, at::kByte)};
  if (group.getRank() == 0) std::memcpy(bytes[0].data_ptr(), text.data(), text.size());
  group.broadcast(bytes, opts)->wait(timeout);
  return std::string(static_cast<const char*>(bytes[0].data_ptr()), static_cast<size_t>(n));
}

// A number that may be none, as JSON (null) and back.
nlohmann::json optional_json(std::optional<int64_t> v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
std::optional<int64_t> optional_of(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<int64_t>(j.get<int64_t>());
}

// Rank 0 plans; the result (or its error) as JSON for the other ranks.
nlohmann::json plan_on_rank_zero(const Model& model, const PlanOptions& options,
                                 std::unique_ptr<PlannedModel>* planned,
                                 std::exception_ptr* error) {
  try {
    *planned = std::make_unique<PlannedModel>(model, options);
    const PlannedModel::Impl& p = impl_of(**planned);
    const PlanReport& r = p.report;
    return {{"plan", plan_to_json(impl_of(model)->graph, p.plan)},
            {"budget_bytes", optional_json(r.budget_bytes)},
            {"baseline_peak_bytes", optional_json(r.baseline_peak_bytes)}};
  } catch (const BudgetError& e) {
    *error = std::current_exception();
    return {{"error", "budget"},
            {"what", e.what()},
            {"smallest", optional_json(e.smallest_bytes)},
            {"bound", optional_json(e.proven_bound_bytes)}};
  } catch (const std::invalid_argument& e) {
    *error = std::current_exception();
    return {{"error", "argument"}, {"what", e.what()}};
  } catch (const std::exception& e) {
    *error = std::current_exception();
    return {{"error", "runtime"}, {"what", e.what()}};
  }
}

// The other ranks: rank 0's plan, run from a plan file, with rank 0's budget in bytes.
std::unique_ptr<PlannedModel> follow_rank_zero(const Model& model, PlanOptions options,
                                               const nlohmann::json& made, int rank) {
  if (made.contains("error")) {
    const std::string what = kRankZeroCouldNotPlan + made.at("what").get<std::string>();
    if (made.at("error") == "budget")
      throw BudgetError(what, optional_of(made.at("smallest")), optional_of(made.at("bound")));
    if (made.at("error") == "argument") throw std::invalid_argument(what);
    throw std::runtime_error(what);
  }
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("monet-plan-rank" + std::to_string(rank) + "-" + std::to_string(getpid()) + ".json"))
          .string();
  write_text_atomically(path, made.at("plan").dump() + "\n");
  options.plan_file = path;
  const std::optional<int64_t> budget = optional_of(made.at("budget_bytes"));
  options.budget = budget ? std::to_string(*budget) : "";
  options.progress = false;
  std::unique_ptr<PlannedModel> planned;
  try {
    planned = std::make_unique<PlannedModel>(model, options);
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
  std::filesystem::remove(path);
  PlanReport& r = impl_of(*planned).report;
  r.planner = made.at("plan").value("planner", r.planner);
  r.baseline_peak_bytes = optional_of(made.at("baseline_peak_bytes"));
  return planned;
}

// Every rank takes rank 0's parameters and buffers.
void broadcast_state(const Model& model, c10d::ProcessGroup& group,
                     std::chrono::milliseconds timeout) {
  torch::NoGradGuard no_grad;
  auto named = model.named_parameters();
  for (auto& b : model.named_buffers()) named.push_back(b);
  for (auto& [name, t] : named) {
    std::vector<at::Tensor> one{t.is_contiguous() ? t : t.contiguous()};
    c10d::BroadcastOptions opts;
    opts.timeout = timeout;
    group.broadcast(one, opts)->wait(timeout);
    if (!one[0].is_same(t)) t.copy_(one[0]);
  }
}

}  // namespace

const char* shard_mode_name(ShardMode mode) {
  switch (mode) {
    case ShardMode::kNone:
      return "none";
    case ShardMode::kOptimizerState:
      return "optimizer";
    case ShardMode::kGradients:
      return "gradients";
  }
  return "?";
}

ShardMode shard_mode_from_name(const std::string& name) {
  for (ShardMode m : {ShardMode::kNone, ShardMode::kOptimizerState, ShardMode::kGradients})
    if (name == shard_mode_name(m)) return m;
  throw std::invalid_argument("unknown shard mode '" + name + "' (none, optimizer or gradients)");
}

std::vector<int> parameter_owners(const std::vector<torch::Tensor>& parameters, int world_size) {
  return split_by_bytes(parameters, world_size);
}

bool is_rank_zero_planning_error(const std::exception& e) {
  return std::string(e.what()).rfind(kRankZeroCouldNotPlan, 0) == 0;
}

std::string DataParallel::Impl::peers_report(int64_t step) const {
  if (!pg.store) return "";
  const std::string call = "monet/roll-call/" + std::to_string(step) + "/";
  std::vector<int> silent;
  try {
    pg.store->set(call + std::to_string(rank()), std::vector<uint8_t>{1});
    const auto deadline = std::chrono::steady_clock::now() + millis(options.roll_call_seconds);
    for (int r = 0; r < pg.group->getSize(); ++r) {
      if (r == rank()) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      try {
        pg.store->wait({call + std::to_string(r)}, std::max(left, std::chrono::milliseconds(1)));
      } catch (const std::exception&) {
        silent.push_back(r);
      }
    }
  } catch (const std::exception&) {
    return "; rank 0's rendezvous store does not answer either: rank 0 has stopped";
  }
  if (silent.empty()) return "; every rank answered a roll call (a connection failed)";
  std::string names;
  for (int r : silent) names += (names.empty() ? "" : ", ") + std::to_string(r);
  return "; rank" + std::string(silent.size() > 1 ? "s " : " ") + names +
         " did not answer a roll call within " +
         std::to_string(static_cast<int>(options.roll_call_seconds)) + " s: stopped or hung";
}

void DataParallel::Impl::shard(const Model& model, PlanOptions* plan) {
  const int world = pg.group->getSize();
  parameters = model.parameters();
  owners = split_by_bytes(parameters, world);
  int64_t total = 0;
  for (const auto& p : parameters) total += p.nbytes();
  // Every rank runs rank 0's plan: the budget holds the largest rank's state.
  if (total > 0)
    plan->optimizer_state_share =
        static_cast<double>(largest_run_bytes(parameters, owners, world)) / total;
}

std::vector<at::Tensor> DataParallel::Impl::order_buckets(const Model& model, BucketOptions* bo) {
  const Graph& g = impl_of(model)->graph;
  std::vector<int> order = impl_of(*planned).executor->gradient_order();
  std::vector<bool> listed(g.values().size(), false);
  for (int v : order) listed[v] = true;
  for (int v : g.parameters())
    if (!listed[v]) order.push_back(v);
  bucket_index.assign(g.values().size(), 0);
  std::vector<at::Tensor> tensors;
  for (size_t i = 0; i < order.size(); ++i) {
    bucket_index[order[i]] = i;
    tensors.push_back(impl_of(model)->state.tensor(order[i]));
  }
  bucketed = tensors;
  if (sharded()) {
    std::unordered_map<const c10::TensorImpl*, int> owner;
    for (size_t i = 0; i < parameters.size(); ++i)
      owner[parameters[i].unsafeGetTensorImpl()] = owners[i];
    for (const auto& t : tensors) bo->owners.push_back(owner.at(t.unsafeGetTensorImpl()));
    if (options.shard == ShardMode::kGradients) bo->collective = BucketCollective::kReduceToOwner;
  }
  return tensors;
}

void DataParallel::Impl::connect(const std::vector<at::Tensor>& tensors, bool fused_updates) {
  // A forward()'s output: its planned backward ends the step as step() does. That
  // backward may run after this is destroyed (the caller kept the output): each hook into
  // it then refuses instead of reaching what is gone.
  const std::shared_ptr<bool> is_alive = alive;
  auto check_alive = [is_alive] {
    if (!*is_alive)
      throw std::logic_error(
          "the backward of a DataParallel output ran after its DataParallel was destroyed: "
          "its gradients could not be averaged");
  };
  Impl* impl = this;
  impl_of(*planned).after_backward = [impl, check_alive] {
    check_alive();
    impl->finish_step();
  };
  GradientBuckets* b = buckets.get();
  const std::vector<size_t>* index = &bucket_index;
  impl_of(*planned).on_parameter_gradient = [b, index, check_alive](int v) {
    check_alive();
    b->gradient_ready((*index)[v]);
  };
  if (!fused_updates) return;
  b->set_averaged_handler(
      [impl](size_t i, const at::Tensor& averaged) { impl->averaged(i, averaged); });
  std::unordered_map<const c10::TensorImpl*, size_t> position;
  for (size_t i = 0; i < tensors.size(); ++i) position[tensors[i].unsafeGetTensorImpl()] = i;
  // The planned backward's update point: the plan is done with the parameter.
  impl_of(*planned).update = [impl, position, check_alive](const torch::Tensor& p,
                                                           const torch::Tensor&) {
    check_alive();
    impl->release(position.at(p.unsafeGetTensorImpl()));
  };
}

DataParallel::DataParallel(Model model, PlanOptions plan, ProcessGroup group,
                           const DataParallelOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (!group.group) throw std::invalid_argument("DataParallel needs a process group");
  if (plan.optimizer_update == OptimizerUpdate::kFused &&
      options.sync != GradientSync::kDuringBackward)
    throw std::invalid_argument(
        "fused optimizer updates take each bucket's average as its all-reduce completes "
        "during the backward: use GradientSync::kDuringBackward, or the after-backward "
        "update mode");
  Impl& d = *impl_;
  d.pg = std::move(group);
  d.options = options;
  BucketOptions bo;
  bo.bucket_bytes = options.bucket_bytes;
  bo.buckets_in_flight = options.buckets_in_flight;
  bo.timing = timing_of(options.sync);
  bo.timeout = millis(options.timeout_seconds);
  plan.reserved_bytes += GradientBuckets::buffer_bytes(model.parameters(), bo,
                                                       d.sharded() ? d.pg.group->getSize() : 1);
  // A ratio budget is of PyTorch DDP's per-rank step, which holds its own buckets.
  plan.budget_baseline = BudgetBaseline::kDataParallelStep;
  if (d.sharded()) d.shard(model, &plan);

  const auto planning = millis(std::max(options.planning_timeout_seconds, options.timeout_seconds));
  std::exception_ptr error;
  nlohmann::json made;
  if (d.rank() == 0) made = plan_on_rank_zero(model, plan, &d.planned, &error);
  made = nlohmann::json::parse(broadcast_text(*d.pg.group, made.dump(), planning));
  if (error) std::rethrow_exception(error);
  if (d.rank() != 0) d.planned = follow_rank_zero(model, plan, made, d.rank());
  broadcast_state(model, *d.pg.group, bo.timeout);

  const std::vector<at::Tensor> tensors = d.order_buckets(model, &bo);
  d.buckets = std::make_unique<GradientBuckets>(tensors, d.pg.group, bo);
  d.connect(tensors, plan.optimizer_update == OptimizerUpdate::kFused);
}

void DataParallel::Impl::averaged(size_t i, const at::Tensor& averaged) {
  at::Tensor p = bucketed[i];
  if (released[i]) {
    update(p, averaged);
  } else {
    p.mutable_grad().copy_(averaged);
    averaged_in_grad[i] = true;
  }
}

void DataParallel::Impl::release(size_t i) {
  released[i] = true;
  if (averaged_in_grad[i]) update(bucketed[i], bucketed[i].grad());
}

void DataParallel::Impl::finish_sharded_step() {
  torch::NoGradGuard no_grad;
  if (!fused())
    for (size_t i = 0; i < bucketed.size(); ++i) {
      at::Tensor p = bucketed[i];
      if (buckets->owns(i) && p.grad().defined()) update(p, p.grad());
      p.mutable_grad() = at::Tensor();
    }
  buckets->broadcast_parameters();
}

bool DataParallel::owns(const torch::Tensor& parameter) const {
  const Impl& d = *impl_;
  for (size_t i = 0; i < d.bucketed.size(); ++i)
    if (d.bucketed[i].is_same(parameter)) return d.buckets->owns(i);
  return false;
}

void DataParallel::gather_optimizer_state(torch::optim::Optimizer& optimizer) {
  Impl& d = *impl_;
  if (!d.sharded()) return;
  d.gathering("the optimizer state", [&] {
    monet::gather_optimizer_state(optimizer, d.parameters, d.owners, *d.pg.group,
                                  millis(d.options.timeout_seconds));
  });
}

std::vector<std::string> DataParallel::gather_to_rank_zero(const std::string& bytes) {
  Impl& d = *impl_;
  std::vector<std::string> gathered;
  d.gathering("bytes on rank 0", [&] {
    monet::gather_to_rank_zero(*d.pg.group, bytes, millis(d.options.timeout_seconds),
                               [&](int, const std::string& b) { gathered.push_back(b); });
  });
  return gathered;
}

void DataParallel::shard_optimizer_state(torch::optim::Optimizer& optimizer) {
  Impl& d = *impl_;
  if (d.sharded()) drop_unowned_optimizer_state(optimizer, d.parameters, d.owners, d.rank());
}

void DataParallel::use_optimizer(torch::optim::Optimizer& optimizer) {
  use_update(parameter_update_fn(optimizer));
}

void DataParallel::use_update(PlannedModel::ParameterUpdateFn update) {
  if (!impl_->fused() && !impl_->sharded())
    throw std::logic_error(
        "fused optimizer updates need a model planned for them; this one was planned with "
        "after-backward updates (step the optimizer after DataParallel::step)");
  if (!update) throw std::invalid_argument("use_update: an empty update function");
  impl_->update = std::move(update);
}

DataParallel::~DataParallel() = default;
DataParallel::DataParallel(DataParallel&&) noexcept = default;
DataParallel& DataParallel::operator=(DataParallel&&) noexcept = default;

DistributedError DataParallel::Impl::stopped(const CollectiveError& e, int64_t step) const {
  return DistributedError("rank " + std::to_string(rank()) + ", step " + std::to_string(step) +
                          ": " + e.what() + peers_report(step));
}

void DataParallel::Impl::begin_step() {
  if (!update && sharded())
    throw std::logic_error(
        "sharded data parallelism updates each rank's own parameters: give DataParallel "
        "the optimizer (use_optimizer or use_update) before the first step");
  if (fused()) {
    if (!update)
      throw std::logic_error(
          "the model was planned for fused optimizer updates: give DataParallel the "
          "optimizer (use_optimizer or use_update) before the first step");
    released.assign(bucketed.size(), false);
    averaged_in_grad.assign(bucketed.size(), false);
  }
  try {
    buckets->begin_step();
  } catch (const CollectiveError& e) {
    throw stopped(e, planned->model().steps() + 1);
  }
}

void DataParallel::Impl::finish_step() {
  try {
    buckets->finish_step();
    if (sharded()) finish_sharded_step();
  } catch (const CollectiveError& e) {
    throw stopped(e, planned->model().steps());  // the step is counted from its forward
  }
}

StepResult DataParallel::step(const torch::Tensor& input, const torch::Tensor& target) {
  Impl& d = *impl_;
  const auto start = std::chrono::steady_clock::now();
  d.begin_step();
  StepResult r;
  try {
    r = d.planned->step(input, target);
  } catch (const CollectiveError& e) {
    throw d.stopped(e, d.planned->model().steps() + 1);
  }
  d.finish_step();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

torch::Tensor DataParallel::forward(const std::vector<torch::Tensor>& inputs) {
  Impl& d = *impl_;
  d.begin_step();
  try {
    return d.planned->forward(inputs);
  } catch (const CollectiveError& e) {
    throw d.stopped(e, d.planned->model().steps() + 1);
  }
}

PlannedModel& DataParallel::planned() { return *impl_->planned; }
Model& DataParallel::model() { return impl_->planned->model(); }
int DataParallel::rank() const { return impl_->rank(); }
int DataParallel::world_size() const { return impl_->pg.group->getSize(); }
void DataParallel::set_gradient_sync(GradientSync sync) {
  if (impl_->fused() && sync != GradientSync::kDuringBackward)
    throw std::logic_error(
        "a model planned for fused optimizer updates all-reduces during the backward: its "
        "local gradients are freed at their update points");
  impl_->buckets->set_timing(timing_of(sync));
}

int64_t DataParallel::bucket_buffer_bytes() const { return impl_->buckets->buffer_bytes(); }
ShardMode DataParallel::shard() const { return impl_->options.shard; }
int64_t DataParallel::owned_parameter_bytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < impl_->bucketed.size(); ++i)
    if (impl_->buckets->owns(i)) bytes += impl_->bucketed[i].nbytes();
  return bytes;
}

void DataParallel::barrier() {
  try {
    impl_->pg.group->barrier()->wait(millis(impl_->options.timeout_seconds));
  } catch (const std::exception& e) {
    throw DistributedError("rank " + std::to_string(rank()) +
                           ": the final barrier failed: " + e.what() + impl_->peers_report(-1));
  }
}

}  // namespace monet
