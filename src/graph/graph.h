// Graph: the single description of a model, a DAG of forward operators over typed,
// shaped tensors (Values). Parameters and buffers are distinct values; the graph ends in
// one loss node producing a scalar. Nodes are stored in a topological order: a node may
// only read values that exist when it is added, and add_node() infers and checks the
// output shape at once. validate() re-checks everything (for graphs that were rewired).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/op_kind.h"
#include "graph/parameter_init.h"

namespace monet {

/// Thrown for malformed graphs; the message names the node or value at fault.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ValueKind {
  kInput,       // data fed each iteration (images)
  kTarget,      // labels / masks fed each iteration
  kParameter,   // trainable weight; receives a gradient
  kBuffer,      // non-trainable state (batch-norm running statistics)
  kActivation,  // produced by a node
};
const char* value_kind_name(ValueKind kind);

/// When a training step's optimizer updates the parameters: what every plan, simulation
/// and memory bound for the graph assumes about parameter gradients.
enum class UpdateMode {
  /// Every gradient exists when the backward ends; the optimizer steps afterwards.
  kAfterBackward,
  /// Each parameter is updated, and its gradient freed, right after the last instruction
  /// that uses it (its node's last backward part, every use of a shared parameter
  /// counted): gradients never all exist together.
  kFused,
};
/// "after-backward", "fused".
const char* update_mode_name(UpdateMode mode);
/// Throws std::invalid_argument naming the known values for any other name.
UpdateMode update_mode_from_name(const std::string& name);

struct Value {
  int id = -1;
  std::string name;
  ValueKind kind = ValueKind::kActivation;
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
  int producer = -1;           // node id for activations, -1 otherwise
  std::vector<int> consumers;  // node ids reading this value, in graph order
  InitSpec init;               // parameters and buffers only

  int64_t numel() const;
  /// Size of the tensor in bytes (numel * element size).
  int64_t bytes() const;
};

struct Node {
  int id = -1;
  OpKind op = OpKind::kReLU;
  std::string name;  // unique, e.g. "layer1.0.conv1"
  std::vector<int> inputs;
  int output = -1;  // every operator has exactly one output value
  OpAttrs attrs;
};

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  /// The model's floating type (float32 by default, or float64): the type of its
  /// parameters, buffers and floating inputs and of every specialised operator's output,
  /// so that each value's bytes() are what its tensor takes when the model runs. Set it
  /// before adding any value; throws GraphError for another type or once values exist.
  at::ScalarType floating_dtype() const { return floating_dtype_; }
  void set_floating_dtype(at::ScalarType dtype);

  /// An input or target of `dtype` (the graph's floating type when not given).
  int add_input(const std::string& name, std::vector<int64_t> shape,
                std::optional<at::ScalarType> dtype = std::nullopt,
                ValueKind kind = ValueKind::kInput);
  int add_parameter(const std::string& name, std::vector<int64_t> shape, InitSpec init);
  /// A buffer of `dtype` (the graph's floating type when not given: an integer one is a
  /// count read by generic operators, batch norm's num_batches_tracked).
  int add_buffer(const std::string& name, std::vector<int64_t> shape, InitSpec init,
                 std::optional<at::ScalarType> dtype = std::nullopt);
  /// Adds a node and its output value; returns the output value id. Throws GraphError
  /// if an input does not exist or shapes do not fit the operator.
  int add_node(OpKind op, const std::string& name, std::vector<int> inputs, OpAttrs attrs = {});

  /// Replaces input `slot` of `node` without checks (for graph rewrites). Call
  /// validate() afterwards.
  void rewire_input(int node, size_t slot, int value);

  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Value& value(int id) const;
  const Node& node(int id) const;
  /// Replaces generic node `id`'s call by `call`, the same operator on the same shapes
  /// probed again (copy_views_where_needed turns views into copies).
  void set_aten_call(int id, std::shared_ptr<const AtenCall> call);

  /// Value ids of a kind, in creation order.
  std::vector<int> values_of_kind(ValueKind kind) const;
  std::vector<int> parameters() const { return values_of_kind(ValueKind::kParameter); }
  /// The loss node's output value; throws GraphError if the graph has none.
  int loss_value() const;

  /// Node ids in a topological order (Kahn's algorithm, ties by id); throws GraphError
  /// naming a node on a cycle.
  std::vector<int> topological_order() const;
  /// Full check: ids, dangling inputs, cycles, shapes re-inferred, a single scalar loss
  /// at the end, unique names. Throws GraphError with a specific message.
  void validate() const;

  /// When the step updates the parameters (default kAfterBackward). Not part of the
  /// fingerprint: it changes which tensors are alive, not what any operator computes, so
  /// profiled costs hold for both modes; plans record it.
  UpdateMode update_mode() const { return update_mode_; }
  void set_update_mode(UpdateMode mode) { update_mode_ = mode; }

  int64_t parameter_count() const;
  /// Nodes on the generic ATen path (OpKind::kAten).
  int64_t generic_node_count() const;
  /// Total bytes of all activation values (every node output, nothing freed).
  int64_t activation_bytes() const;
  int64_t parameter_bytes() const;
  /// Bytes of the constant tensors generic operators take (attrs.aten: Swin's attention
  /// masks), each storage once. They live as long as the graph.
  int64_t constant_bytes() const;

  /// Stable 64-bit FNV-1a hash, as 16 hex digits, of operators, attributes, wiring,
  /// shapes and dtypes. Names are not included: two graphs that compute the same thing
  /// on the same shapes share a fingerprint.
  std::string fingerprint() const;

  /// Readable listing: one line per node with its output shape and bytes.
  std::string to_string() const;

 private:
  int add_value(Value v);
  int add_state(ValueKind kind, const std::string& name, std::vector<int64_t> shape, InitSpec init);
  void check_new_name(const std::string& name) const;

  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  UpdateMode update_mode_ = UpdateMode::kAfterBackward;
  at::ScalarType floating_dtype_ = at::kFloat;
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace monet
