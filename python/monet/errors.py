"""Exceptions raised by monet, with the details a caller acts on.

Every failure inside monet's C++ library reaches Python as an exception; none ends the
interpreter. Besides the classes below: a bad argument raises TypeError (wrong type) or
ValueError (wrong value: a budget, a shape, a planner or optimizer name, an input on
another device, a plan file that cannot be read); anything else (an ATen error while
running a plan) raises RuntimeError with LibTorch's message. A solve
whose child process fails is retried, then planned without the solver's optimum (its
plan is still checked against the budget); it does not raise.
"""


class MonetError(Exception):
    """Base class of monet's own exceptions."""


class BudgetTooSmall(MonetError, ValueError):
    """No plan fits the budget.

    Attributes:
        smallest_budget: the smallest whole-step budget (bytes) for which monet finds a
            plan, or None when it was not computed.
        proven_bound: a whole-step budget (bytes) below which no plan can exist, or None.
    """

    def __init__(self, message, smallest_budget=None, proven_bound=None):
        super().__init__(message)
        self.smallest_budget = smallest_budget
        self.proven_bound = proven_bound


class UnsupportedOperator(MonetError, ValueError):
    """The traced model uses an operator monet cannot import.

    Attributes:
        operator: the operator, e.g. "aten::stack".
        source: the Python source line that produced it ("file.py:12"), as the trace
            recorded it.
    """

    def __init__(self, message, operator="", source=""):
        super().__init__(message)
        self.operator = operator
        self.source = source


class PlanMismatch(MonetError, ValueError):
    """A plan made for another model or input shape, or an input of another shape than
    the one the model was planned for."""


class DistributedError(MonetError, RuntimeError):
    """A data-parallel step stopped: a collective failed or timed out (a rank died or
    hangs). The message names the rank, the step and the ranks that no longer answer."""
