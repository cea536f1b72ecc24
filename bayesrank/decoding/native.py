"""UCB backward pass in C: a per-row scan of one sorted order, no K x K table.

For UCB scores under the identity link (RankUCB, GenRankUCB with a Gaussian model),
each backward step ::

    H(i) = max_j [V(j) + Ai_i + Bj_j + c ||Ui_i + Uj_j||]

is bounded, as in :mod:`bayesrank.decoding.prefix`, by the separable
``u_j + Ap_i`` with ``u_j = V(j) + Bj_j + c||Uj_j + mu||`` and
``Ap_i = Ai_i + c||Ui_i - mu||`` (triangle inequality, any shift mu; the same mu,
inflated by 64 machine epsilons against rounding).

**Exact.** The columns j (those with ``V(j) > -inf``) are sorted once per step by
``u_j`` descending. Each row i scans them in blocks of 32 and stops before the first block whose first (largest) ``u_j`` gives
``u_j + Ap_i < best(i)`` (less the slack): every later column's bound is lower still,
so none can beat the row's best and ``H(i) = best(i)``. Inside a block, a screen
without square roots skips the exact scores when no column can beat the best:
``g_j + Ai_i + c sqrt(s) >= t`` if and only if ``c^2 s >= r |r|`` with
``r = t - Ai_i - g_j`` (``s`` the squared norm in the Gram form
``|a|^2 + 2 a.b + |b|^2``; the screen widens ``c^2`` by a relative 1e-10 in float64,
1e-5 in float32, so rounding cannot drop a winner). The maxima are rescored with the
direct norm, as in the compiled search. Ties: some maximiser. Like the dense tables
(:func:`bayesrank.decoding.spec.dense_bonus`), the choice is made in the Gram form:
where a pair nearly cancels (``a_j ~ -b_i``) its norm carries an absolute error of
about ``sqrt(eps (|a|^2 + |b|^2))``, so two such pairs closer than that may be
ranked either way (about 3e-4 |a| in float32, 2e-8 |a| in float64).

**Cost.** Each row's scan stops at its own bound rather than at a window's, so fewer
pairs are scored than by the windowed search (about 11 % against 18 % of the dense
DP's on RankUCB after 20 lists at K = 3,000), and a pair costs a dot product and a
few vector operations (AVX2 and FMA where the CPU has them, picked when the module
loads; a plain build elsewhere). Rows are split over ``threads`` (default: the CPUs
this process may use, at most 8). Time O(L K^2 q) in the worst case (a bonus so wide
that nothing is pruned), memory O(K q).

**Availability.** The kernel is the C extension ``bayesrank.decoding._prefix_scan``, built at
install time when a C compiler is present (``setup.py``; the install succeeds without
one). :func:`ucb_backward_fast` uses it on the CPU backend when it is built and
:data:`USE_NATIVE` is true (``BAYESRANK_NATIVE=0`` in the environment sets it false),
and :func:`bayesrank.decoding.prefix.ucb_backward_prefix` otherwise. From traced code
it runs as an XLA FFI call (the extension also holds a handler for XLA's FFI C API,
registered on first use and checked once against the host call), or through
``jax.pure_callback`` where this jax's XLA does not take the handler; vmapped, one
instance after the other.

Example:
    >>> import numpy as np
    >>> from bayesrank.decoding.native import available, ucb_backward_native
    >>> zero = np.zeros((1, 2))
    >>> Ua, Ub = np.array([[[1.0, -1.0]]]), np.array([[[1.0, -2.0]]])
    >>> if available():
    ...     to_go, ptr, _ = ucb_backward_native(zero, zero, Ua, Ub, np.ones(1),
    ...                                         np.ones(2, bool))
    ...     print(to_go.tolist(), ptr.tolist())
    ... else:
    ...     print([2.0, 3.0], [[0, 1]])
    [2.0, 3.0] [[0, 1]]
"""

from __future__ import annotations

import logging
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_array
from bayesrank.decoding.checks import as_float
from bayesrank.decoding.host_chain import backward_in_jit
from bayesrank.decoding.prefix import ucb_backward_prefix

try:  # built at install time when a C compiler is present
    from bayesrank.decoding import _prefix_scan as _built
except ImportError:  # pragma: no cover - depends on the install
    _built = None

_log = logging.getLogger(__name__)

#: The version of ``bayesrank.decoding._prefix_scan`` this module was written for; a build of
#: another version (say, left over in an editable install after the C source
#: changed) is not used.
KERNEL_VERSION = 2


def _load():
    """The C extension, or None (with a warning if a stale build is found)."""
    mod = _built
    if mod is None:  # pragma: no cover - depends on the install
        return None
    found = getattr(mod, "KERNEL_VERSION", None)
    if found != KERNEL_VERSION:
        warnings.warn(
            f"bayesrank.decoding._prefix_scan is version {found}, expected {KERNEL_VERSION} (a "
            "stale build?): using the compiled-JAX search; rebuild with "
            "`pip install -e .`", RuntimeWarning, stacklevel=2)
        return None
    return mod


