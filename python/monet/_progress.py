"""monet's progress lines (profiling, planning, the solver) on Python's logging: logger
"monet", INFO for progress and WARNING for warnings. A status line that replaces
itself (profiling's node count) is drawn in place on stderr when stderr is a terminal
and the logger would show INFO, and logged once, finished, otherwise."""
import atexit
import logging
import sys

from . import _C

logger = logging.getLogger("monet")


class _Sink:
    def __init__(self):
        self._status = ""  # the status line being drawn (without its '\r')
        self._drawn = False

    def __call__(self, warning, text):
        if warning:
            logger.warning(text.strip())
            return
        if text.startswith("\r"):
            self._status = text[1:].rstrip()
            if sys.stderr.isatty() and logger.isEnabledFor(logging.INFO):
                sys.stderr.write("\r" + self._status)
                sys.stderr.flush()
                self._drawn = True
            return
        if self._status and text.strip() == "":
            if self._drawn:
                sys.stderr.write("\n")
            else:
                logger.info(self._status)
            self._status, self._drawn = "", False
            return
        for line in text.splitlines():
            if line.strip():
                logger.info(line.rstrip())


def install():
    _C.set_progress_sink(_Sink())
    # The sink is a Python object: drop it before the interpreter goes.
    atexit.register(_C.set_progress_sink, None)
