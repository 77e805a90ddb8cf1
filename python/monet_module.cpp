// monet._C: the Python extension over libmonet's public API (include/monet/monet.h,
// distributed.h).
// Tensors cross as the same at::Tensor objects Python's torch uses (libtorch_python's
// type caster): no copies. Long calls release the GIL; monet's exceptions become the
// classes of monet/errors.py with their fields.
#include <monet/distributed.h>
#include <monet/monet.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

// Sets the Python exception monet.errors.<name>(*args) as the current error.
void set_error(const char* name, const py::tuple& args) {
  py::object cls = py::module_::import("monet.errors").attr(name);
  py::object instance = cls(*args);
  PyErr_SetObject(cls.ptr(), instance.ptr());
}

void register_errors() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const monet::BudgetError& e) {
      set_error("BudgetTooSmall", py::make_tuple(e.what(), e.smallest_bytes, e.proven_bound_bytes));
    } catch (const monet::UnsupportedOperator& e) {
      set_error("UnsupportedOperator", py::make_tuple(e.what(), e.operator_name, e.source));
    } catch (const monet::PlanMismatch& e) {
      set_error("PlanMismatch", py::make_tuple(e.what()));
    } catch (const monet::DistributedError& e) {
      set_error("DistributedError", py::make_tuple(e.what()));
    }
  });
}

py::dict step_dict(const monet::StepResult& s) {
  py::dict d;
  d["loss"] = s.loss;
  d["peak_bytes"] = s.peak_bytes;
  d["start_bytes"] = s.start_bytes;
  d["seconds"] = s.seconds;
  return d;
}

// An input's element type from the Python layer: "" (inferred: int64 token ids where an
// embedding reads it, else float32) or a name monet::input_dtype_from_name reads.
std::optional<torch::Dtype> input_dtype(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return monet::input_dtype_from_name(name);
}

// The report's fields under their C++ names; a field that is none is None.
void bind_report(py::module_& m) {
  using R = monet::PlanReport;
  py::class_<R>(m, "PlanReport", "What planning decided and predicts (bytes, seconds).")
      .def_readonly("planner", &R::planner)
      .def_readonly("budget_bytes", &R::budget_bytes)
      .def_readonly("iteration_budget_bytes", &R::iteration_budget_bytes)
      .def_property_readonly("optimizer_state_bytes",
                             [](const R& r) { return r.optimizer.state_bytes; })
      .def_property_readonly("optimizer_update_bytes",
                             [](const R& r) { return r.optimizer.update_bytes; })
      .def_property_readonly(
          "optimizer_update",
          [](const R& r) { return std::string(monet::optimizer_update_name(r.optimizer_update)); })
      .def_readonly("reserved_bytes", &R::reserved_bytes)
      .def_readonly("loss_bytes", &R::loss_bytes)
      .def_readonly("baseline_peak_bytes", &R::baseline_peak_bytes)
      .def_property_readonly(
          "budget_baseline",
          [](const R& r) { return std::string(monet::budget_baseline_name(r.budget_baseline)); })
      .def_readonly("predicted_peak_bytes", &R::predicted_peak_bytes)
      .def_readonly("predicted_start_bytes", &R::predicted_start_bytes)
      .def_readonly("predicted_seconds", &R::predicted_seconds)
      .def_readonly("storeall_predicted_peak_bytes", &R::storeall_predicted_peak_bytes)
      .def_readonly("storeall_predicted_seconds", &R::storeall_predicted_seconds)
      .def_readonly("solver_gap", &R::solver_gap)
      .def_readonly("from_cache", &R::from_cache)
      .def_readonly("plan_path", &R::plan_path)
      .def_readonly("lossy_forwards", &R::lossy_forwards);
  using B = monet::BudgetRange;
  py::class_<B>(m, "BudgetRange",
                "Whole-step budgets in bytes: every budget from `smallest` up has a plan, "
                "store-all (keeping everything, as autograd does) needs `store_all`, and no "
                "plan can exist below `floor`.")
      .def_readonly("smallest", &B::smallest_bytes)
      .def_readonly("store_all", &B::storeall_bytes)
      .def_readonly("floor", &B::floor_bytes)
      .def("__iter__",
           [](const B& r) {
             return py::iter(py::make_tuple(r.smallest_bytes, r.storeall_bytes, r.floor_bytes));
           })
      .def("__repr__", [](const B& r) {
        return "monet.BudgetRange(smallest=" + std::to_string(r.smallest_bytes) +
               ", store_all=" + std::to_string(r.storeall_bytes) +
               ", floor=" + std::to_string(r.floor_bytes) + ")";
      });
}

