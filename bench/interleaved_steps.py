"""Training steps of several methods on one model, interleaved in one process and
measured with monet's tracking allocator (the Python benchmarks share it)."""
import time

import monet


def measure_interleaved(methods, loss_of, optimizer, rounds, before, log=False, resident=None):
    """Runs 1 + `rounds` rounds, each a training step of every method in turn
    (zero_grad, loss_of(forward), backward, optimizer step); the first round is a
    warm-up. `methods`: name -> forward. `before`: tracked bytes alive before the model
    was built. `resident`: name -> bytes a method holds between its steps apart from the
    model (a monet model's copies of trace constants), left out of the other methods'
    peaks. Returns (peaks, seconds): per name, the largest step peak above `before` less
    the other methods' resident bytes (bytes) and the step times of the measured rounds
    (seconds)."""
    resident = resident or {}
    peaks = {k: 0 for k in methods}
    seconds = {k: [] for k in methods}
    for i in range(1 + rounds):
        for name, forward in methods.items():
            optimizer.zero_grad(set_to_none=True)
            with monet.track_memory() as m:
                t0 = time.perf_counter()
                loss = loss_of(forward)
                loss.backward()
                optimizer.step()
                elapsed = time.perf_counter() - t0
                del loss
            others = sum(b for k, b in resident.items() if k != name)
            peak = m.peak_bytes - before - others
            if i > 0:
                peaks[name] = max(peaks[name], peak)
                seconds[name].append(elapsed)
            if log:
                print(f"round {i} {name}: {elapsed:.2f} s, peak {peak / (1 << 20):.1f} MiB",
                      flush=True)
    return peaks, seconds


def parse_curve_arguments(parser, budgets):
    """Adds budget_curve's options (--budgets, default `budgets`; --time-limit; --json) to
    `parser`, parses the command line, sends monet's progress to logging and installs
    monet's tracking allocator (before the caller builds its model). Returns the args."""
    import logging

    parser.add_argument("--budgets", default=budgets)
    parser.add_argument("--time-limit", type=float, default=60)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    monet.install_memory_tracker()
    return args


def budget_curve(model, example, loss_of, peers, budgets, time_limit, rounds, before, config,
                 json_path=None):
    """monet.optimize(model) at every budget ratio in `budgets` (strings, "0.5"), then the
    training steps of plain PyTorch, of each of `peers` (name -> forward) and of monet at
    every budget with a plan, interleaved (SGD-momentum, shared by all). Prints a markdown
    table (peak, its ratio to PyTorch's, median s/step, overhead, within the budget) and
    writes the figures, with `config`, to `json_path` when given."""
    import json
    import statistics

    import torch

    methods = {"pytorch": model, **peers}
    plans, resident = {}, {}
    for ratio in budgets:
        held = monet.current_memory()
        try:
            fast = monet.optimize(model, example, budget=ratio + "x", optimizer="sgd-momentum",
                                  time_limit=time_limit)
        except monet.BudgetTooSmall as e:
            print(f"monet {ratio}x: no plan: {e}", flush=True)
            continue
        print(f"monet {ratio}x: {fast.plan}", flush=True)
        methods[f"monet {ratio}x"] = fast
        plans[f"monet {ratio}x"] = fast.plan
        resident[f"monet {ratio}x"] = monet.current_memory() - held
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    peaks, seconds = measure_interleaved(methods, loss_of, opt, rounds, before, log=True,
                                         resident=resident)
    result = {"config": config, "threads": torch.get_num_threads(), "methods": {}}
    base_peak, base_s = peaks["pytorch"], statistics.median(seconds["pytorch"])
    print("| method | step peak (B) | of PyTorch's | s/step | overhead | within budget |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in methods:
        s = statistics.median(seconds[name])
        budget = plans[name].budget if name in plans else None
        result["methods"][name] = {"peak_bytes": peaks[name], "median_seconds": s,
                                   "budget_bytes": budget}
        within = "" if budget is None else ("yes" if peaks[name] <= budget else "NO")
        print(f"| {name} | {peaks[name]} | {peaks[name] / base_peak:.3f} | {s:.2f} | "
              f"{s / base_s - 1:+.1%} | {within} |")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f, indent=2)
