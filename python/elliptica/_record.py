"""Read-only result records shared by the Python front ends (BEM set-up reports and solve
information, multigrid solve information)."""

import numpy as np


class Record:
    """A read-only result record (set-up report, solve information, mesh report): the values are
    attributes (``info.iterations``); ``record["name"]``, ``keys()`` and ``as_dict()`` give the
    same values by name."""

    __slots__ = ("_d",)

    def __init__(self, values):
        object.__setattr__(self, "_d", dict(values))

    def __getattr__(self, name):
        try:
            return self._d[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("result records are read-only")

    def __getitem__(self, name):
        return self._d[name]

    def __contains__(self, name):
        return name in self._d

    def keys(self):
        return self._d.keys()

    def as_dict(self):
        """A copy of the values as a dict."""
        return dict(self._d)

    def __dir__(self):
        return list(self._d)

    def __repr__(self):
        def show(v):
            if isinstance(v, np.ndarray):  # arrays by shape and dtype (their values can be long)
                return f"ndarray({v.shape}, {v.dtype})"
            return repr(v)
        return "Record(" + ", ".join(f"{k}={show(v)}" for k, v in self._d.items()) + ")"