void bind_model(py::module_& m) {
  py::class_<monet::Model>(m, "Model", "A traced network and its parameters (libmonet's Model).")
      .def_static(
          "load_traced",
          [](const std::string& path, const std::vector<std::vector<int64_t>>& input_shapes,
             const std::vector<std::string>& input_dtypes, const std::string& output,
             const std::string& loss, bool lossy) {
            monet::ModelSpec spec;
            spec.model = path;
            for (size_t i = 0; i < input_shapes.size(); ++i)
              spec.inputs.push_back({input_shapes[i], input_dtype(input_dtypes.at(i))});
            spec.output = output;
            spec.loss = monet::loss_kind_from_name(loss);
            spec.lossy = lossy ? monet::LossyImplementations::kOffered
                               : monet::LossyImplementations::kExcluded;
            return monet::Model::load(spec);
          },
          py::arg("path"), py::arg("input_shapes"), py::arg("input_dtypes"), py::arg("output") = "",
          py::arg("loss") = "sum", py::arg("lossy") = false,
          py::call_guard<py::gil_scoped_release>())
      .def("share_tensors", &monet::Model::share_tensors, py::arg("tensors"))
      .def("named_parameters", &monet::Model::named_parameters)
      .def("named_buffers", &monet::Model::named_buffers)
      .def_property_readonly("fingerprint", &monet::Model::fingerprint)
      .def_property_readonly("node_count", &monet::Model::node_count)
      .def_property_readonly("generic_node_count", &monet::Model::generic_node_count)
      .def_property_readonly("input_shape", &monet::Model::input_shape)
      .def_property_readonly("input_shapes", &monet::Model::input_shapes)
      .def_property_readonly("output_shape", &monet::Model::output_shape);
}

template <typename E>
std::vector<std::string> names_of(const std::vector<E>& values, const char* (*name_of)(E)) {
  std::vector<std::string> names;
  for (E v : values) names.push_back(name_of(v));
  return names;
}

const std::vector<monet::OptimizerKind> kOptimizers = {
    monet::OptimizerKind::kNone, monet::OptimizerKind::kSGD, monet::OptimizerKind::kSGDMomentum,
    monet::OptimizerKind::kAdam};
const std::vector<monet::PlanningLimit> kPlanningLimits = {monet::PlanningLimit::kWallClock,
                                                           monet::PlanningLimit::kWork};
const std::vector<monet::OptimizerUpdate> kOptimizerUpdates = {
    monet::OptimizerUpdate::kFused, monet::OptimizerUpdate::kAfterBackward};

// The optimizer of optimizer_kind_name's `name` ("sgd-momentum"); throws
// std::invalid_argument naming the known ones.
monet::OptimizerKind optimizer_kind(const std::string& name) {
  std::string known;
  for (monet::OptimizerKind k : kOptimizers) {
    if (name == monet::optimizer_kind_name(k)) return k;
    known += (known.empty() ? "" : ", ") + std::string(monet::optimizer_kind_name(k));
  }
  throw std::invalid_argument("unknown optimizer '" + name + "' (known: " + known + ")");
}

// PlanOptions' enum field `member` as a property read and set by the enum's names.
template <typename E>
void def_enum_property(py::class_<monet::PlanOptions>& options, const char* field,
                       E monet::PlanOptions::*member, const char* (*name_of)(E),
                       E (*from_name)(const std::string&)) {
  options.def_property(
      field,
      [member, name_of](const monet::PlanOptions& o) { return std::string(name_of(o.*member)); },
      [member, from_name](monet::PlanOptions& o, const std::string& name) {
        o.*member = from_name(name);
      });
}