_prefix_scan = _load()

__all__ = [
    "KERNEL_VERSION", "USE_NATIVE", "available", "default_threads", "ffi_ready",
    "ffi_status", "in_use",
    "ucb_backward_fast",
    "ucb_backward_native", "ucb_backward_native_in_jit",
]

#: Whether :func:`ucb_backward_fast` uses the C kernel when it is built (read at trace
#: time). ``BAYESRANK_NATIVE=0`` in the environment sets it false at import.
USE_NATIVE = os.environ.get("BAYESRANK_NATIVE", "1").strip().lower() not in (
    "0", "false", "no", "off")


def available() -> bool:
    """Whether the C kernel ``bayesrank.decoding._prefix_scan`` was built and imports."""
    return _prefix_scan is not None


def default_threads() -> int:
    """Threads for the row scan: the CPUs this process may use, at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        n = os.cpu_count() or 1
    return max(1, min(8, n))


def _as_native_args(A, B, Ua, Ub, c, mask):
    """The arguments as C-contiguous arrays of one float dtype, shapes checked."""
    A, B, Ua, Ub, c = (check_array(x, name, finite=None, dtype=None)
                       for name, x in zip(("A", "B", "Ua", "Ub", "c"), (A, B, Ua, Ub, c)))
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise ValueError(f"A: expected shape (L-1, K) with L >= 2, K >= 1, got {A.shape}")
    Lm1, K = A.shape
    if B.shape != A.shape:
        raise ValueError(f"B: expected shape {A.shape} (as A), got {B.shape}")
    if Ua.ndim != 3 or Ua.shape[0] != Lm1 or Ua.shape[2] != K or Ua.shape[1] < 1:
        raise ValueError(f"Ua: expected shape ({Lm1}, q, {K}) with q >= 1, got {Ua.shape}")
    if Ub.shape != Ua.shape:
        raise ValueError(f"Ub: expected shape {Ua.shape} (as Ua), got {Ub.shape}")
    if c.shape != (Lm1,):
        raise ValueError(f"c: expected shape ({Lm1},), got {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError(f"c: expected finite bonus widths >= 0, got {c.tolist()}")
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.shape != (K,):
        raise ValueError(f"mask: expected a boolean array of shape ({K},), got "
                         f"{mask.dtype} {mask.shape}")
    dtype = np.float32 if all(x.dtype == np.float32 for x in (A, B, Ua, Ub)) else np.float64
    A, B, Ua, Ub, c = (np.ascontiguousarray(x, dtype) for x in (A, B, Ua, Ub, c))
    return A, B, Ua, Ub, c, np.ascontiguousarray(mask)


def ucb_backward_native(A, B, Ua, Ub, c, mask, *, threads: int | None = None):
    """Backward pass for identity-link UCB scores ``A_j + B_i + c ||Ua_j + Ub_i||``.

    The contract of :func:`bayesrank.decoding.prefix.ucb_backward_prefix` (exact; ties:
    some maximiser), on the host, by the C kernel (module docstring). Computes in
    float32 when A, B, Ua and Ub are all float32, in float64 otherwise.

    Args:
        A, B: (L-1, K); Ua, Ub: (L-1, q, K); c: (L-1,) >= 0; mask: (K,) bool.
        threads: threads for the row scan (default :func:`default_threads`).

    Returns:
        to_go (K,), ptr (L-1, K) int32 (0 where masked), pair_evals (L-1,) int64: pair
        scores computed per step (whole blocks, padding included).

    Raises:
        RuntimeError: the C kernel is not built (see :func:`available`).
        ValueError, TypeError: shapes or dtypes not as above.
    """
    if _prefix_scan is None:
        raise RuntimeError(
            "bayesrank.decoding._prefix_scan is not built (no C compiler at install time?): "
            "use bayesrank.decoding.prefix.ucb_backward_prefix")
    A, B, Ua, Ub, c, mask = _as_native_args(A, B, Ua, Ub, c, mask)
    threads = default_threads() if threads is None else int(threads)
    if not 1 <= threads <= 64:
        raise ValueError(f"threads: expected 1 to 64, got {threads}")
    Lm1, q, K = Ua.shape
    to_go = np.empty(K, A.dtype)
    ptr = np.empty((Lm1, K), np.int32)
    evals = np.empty(Lm1, np.int64)
    _prefix_scan.ucb_backward(Lm1, K, q, threads, A, B, Ua, Ub, c, mask, to_go, ptr,
                              evals)
    return to_go, ptr, evals


_FFI_TARGET = "bayesrank_ucb_backward"
_ffi_state: dict = {}


def _ffi_call(arrs, mask, threads: int):
    """The kernel as an XLA FFI call (XLA's own buffers, no copies, no Python)."""
    Lm1, K = arrs[0].shape
    out = (jax.ShapeDtypeStruct((K,), arrs[0].dtype),
           jax.ShapeDtypeStruct((Lm1, K), jnp.int32),
           jax.ShapeDtypeStruct((Lm1,), jnp.int32))
    return jax.ffi.ffi_call(_FFI_TARGET, out, vmap_method="sequential")(
        *arrs, mask, jnp.asarray(threads, jnp.int32))


def ffi_ready() -> bool:
    """Whether the kernel runs as an XLA FFI call: its handler registered with this
    jax and checked once on a small instance against the host call (the handler
    speaks XLA's FFI C API of the vendored header; a jax whose XLA rejects it, e.g.
    an older XLA speaking an older API version, gets ``jax.pure_callback`` instead).

    The fallback is a designed path, not an error: the same results, with the
    arguments copied (slower at catalogue scale). It is decided once per process and
    logged once at INFO level on the ``bayesrank.decoding.native`` logger, with the
    reason; ``ffi_status()`` returns it."""
    if "ok" not in _ffi_state:
        _ffi_state["ok"] = False
        if _prefix_scan is None:
            return False
        try:
            jax.ffi.register_ffi_target(_FFI_TARGET, _prefix_scan.ffi_handler,
                                        platform="cpu")
            rng = np.random.default_rng(0)
            probe = [rng.normal(size=s) for s in ((2, 5), (2, 5), (2, 3, 5), (2, 3, 5))]
            probe.append(np.ones(2))
            host = ucb_backward_native(*probe, np.ones(5, bool), threads=1)
            with jax.ensure_compile_time_eval():
                got = _ffi_call([jnp.asarray(x) for x in probe],
                                jnp.ones(5, bool), 1)
            want_dtype = jnp.asarray(probe[0]).dtype
            ok = np.allclose(np.asarray(got[0]), host[0].astype(want_dtype),
                             rtol=1e-5) and np.array_equal(np.asarray(got[1]), host[1])
            if not ok:
                raise RuntimeError("the FFI call disagrees with the host call")
            _ffi_state["ok"] = True
            _ffi_state["why"] = "registered and checked against the host call"
        except Exception as err:  # noqa: BLE001 - any failure: use the callback
            _ffi_state["why"] = (f"the C kernel's XLA FFI handler is not usable with "
                                 f"jax {jax.__version__} ({err}); using "
                                 "jax.pure_callback")
            _log.info("bayesrank: %s", _ffi_state["why"])
    return _ffi_state["ok"]


def ffi_status() -> tuple[bool, str]:
    """``(whether the FFI call is used, why)``, deciding it first if needed."""
    ok = ffi_ready()
    return ok, _ffi_state.get("why", "the C extension is not built")


def ucb_backward_native_in_jit(A, B, Ua, Ub, c, mask):
    """:func:`ucb_backward_native` from traced code, in the inputs' float dtype:
    ``(to_go (K,), ptr (L-1, K) int32, pair_evals (L-1,) int32)`` (counts clipped to
    the int32 range).

    As an XLA FFI call (:func:`ffi_ready`): XLA hands the kernel its buffers, with no
    copy and no Python in between; otherwise through ``jax.pure_callback`` (the
    arguments are copied, at a cost that grows with K; figures: docs/performance.md,
    "Why the code is written this way"). Vmapped:
    one instance after the other either way."""
    arrs = [as_float(x) for x in (A, B, Ua, Ub, c)]
    dtype = jnp.result_type(*arrs)
    arrs = [jnp.asarray(x, dtype) for x in arrs]
    mask = jnp.asarray(mask, bool)
    if ffi_ready():
        return _ffi_call(arrs, mask, default_threads())
    Lm1 = arrs[0].shape[0]
    to_go, ptr, ev = backward_in_jit(
        lambda *xs: ucb_backward_native(*xs[:5], np.asarray(xs[5], bool)),
        arrs[0].shape[1], Lm1 + 1, dtype, *arrs, mask)
    return to_go, ptr, jnp.minimum(ev, np.iinfo(np.int32).max).astype(jnp.int32)


def in_use() -> bool:
    """Whether :func:`ucb_backward_fast` runs the C kernel (built, :data:`USE_NATIVE`,
    CPU backend); read at trace time."""
    return USE_NATIVE and available() and jax.default_backend() == "cpu"


def ucb_backward_fast(A, B, Ua, Ub, c, mask):
    """The identity-link UCB backward pass the decoder uses: the C kernel
    (:func:`ucb_backward_native_in_jit`) on the CPU backend when it is built and
    :data:`USE_NATIVE` is true, else the compiled search
    :func:`bayesrank.decoding.prefix.ucb_backward_prefix`. Same contract; traceable."""
    if in_use():
        return ucb_backward_native_in_jit(A, B, Ua, Ub, c, mask)
    return ucb_backward_prefix(A, B, Ua, Ub, c, mask)
