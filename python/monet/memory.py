"""Memory measured by monet's tracking allocator: the CPU counterpart of
torch.cuda.max_memory_allocated. It counts the tensors allocated after it is installed,
by monet and by PyTorch alike (it sits in front of PyTorch's CPU allocator)."""
import contextlib
import dataclasses

from . import _C


def install_memory_tracker():
    """Puts the tracking allocator in front of CPU allocations (idempotent). Tensors
    created before are not counted: install it before building the model."""
    _C.memory_install()


def current_memory():
    """Bytes of tracked tensors alive now."""
    return _C.memory_current_bytes()


def peak_memory():
    """The most bytes alive at once since the last reset_peak_memory()."""
    return _C.memory_peak_bytes()


def reset_peak_memory():
    """Starts a new peak from what is alive now."""
    _C.memory_reset_peak()


@dataclasses.dataclass
class MemoryMeasurement:
    """What track_memory() measured (bytes)."""
    start_bytes: int = 0  # alive when the block began
    peak_bytes: int = 0   # the most alive at once during the block (absolute)
    end_bytes: int = 0    # alive when it ended

    @property
    def peak_increase(self):
        """The peak above what was alive when the block began."""
        return self.peak_bytes - self.start_bytes


@contextlib.contextmanager
def track_memory():
    """Measures the peak of a block:

        with monet.track_memory() as m:
            loss = criterion(fast(x), y); loss.backward()
        print(m.peak_bytes, m.peak_increase)
    """
    install_memory_tracker()
    reset_peak_memory()
    m = MemoryMeasurement(start_bytes=current_memory())
    try:
        yield m
    finally:
        m.peak_bytes = peak_memory()
        m.end_bytes = current_memory()