// PlanOptions under its C++ field names; its enums as their names (monet/_planning.py
// checks the keywords and fills one in).
void bind_plan_options(py::module_& m) {
  using O = monet::PlanOptions;
  py::class_<O> options(m, "PlanOptions", "How to plan (libmonet's PlanOptions; bytes, seconds).");
  options.def(py::init<>())
      .def_readwrite("planner", &O::planner)
      .def_readwrite("budget", &O::budget)
      .def_readwrite("weight_decay", &O::weight_decay)
      .def_readwrite("reserved_bytes", &O::reserved_bytes)
      .def_readwrite("loss_bytes", &O::loss_bytes)
      .def_readwrite("time_limit_seconds", &O::time_limit_seconds)
      .def_readwrite("plan_file", &O::plan_file)
      .def_readwrite("cache_dir", &O::cache_dir)
      .def_readwrite("use_cache", &O::use_cache)
      .def_readwrite("progress", &O::progress);
  def_enum_property(options, "optimizer", &O::optimizer, monet::optimizer_kind_name,
                    optimizer_kind);
  def_enum_property(options, "optimizer_update", &O::optimizer_update, monet::optimizer_update_name,
                    monet::optimizer_update_from_name);
  def_enum_property(options, "planning_limit", &O::planning_limit, monet::planning_limit_name,
                    monet::planning_limit_from_name);
  m.attr("OPTIMIZERS") = names_of(kOptimizers, monet::optimizer_kind_name);
  m.attr("PLANNING_LIMITS") = names_of(kPlanningLimits, monet::planning_limit_name);
  m.attr("OPTIMIZER_UPDATES") = names_of(kOptimizerUpdates, monet::optimizer_update_name);
}

std::unique_ptr<monet::PlannedModel> make_planned_model(monet::Model model,
                                                        const monet::PlanOptions& o) {
  py::gil_scoped_release no_gil;
  return std::make_unique<monet::PlannedModel>(std::move(model), o);
}

monet::BudgetRange budget_range(const monet::Model& model, const monet::PlanOptions& o) {
  py::gil_scoped_release no_gil;
  return monet::budget_range(model, o);
}

// A Python callable `update(parameter)`, which steps the parameter from its .grad, as a
// fused update. It runs inside the planned backward, on whichever thread runs it: the GIL
// is taken for the call, and a Python exception comes back as std::runtime_error (the
// backward then fails with its message; nothing unwinds through the interpreter with an
// error still set). A gradient that is not the parameter's .grad (a data-parallel
// bucket's average) is its .grad for the call.
monet::PlannedModel::ParameterUpdateFn python_update(py::object update) {
  if (!PyCallable_Check(update.ptr())) throw py::type_error("use_update takes a callable");
  auto callable = std::shared_ptr<py::object>(new py::object(std::move(update)), [](py::object* f) {
    py::gil_scoped_acquire gil;
    delete f;
  });
  return [callable](const torch::Tensor& parameter, const torch::Tensor& gradient) {
    at::Tensor& grad = parameter.mutable_grad();
    const at::Tensor own = grad;
    if (!own.is_same(gradient)) grad = gradient;
    py::gil_scoped_acquire gil;
    try {
      (*callable)(parameter);
    } catch (py::error_already_set& e) {
      grad = own;
      throw std::runtime_error(std::string("the fused optimizer update failed: ") + e.what());
    }
    grad = own;
  };
}

void bind_planned_model(py::module_& m) {
  py::class_<monet::PlannedModel>(m, "PlannedModel", "A Model planned under a budget.")
      .def(py::init(&make_planned_model), py::arg("model"), py::arg("options"))
      .def("forward",
           py::overload_cast<const std::vector<torch::Tensor>&>(&monet::PlannedModel::forward),
           py::arg("inputs"), py::call_guard<py::gil_scoped_release>())
      .def("report", &monet::PlannedModel::report, py::return_value_policy::copy)
      .def("last_step", [](const monet::PlannedModel& p) { return step_dict(p.last_step()); })
      .def("save_plan", &monet::PlannedModel::save_plan, py::arg("path"))
      .def(
          "use_update",
          [](monet::PlannedModel& p, py::object update) {
            p.use_update(python_update(std::move(update)));
          },
          py::arg("update"),
          "update(parameter) steps one parameter from its .grad, inside the backward");
}

