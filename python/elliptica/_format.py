"""Values in error messages: NumPy scalars as the plain Python numbers they hold."""

import numpy as np

__all__ = ["show"]


def show(value):
    """``repr(value)`` for a message, with NumPy scalars, also inside tuples and lists, shown as
    the Python values they hold: ``0.0``, not NumPy 2's ``np.float64(0.0)``; ``'gmres'``, not
    ``np.str_('gmres')``. Other values (arrays included) as ``repr``."""
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, tuple):
        inner = ", ".join(show(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return repr(value)
