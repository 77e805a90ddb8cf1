#include "planner/solver/solver_request.h"

#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace monet {
namespace {

// Bumped whenever the layout below changes: a solver process of another build refuses.
constexpr uint32_t kRequestVersion = 2;

// The scalar options of a branch and cut, as they travel.
struct WireOptions {
  double time_limit_seconds;
  int32_t search_limit;
  int32_t max_nodes;
  double relaxation_work_per_second;
  double search_work_per_second;
  int64_t min_iterations;
  double relative_gap;
  int32_t threads;
  int32_t root_cuts_max_columns;
  int32_t progress;
  int32_t primal_pricing;
  double relaxation_seconds;
  int64_t relaxation_iterations;
  int64_t presolve_max_nonzeros;
  int64_t relaxation_presolve_max_nonzeros;
};
static_assert(std::is_trivially_copyable_v<WireOptions>);
static_assert(sizeof(WireOptions) == 96,
              "no padding: every byte sent is a field's (bump kRequestVersion with any change)");

template <typename T>
void put(std::string* out, const T& value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
void put_vector(std::string* out, const std::vector<T>& v) {
  put(out, static_cast<uint64_t>(v.size()));
  if (!v.empty()) out->append(reinterpret_cast<const char*>(v.data()), sizeof(T) * v.size());
}

// Reads from a byte range, remembering whether any read ran past its end.
class Reader {
 public:
  Reader(const char* data, size_t size) : p_(data), end_(data + size) {}
  template <typename T>
  T get() {
    T value{};
    if (static_cast<size_t>(end_ - p_) < sizeof value) {
      ok_ = false;
      return value;
    }
    std::memcpy(&value, p_, sizeof value);
    p_ += sizeof value;
    return value;
  }
  template <typename T>
  std::vector<T> get_vector() {
    const auto n = get<uint64_t>();
    if (!ok_ || n > static_cast<size_t>(end_ - p_) / sizeof(T)) {
      ok_ = false;
      return {};
    }
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), p_, sizeof(T) * n);
    p_ += sizeof(T) * n;
    return v;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

}  // namespace

std::string solver_request_bytes(const Milp& m, const MilpOptions* options,
                                 RelaxationLimit relaxation) {
  const MilpOptions o = options ? *options : MilpOptions();
  std::string out;
  put(&out, kRequestVersion);
  put(&out, static_cast<int32_t>(options ? SolverTask::kBranchAndCut : SolverTask::kRelaxation));
  const WireOptions w{o.time_limit_seconds,
                      static_cast<int32_t>(o.search_limit),
                      o.max_nodes,
                      o.relaxation_work_per_second,
                      o.search_work_per_second,
                      o.min_iterations,
                      o.relative_gap,
                      o.threads,
                      o.root_cuts_max_columns,
                      o.progress ? 1 : 0,
                      static_cast<int32_t>(o.primal_pricing),
                      relaxation.seconds,
                      relaxation.iterations,
                      o.presolve_max_nonzeros,
                      relaxation.presolve_max_nonzeros};
  put(&out, w);
  put_vector(&out, o.warm_start);
  put_vector(&out, m.cost_);
  put_vector(&out, m.col_lb_);
  put_vector(&out, m.col_ub_);
  put_vector(&out, std::vector<char>(m.integer_.begin(), m.integer_.end()));
  put_vector(&out, m.row_lb_);
  put_vector(&out, m.row_ub_);
  put_vector(&out, m.row_start_);
  put_vector(&out, m.indices_);
  put_vector(&out, m.elements_);
  return out;
}

bool parse_solver_request(const char* data, size_t size, SolverRequest* out) {
  Reader in(data, size);
  if (in.get<uint32_t>() != kRequestVersion) return false;
  const auto task = in.get<int32_t>();
  if (task != static_cast<int32_t>(SolverTask::kBranchAndCut) &&
      task != static_cast<int32_t>(SolverTask::kRelaxation))
    return false;
  out->task = static_cast<SolverTask>(task);
  const auto w = in.get<WireOptions>();
  if (w.search_limit != static_cast<int32_t>(SearchLimit::kWallClock) &&
      w.search_limit != static_cast<int32_t>(SearchLimit::kWork))
    return false;
  if (w.primal_pricing != static_cast<int32_t>(PrimalPricing::kAutomatic) &&
      w.primal_pricing != static_cast<int32_t>(PrimalPricing::kDantzig))
    return false;
  MilpOptions& o = out->options;
  o.time_limit_seconds = w.time_limit_seconds;
  o.search_limit = static_cast<SearchLimit>(w.search_limit);
  o.max_nodes = w.max_nodes;
  o.relaxation_work_per_second = w.relaxation_work_per_second;
  o.search_work_per_second = w.search_work_per_second;
  o.min_iterations = w.min_iterations;
  o.relative_gap = w.relative_gap;
  o.threads = w.threads;
  o.root_cuts_max_columns = w.root_cuts_max_columns;
  o.progress = w.progress != 0;
  o.primal_pricing = static_cast<PrimalPricing>(w.primal_pricing);
  o.presolve_max_nonzeros = w.presolve_max_nonzeros;
  o.process = SolveProcess::kThisProcess;
  out->relaxation = {w.relaxation_seconds, w.relaxation_iterations,
                     w.relaxation_presolve_max_nonzeros};
  o.warm_start = in.get_vector<double>();
  Milp& m = out->milp;
  m.cost_ = in.get_vector<double>();
  m.col_lb_ = in.get_vector<double>();
  m.col_ub_ = in.get_vector<double>();
  const std::vector<char> integer = in.get_vector<char>();
  m.integer_.assign(integer.begin(), integer.end());
  m.row_lb_ = in.get_vector<double>();
  m.row_ub_ = in.get_vector<double>();
  m.row_start_ = in.get_vector<int>();
  m.indices_ = in.get_vector<int>();
  m.elements_ = in.get_vector<double>();
  const size_t columns = m.cost_.size();
  constexpr size_t kMostIndices = static_cast<size_t>(std::numeric_limits<int>::max());
  if (columns > kMostIndices || m.indices_.size() > kMostIndices) return false;
  if (!in.ok() || !in.at_end() || m.col_lb_.size() != columns || m.col_ub_.size() != columns ||
      m.integer_.size() != columns || m.row_ub_.size() != m.row_lb_.size() ||
      m.row_start_.size() != m.row_lb_.size() || m.indices_.size() != m.elements_.size())
    return false;
  for (const int c : m.indices_)
    if (c < 0 || static_cast<size_t>(c) >= columns) return false;
  for (size_t r = 0; r < m.row_start_.size(); ++r)
    if (m.row_start_[r] < 0 || static_cast<size_t>(m.row_start_[r]) > m.indices_.size() ||
        (r > 0 && m.row_start_[r] < m.row_start_[r - 1]))
      return false;
  return true;
}

}  // namespace monet
