#!/usr/bin/env bash
# The sanitizer job: builds libmonet, the CLI, the Python extension and two test programs
# with AddressSanitizer and UndefinedBehaviorSanitizer under build-sanitize/ (or
# $MONET_SANITIZE_BUILD_DIR), then runs a subset of the suite with them, where memory
# errors would show: every planner on the tiny zoo models and on imported fixtures (the
# tied decoder among them), the executor's random and rotated plans, the simulator's
# byte-exact checks, plan-file parsing and its mutations, the fuzzed models, fused
# optimizer updates, sharded data parallelism (ranks as threads), and the Python tests that
# load the extension (the ASan runtime preloaded into python3). Any
# sanitizer report fails the job.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MONET_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
"$root/scripts/install-deps.sh"
MONET_BUILD_DIR="$build" "$root/scripts/build.sh" -DMONET_SANITIZE=ON \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1 -DNDEBUG" \
  --target monet --target monet_python --target monet_sanitize_tests

# Every process's reports (the tests', the CLI's and the solver processes' the planner
# starts) go to files under $reports: a report in a process whose failure its parent
# survives (a solver process) fails the job too.
reports="$(cd "$build" && pwd)/sanitizer-reports"  # absolute: processes run elsewhere
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:detect_odr_violation=0:log_path=$reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
start=$(date +%s)
status=0
run() {  # run NAME COMMAND...: one part of the job; its failure fails the job
  echo "sanitize: $1" >&2
  shift
  "$@" || status=1
}

# Fixtures: imported models (the tied decoder among them) and the generated models.
run "import fixtures" /usr/bin/python3 "$root/tools/make_import_fixtures.py" \
  "$build/fixtures/import" gpt_tied_matmul gpt_tiny resnet18 mobilenet_v3_small generic_ops
run "fuzz fixtures" /usr/bin/python3 "$root/tools/make_fuzz_models.py" "$build/fixtures/fuzz" 300
run "training fixtures" /usr/bin/python3 "$root/tools/make_training_fixtures.py" \
  "$build/fixtures/training"

# The generated models (the longest part: 300 models, every planner, single-threaded)
# run beside the rest of the C++ subset, one on each core.
tests="$build/tests/monet_sanitize_tests"
fuzz_log="$build/sanitize-fuzz.log"
echo "sanitize: generated models (beside the rest; output follows)" >&2
"$tests" --gtest_brief=1 --gtest_filter="Fuzz.GeneratedModels*" >"$fuzz_log" 2>&1 &
fuzz_pid=$!

# The rest of the C++ subset: monet_sanitize_tests' own suites, and its tests over the
# tiny zoo on four models that cover the graph shapes (residual adds, inception
# concatenations, depthwise convolutions with in-place activations, skip connections
# across resolutions), sharded data parallelism (ranks as threads), the public API's
# plan files, costs and measurements and LibTorch modules traced from C++; then the imported fixtures made above.
run "monet_sanitize_tests" "$tests" --gtest_brief=1 --gtest_filter="$(tr -d ' \n' <<'FILTER'
Fuzz.*:CostModel.*:Executor.*:PlanValidator.*:PlanJson.*:NamedPlanner.*:GistPlanner.*:
FusedUpdates.*:Zoo/*/resnet18:Zoo/*/googlenet:Zoo/*/mobilenet_v2:Zoo/*/unet:ParameterShards.*:
Stages/ShardedState.*:ModelDescription.*:PlanFile.*:Measurement.*:OperatorCosts.*:Planning.*:
ModuleTrace.*
-Fuzz.GeneratedModels*:Zoo/FusedTraining.*
FILTER
)"
run "monet_sanitize_tests (imported)" "$tests" --gtest_brief=1 --gtest_filter="$(tr -d ' \n' <<'FILTER'
TorchscriptImport.HeadTiedThroughAViewOfTheEmbeddingPlansWithEveryPlanner:
TorchscriptImport.BadFileAndBadShapeGiveClearErrors:
Torchvision/ImportedTorchvision.*/resnet18:Torchvision/ImportedTorchvision.*/gpt_tiny:
Torchvision/ImportedTorchvision.*/gpt_tied_matmul:Torchvision/ImportedTorchvision.*/generic_ops:
Torchvision/ImportedTorchvision.*/mobilenet_v3_small
FILTER
)"
wait "$fuzz_pid" || status=1
cat "$fuzz_log" >&2

# The Python tests that load the extension, with the sanitizer runtimes loaded first;
# of the model corpus, the cases whose import paths no other part covers (lists of
# tensors into einsum and LSTM weights, a stacked LSTM split per layer, a dict output,
# integer tensors and views through generic fallbacks, a detached branch, a spatial
# transformer's channel view, the one-line refusals, instance norm's running statistics
# written out and a count buffer read, a 1-D input through the CLI); of the fused updates, the Python
# update called from inside the backward (its errors included, then a step that succeeds;
# the state_dict continuation plans under the work limit, which takes over 20 min with
# the sanitizers, and runs in the main suite).
preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
for part in errors shared_parameters "model_corpus -k einsum_attention or lstm_lm or dict_output or integer_tensor_ops or expanded_bag or detached_features or spatial_transformer or cannot_train or running_statistics or value_per_sample" \
            "fused_updates -k refused or error_in_the_update" model_forms \
            "architectures -k fourier_layer or step_count or distillation" \
            "loss_in_plan -k probabilities or padding"; do
  read -r name filter <<<"$part"
  run "python_$name" env LD_PRELOAD="$preload" PYTHONPATH="$build/python" \
    MONET_SOURCE_DIR="$root" MONET_BINARY="$build/src/monet" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider "$root/tests/python/test_$name.py" \
    ${filter:+-k "${filter#-k }"}
done
if compgen -G "$reports/*" >/dev/null; then
  echo "sanitize: sanitizer reports:" >&2
  cat "$reports"/* >&2
  status=1
fi
echo "sanitize: $( [ $status -eq 0 ] && echo clean || echo FAILED ) in $(( $(date +%s) - start )) s" >&2
exit $status