// A data-parallel rank from the Python layer: the plan's keywords, and the job's
// (monet/_distributed.py: where this rank is, the shard mode, the collectives' timeout).
std::unique_ptr<monet::DataParallel> make_data_parallel(monet::Model model,
                                                        const monet::PlanOptions& o,
                                                        const py::dict& job) {
  monet::Rendezvous where;
  where.master_addr = job["master_addr"].cast<std::string>();
  where.master_port = job["master_port"].cast<int>();
  where.world_size = job["world_size"].cast<int>();
  where.rank = job["rank"].cast<int>();
  monet::DataParallelOptions dp;
  dp.shard = monet::shard_mode_from_name(job["shard"].cast<std::string>());
  dp.timeout_seconds = job["timeout"].cast<double>();
  py::gil_scoped_release no_gil;
  monet::ProcessGroup group = monet::ProcessGroup::gloo(where, dp.timeout_seconds);
  return std::make_unique<monet::DataParallel>(std::move(model), o, std::move(group), dp);
}

// The same methods as PlannedModel's (monet.Plan and OptimizedModule run either), and the
// rank's place in the job.
void bind_data_parallel(py::module_& m) {
  using DP = monet::DataParallel;
  py::class_<DP>(m, "DataParallel", "A model planned on rank 0 and trained on every rank.")
      .def(py::init(&make_data_parallel), py::arg("model"), py::arg("options"), py::arg("job"))
      .def("forward", &DP::forward, py::arg("inputs"), py::call_guard<py::gil_scoped_release>())
      .def("report", [](DP& d) { return d.planned().report(); })
      .def("last_step", [](DP& d) { return step_dict(d.planned().last_step()); })
      .def(
          "save_plan", [](DP& d, const std::string& path) { d.planned().save_plan(path); },
          py::arg("path"))
      .def(
          "use_update",
          [](DP& d, py::object update) { d.use_update(python_update(std::move(update))); },
          py::arg("update"))
      .def("owns", &DP::owns, py::arg("parameter"))
      .def(
          "gather_to_rank_zero",
          [](DP& d, const py::bytes& bytes) {
            std::string text = bytes;
            std::vector<std::string> gathered;
            {
              py::gil_scoped_release no_gil;
              gathered = d.gather_to_rank_zero(text);
            }
            py::list out;
            for (const std::string& b : gathered) out.append(py::bytes(b));
            return out;
          },
          py::arg("bytes"), "Collective: every rank's bytes, on rank 0 (in rank order)")
      .def_property_readonly("rank", &DP::rank)
      .def_property_readonly("world_size", &DP::world_size)
      .def_property_readonly("shard", [](const DP& d) { return monet::shard_mode_name(d.shard()); })
      .def_property_readonly("bucket_buffer_bytes", &DP::bucket_buffer_bytes)
      .def_property_readonly("owned_parameter_bytes", &DP::owned_parameter_bytes);
}

// Progress text goes to `sink(warning, text)`, a Python callable, or back to stderr (None).
void set_progress_sink(py::object sink) {
  if (sink.is_none()) return monet::set_progress_sink({});
  // The callable may be dropped on a thread without the GIL: take it before.
  auto callable = std::shared_ptr<py::object>(new py::object(std::move(sink)), [](py::object* f) {
    py::gil_scoped_acquire gil;
    delete f;
  });
  monet::set_progress_sink([callable](bool warning, const std::string& text) {
    py::gil_scoped_acquire gil;
    try {
      (*callable)(warning, text);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("monet progress sink");
    }
  });
}

void bind_memory(py::module_& m) {
  m.def("memory_install", &monet::MemoryStats::install,
        "Puts monet's tracking allocator in front of CPU tensor allocations.");
  m.def("memory_current_bytes", &monet::MemoryStats::current_bytes);
  m.def("memory_peak_bytes", &monet::MemoryStats::peak_bytes);
  m.def("memory_reset_peak", &monet::MemoryStats::reset_peak);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "monet's C++ library: import, plan and run traced models under a memory budget.";
  register_errors();
  bind_plan_options(m);
  bind_report(m);
  bind_model(m);
  bind_planned_model(m);
  bind_data_parallel(m);
  bind_memory(m);
  m.def("budget_range", &budget_range, py::arg("model"), py::arg("options"),
        "The whole-step budgets (bytes) the model can be planned for.");
  m.def("set_progress_sink", &set_progress_sink, py::arg("sink"));
  m.def("default_cache_dir", &monet::default_cache_dir);
  m.def("planner_names", &monet::planner_names);
}
