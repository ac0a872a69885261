"""Checks where the caller's data enters: each raises ValueError naming the argument."""

import numbers

import numpy as np


def positive_int(name, value):
    """Return ``value`` as an int, or raise if it is not a whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value}")
    return int(value)


def positive_real(name, value):
    """Return ``value`` as a float, or raise if it is not a finite real number > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def array(name, value, *, min_ndim=1, ndim=None, last=None):
    """Return ``value`` as a finite, non-empty float array (float64 unless it is float32)."""
    try:
        a = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        raise ValueError(f"{name} must hold real numbers, got dtype {a.dtype}")
    if a.dtype != np.float32:
        a = a.astype(np.float64, copy=False)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {a.shape}")
    if last is not None and a.shape[-1] != last:
        raise ValueError(f"{name} must have last dimension {last}, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return a


def shape(name, a, expected):
    if a.shape != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {a.shape}")


def batch(name, shape, expected):
    """Raise unless the leading dimensions ``shape`` broadcast to ``expected`` without growing it."""
    try:
        ok = np.broadcast_shapes(tuple(shape), tuple(expected)) == tuple(expected)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must have batch dimensions that broadcast to {tuple(expected)}, got {tuple(shape)}")
