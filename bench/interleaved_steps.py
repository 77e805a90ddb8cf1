"""Training steps of several methods on one model, interleaved in one process and
measured with monet's tracking allocator (the Python benchmarks share it)."""
import time

import monet


def measure_interleaved(methods, loss_of, optimizer, rounds, before, log=False):
    """Runs 1 + `rounds` rounds, each a training step of every method in turn
    (zero_grad, loss_of(forward), backward, optimizer step); the first round is a
    warm-up. `methods`: name -> forward. `before`: tracked bytes alive before the model
    was built. Returns (peaks, seconds): per name, the largest step peak above `before`
    (bytes) and the step times of the measured rounds (seconds)."""
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
            if i > 0:
                peaks[name] = max(peaks[name], m.peak_bytes - before)
                seconds[name].append(elapsed)
            if log:
                print(f"round {i} {name}: {elapsed:.2f} s, "
                      f"peak {(m.peak_bytes - before) / (1 << 20):.1f} MiB", flush=True)
    return peaks, seconds
