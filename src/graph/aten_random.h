// Random draws of generic ATen calls (graph/aten_call.h): which operators draw random
// numbers, and a call's draws seeded by a node's seed, so that a recomputation, a re-running
// backward and a reference forward draw what the forward drew.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>

#include <cstdint>
#include <vector>

namespace monet {

/// Whether `schema`'s operator draws random numbers: it takes a generator (bernoulli,
/// rand, normal) or ATen tags it nondeterministic_seeded (randn_like, alpha_dropout).
bool draws_random(const c10::FunctionSchema& schema);

/// Whether a call's `arguments` ask for dropout in training inside the operator
/// (aten::lstm, gru, rnn_tanh: `dropout` > 0 between the layers and `train`), drawn from
/// the default generator.
bool drops_out(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& arguments);

/// For the span of one boxed call on `stack`, its draws seeded with `seed`, on the device
/// of `inputs` (the CPU for a call that reads none): each generator argument left at None
/// is a generator seeded so; an operator that takes none draws from the device's default
/// generator, seeded so for the call and put back to its state after, so the program's own
/// random stream is as it was. The operator locks the default generator while it draws,
/// so the lock is held only to seed and to restore: another thread drawing from the default
/// generator during the call would change the draws.
class SeededDraws {
 public:
  SeededDraws(const c10::FunctionSchema& schema, torch::jit::Stack* stack,
              const std::vector<at::Tensor>& inputs, uint64_t seed);
  ~SeededDraws();
  SeededDraws(const SeededDraws&) = delete;
  SeededDraws& operator=(const SeededDraws&) = delete;

 private:
  at::Generator default_generator_;  // undefined where the call takes a generator
  at::Tensor saved_state_;
};

}  // namespace monet
