"""Training steps of several methods on one model, interleaved in one process and
measured with monet's tracking allocator (the Python benchmarks share it)."""
import time

import monet


def measure_interleaved(methods, optimizer, rounds, before, log=False, resident=None):
    """Runs 1 + `rounds` rounds, each a training step of every method in turn
    (zero_grad, the method's loss, backward, optimizer step); the first round is a
    warm-up. `methods`: name -> a function of no arguments that runs the forward and
    returns the loss (a method whose updates are fused into its backward leaves no
    gradient for the optimizer's step). `before`: tracked bytes alive before the model
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
                loss = forward()
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
    parser.add_argument("--optimizer", default="sgd-momentum", choices=("sgd-momentum", "adam"),
                        help="the optimizer every method steps (SGD: lr 0.01, momentum 0.9; "
                        "Adam: lr 1e-3)")
    parser.add_argument("--whole-step", action="store_true",
                        help="monet plans the whole step: the loss inside the plan (loss=, "
                        "target=) and the optimizer's updates fused into the backward "
                        "(optimizer=, the methods' one optimizer)")
    parser.add_argument("--time-limit", type=float, default=60)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    monet.install_memory_tracker()
    return args


def budget_curve(model, example, target, loss_fn, peers, args, before, config):
    """monet.optimize(model) at every budget ratio in args.budgets ("0.5,0.7"), then the
    training steps of plain PyTorch, of each of `peers` (name -> forward) and of monet at
    every budget with a plan, interleaved, all stepping one optimizer (args.optimizer).
    The loss is loss_fn(output, target); with args.whole_step monet's plans hold it and
    fuse the optimizer's updates into their backward, else the loss runs outside the plan
    and the optimizer steps after the backward. Prints a markdown table (peak, its ratio
    to PyTorch's, median s/step, overhead, within the budget) and writes the figures, with
    `config`, to args.json when given."""
    import json
    import statistics

    import torch

    if args.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    methods = {name: (lambda f=forward: loss_fn(f(example), target))
               for name, forward in {"pytorch": model, **peers}.items()}
    plans, resident = {}, {}
    for ratio in args.budgets.split(","):
        held = monet.current_memory()
        whole = {"optimizer": opt, "loss": loss_fn, "target": target} if args.whole_step else {
            "optimizer": args.optimizer}
        try:
            fast = monet.optimize(model, example, budget=ratio + "x", time_limit=args.time_limit,
                                  **whole)
        except monet.BudgetTooSmall as e:
            print(f"monet {ratio}x: no plan: {e}", flush=True)
            continue
        print(f"monet {ratio}x: {fast.plan}", flush=True)
        name = f"monet {ratio}x"
        methods[name] = ((lambda f=fast: f(example, target)) if args.whole_step else
                         (lambda f=fast: loss_fn(f(example), target)))
        plans[name] = fast.plan
        resident[name] = monet.current_memory() - held
    peaks, seconds = measure_interleaved(methods, opt, args.iters, before, log=True,
                                         resident=resident)
    result = {"config": {**config, "optimizer": args.optimizer, "whole_step": args.whole_step},
              "threads": torch.get_num_threads(), "methods": {}}
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
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
