"""Array files: NumPy .npy and text tables, through the C++ reader/writer."""

import os

import numpy as np

from . import _core
from ._core import InvalidArgumentError

__all__ = ["read_array", "write_array"]


def read_array(path):
    """Reads an array file and returns a float64 NumPy array.

    ``.npy`` files (format 1.0/2.0/3.0, little-endian float64/float32/int32/int64, C order) are
    recognised by their magic string; anything else is read as a whitespace/comma separated
    text table (``#`` starts a comment). A 1-D file gives shape (N,), a table (rows, cols).

    Raises
    ------
    FileError (an OSError)
        Missing, unreadable, truncated or malformed file, unsupported dtype, Fortran order,
        ragged text rows, non-numeric token. The message names the file and the problem.
    """
    return _core.read_array(os.fspath(path))


def write_array(path, array):
    """Writes a 1-D or 2-D array as ``.npy`` (if ``path`` ends in ``.npy``) or as CSV text
    (17 significant digits, one row a line). Atomic: a temporary file in the same folder is
    renamed into place, so a failed write leaves nothing behind.

    Raises
    ------
    InvalidArgumentError (a ValueError)
        The array is not 1-D or 2-D real numbers.
    FileError (an OSError)
        The file cannot be written.
    """
    if np.iscomplexobj(array):
        raise InvalidArgumentError("write_array: array must be real, got a complex array")
    try:
        a = np.ascontiguousarray(array, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"write_array: not a numeric array: {e}") from None
    if a.ndim not in (1, 2):
        raise InvalidArgumentError(f"write_array: array must be 1-D or 2-D, got shape {a.shape}")
    return _core.write_array(os.fspath(path), a)
