"""The C UCB backward pass (:mod:`bayesrank.decoding.native`) against a plain NumPy dense
backward DP written from the definition (``test_decode_prefix._dense_backward``), on
the same random instances as the compiled search: early (wide bonus) and late
(narrow bonus), ties, masks, negative w, zero bonus, RankUCB's own scores; float64 and
float32; one or more threads; from traced code. Then the dispatch and the catalogue
of bad inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_prefix import CASES, _dense_backward, _instance

from bayesrank.decoding import native
from bayesrank.decoding.native import (
    ucb_backward_fast,
    ucb_backward_native,
    ucb_backward_native_in_jit,
)
from bayesrank.decoding.prefix import ucb_backward_prefix

pytestmark = [
    pytest.mark.skipif(
        not native.available(),
        reason="bayesrank.decoding._prefix_scan is not built (no C compiler at install time)"),
    pytest.mark.skipif(
        jax.default_backend() != "cpu",
        reason=f"the C kernel is a CPU kernel; the backend is {jax.default_backend()}"),
]


#: jax.ffi arrived in jax 0.5; before it the kernel runs through pure_callback only
needs_ffi = pytest.mark.skipif(
    not hasattr(jax, "ffi"),
    reason=f"jax {jax.__version__} has no jax.ffi: the C kernel runs through pure_callback")


def _assert_exact(inst, to_go, ptr, rtol):
    """Values to go equal the dense DP's; each pointer attains its row's maximum and
    points at an unmasked item."""
    A, B, Ua, Ub, c, mask = (np.asarray(x, np.float64) if x.dtype != bool else x
                             for x in map(np.asarray, inst))
    H, tables = _dense_backward(A, B, Ua, Ub, c, mask)
    to_go, ptr = np.asarray(to_go, np.float64), np.asarray(ptr)
    assert np.array_equal(np.isfinite(to_go), mask)
    np.testing.assert_allclose(to_go[mask], H[mask], rtol=rtol, atol=rtol)
    rows = np.flatnonzero(mask)
    for l, S in tables.items():
        np.testing.assert_allclose(S[rows, ptr[l, rows]], S[rows].max(axis=1),
                                   rtol=rtol, atol=rtol)
        assert mask[ptr[l, rows]].all()
        assert np.all(ptr[l, ~mask] == 0)


@pytest.mark.parametrize("K", [1, 2, 7, 31, 33, 300, 700])
@pytest.mark.parametrize("case", CASES)
def test_backward_equals_the_dense_dp(case, K):
    """float64: the dense DP's values to 1e-10 relative (K = 1: a single item; 2 to
    33: one block of 32 columns, padded, and just past it; 700: many blocks)."""
    inst = _instance(case, K)
    to_go, ptr, evals = ucb_backward_native(*inst)
    _assert_exact(inst, to_go, ptr, 1e-10)
    assert to_go.dtype == np.float64 and ptr.dtype == np.int32
    assert np.all(evals > 0) or not inst[-1].any()


@pytest.mark.parametrize("case", ["early", "late", "ties", "mask", "policy-early"])
def test_float32_equals_the_dense_dp_of_the_rounded_inputs(case):
    """float32 inputs run the float32 kernel: the float64 dense DP of the same
    (rounded) inputs, to float32 precision."""
    inst = _instance(case, 700)
    inst32 = tuple(np.asarray(x, np.float32) if x.dtype != bool else x for x in inst)
    to_go, ptr, _ = ucb_backward_native(*inst32)
    assert to_go.dtype == np.float32
    _assert_exact(inst32, to_go, ptr, 2e-5)


def test_no_item_shown_gives_minus_infinity_everywhere():
    """All items masked: every value to go is -inf and every pointer 0, as in the
    compiled search; one item left: every step points at it."""
    A, B, Ua, Ub, c, _ = _instance("early", 50)
    to_go, ptr, evals = ucb_backward_native(A, B, Ua, Ub, c, np.zeros(50, bool))
    assert np.all(to_go == -np.inf) and np.all(ptr == 0) and np.all(evals == 0)
    one = np.zeros(50, bool)
    one[17] = True
    to_go, ptr, _ = ucb_backward_native(A, B, Ua, Ub, c, one)
    assert np.isfinite(to_go[17]) and np.all(ptr[:, 17] == 17)
    _assert_exact((A, B, Ua, Ub, c, one), to_go, ptr, 1e-10)


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_threads_split_rows_without_changing_the_result(threads):
    """Rows are independent: any number of threads gives the one-thread result, bit
    for bit, pair counts included."""
    inst = _instance("policy-early", 700)
    one = ucb_backward_native(*inst, threads=1)
    many = ucb_backward_native(*inst, threads=threads)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


def test_early_rounds_score_fewer_pairs_than_the_windowed_search():
    """Each row stops at its own bound, not at a window's: on RankUCB's early scores
    fewer pairs are scored than by the compiled search, and more than one block
    (32 columns) per row and step, i.e. the bound does not stop every row at once."""
    inst = _instance("policy-early", 700)
    in_c = ucb_backward_native(*inst)[2].sum()
    windowed = np.asarray(ucb_backward_prefix(*inst)[2]).sum()
    assert 3 * 700 * 32 < in_c < windowed


def _model_pair_count(A, B, Ua, Ub, c, mask, block=32):
    """The pair scores of the per-row scan, from its definition in plain NumPy (the
    module docstring): per step, rows start from their score with the column of the
    highest bound, visit the columns by bound in blocks and stop at the first block
    whose bound falls below their best; every visited block counts in full."""
    Lm1, K = A.shape
    slack = 64 * np.finfo(np.float64).eps
    H = np.zeros(K)
    counts = []
    for l in range(Lm1 - 1, -1, -1):
        V = np.where(mask, H, -np.inf)
        Ai, Bj, Ui, Uj = B[l], A[l], Ub[l].T, Ua[l].T
        s = np.arange(0, K, max(1, K // 256))
        ma, mb = Ui[s].mean(0), -Uj[s].mean(0)
        cands = [np.zeros_like(ma), ma, mb, 0.5 * (ma + mb)]
        mu = cands[int(np.argmin([np.linalg.norm(Ui[s] - m, axis=1).sum()
                                  + np.linalg.norm(Uj[s] + m, axis=1).sum()
                                  for m in cands]))]
        src = np.flatnonzero(V > -np.inf)
        u = V[src] + Bj[src] + c[l] * np.linalg.norm(Uj[src] + mu, axis=1)
        order = src[np.argsort(-u, kind="stable")]
        u = np.sort(u)[::-1]
        S = V[None, :] + Ai[:, None] + Bj[None, :] + c[l] * np.linalg.norm(
            Ui[:, None, :] + Uj[None, :, :], axis=2)
        n = 0
        for i in np.flatnonzero(mask):
            Ap = Ai[i] + c[l] * np.linalg.norm(Ui[i] - mu)
            best = S[i, order[0]]
            for jb in range(0, len(order), block):
                if u[jb] + Ap < best - slack * (1 + abs(best)):
                    break
                n += block
                best = max(best, S[i, order[jb:jb + block]].max())
        counts.append(n)
        H = np.where(mask, S.max(axis=1), -np.inf)
    return np.array(counts[::-1])


@pytest.mark.parametrize("case", ["early", "late", "mask", "policy-early", "policy-late"])
def test_pair_counts_follow_the_scan_definition(case):
    """The reported pair scores per step are those of a plain-NumPy model of the scan
    (within 2 %: rounding may move a row's stop by a block)."""
    inst = _instance(case, 300)
    want = _model_pair_count(*inst)
    got = ucb_backward_native(*inst)[2]
    np.testing.assert_allclose(got, want, rtol=0.02)


def test_from_traced_code_jit_and_vmap():
    """Under jit the callback gives the host result; under vmap, each instance's."""
    insts = [_instance(case, 120) for case in ("early", "late", "mask")]
    for inst in insts:
        host = ucb_backward_native(*inst)
        traced = jax.jit(ucb_backward_native_in_jit)(*inst)
        np.testing.assert_array_equal(np.asarray(traced[0]), host[0])
        np.testing.assert_array_equal(np.asarray(traced[1]), host[1])
        np.testing.assert_array_equal(np.asarray(traced[2]), host[2])
    stacked = [jnp.stack([jnp.asarray(x[k]) for x in insts]) for k in range(6)]
    to_go, ptr, _ = jax.jit(jax.vmap(ucb_backward_native_in_jit))(*stacked)
    for r, inst in enumerate(insts):
        _assert_exact(inst, to_go[r], ptr[r], 1e-10)


@needs_ffi
def test_xla_ffi_call_and_pure_callback_agree(monkeypatch):
    """The kernel as an XLA FFI call (the default here) and through
    ``jax.pure_callback`` (where a jax's XLA rejects the handler) give the host
    result, under jit and vmap."""
    assert native.ffi_ready()
    insts = [_instance(case, 150) for case in ("early", "neg_w", "ties", "mask")]
    stacked = [jnp.stack([jnp.asarray(x[k]) for x in insts]) for k in range(6)]
    via_ffi = jax.jit(jax.vmap(lambda *a: ucb_backward_native_in_jit(*a)))(*stacked)
    monkeypatch.setitem(native._ffi_state, "ok", False)
    via_cb = jax.jit(jax.vmap(lambda *a: ucb_backward_native_in_jit(*a)))(*stacked)
    for r, inst in enumerate(insts):
        host = ucb_backward_native(*inst)
        for out in (via_ffi, via_cb):
            np.testing.assert_array_equal(np.asarray(out[0][r]), host[0])
            np.testing.assert_array_equal(np.asarray(out[1][r]), host[1])
            np.testing.assert_array_equal(np.asarray(out[2][r]), host[2])


@needs_ffi
def test_an_unusable_ffi_handler_falls_back_logged_once(monkeypatch, caplog):
    """If registering the handler fails (an XLA that does not take it, as jax 0.11's
    did on a GPU machine), ffi_ready says so once, logged at INFO (no warning, which
    warnings-as-errors would turn into a failure), and traced calls use the callback
    with the host call's results."""
    def refuse(*a, **k):
        raise RuntimeError("no such API version")

    monkeypatch.setattr(native, "_ffi_state", {})
    monkeypatch.setattr(jax.ffi, "register_ffi_target", refuse)
    import warnings

    with warnings.catch_warnings(), caplog.at_level("INFO", "bayesrank.decoding.native"):
        warnings.simplefilter("error")
        assert not native.ffi_ready()
        assert not native.ffi_ready()  # decided once
    logged = [r for r in caplog.records if "no such API version" in r.getMessage()]
    assert len(logged) == 1
    ok, why = native.ffi_status()
    assert not ok and "no such API version" in why
    inst = _instance("early", 40)
    got = jax.jit(lambda *a: ucb_backward_native_in_jit(*a))(*inst)
    np.testing.assert_array_equal(np.asarray(got[0]), ucb_backward_native(*inst)[0])


BAD_FFI = [
    (5, lambda m: m.astype(jnp.int32), "mask"),          # mask not bool
    (2, lambda u: u[:, :2], "Ua"),                       # q differs from Ub's
    (4, lambda c: c[:1], "c"),                           # c too short
    (0, lambda a: a.astype(jnp.float32), "A"),           # float types mixed
    (6, lambda t: t.astype(jnp.int64), "threads"),       # threads not int32
]


@needs_ffi
@pytest.mark.parametrize("pos, spoil, what", BAD_FFI)
def test_ffi_handler_refuses_mismatched_buffers(pos, spoil, what):
    """The handler checks every buffer's type and shape and fails the call (never
    reads past a buffer) when one does not match."""
    assert native.ffi_ready()
    inst = [jnp.asarray(x) for x in _instance("early", 20)] + [jnp.asarray(1, jnp.int32)]
    inst[pos] = spoil(inst[pos])
    Lm1, K = inst[0].shape
    out = (jax.ShapeDtypeStruct((K,), inst[0].dtype),
           jax.ShapeDtypeStruct((Lm1, K), jnp.int32),
           jax.ShapeDtypeStruct((Lm1,), jnp.int32))
    call = jax.ffi.ffi_call(native._FFI_TARGET, out)
    with pytest.raises(Exception, match="bayesrank_ucb_backward: expected A, B"):
        jax.block_until_ready(call(*inst))


def test_fast_dispatch_falls_back_to_the_compiled_search(monkeypatch):
    """``ucb_backward_fast`` takes the C kernel when it is built and enabled, and the
    compiled search otherwise (not built, or ``USE_NATIVE`` false): same values."""
    inst = _instance("early", 300)
    calls = []
    real = native.ucb_backward_native_in_jit

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(native, "ucb_backward_native_in_jit", spy)
    fast = jax.jit(lambda *a: ucb_backward_fast(*a))(*inst)  # a new trace each
    assert calls == [1]
    monkeypatch.setattr(native, "USE_NATIVE", False)
    compiled = jax.jit(lambda *a: ucb_backward_fast(*a))(*inst)
    monkeypatch.setattr(native, "USE_NATIVE", True)
    monkeypatch.setattr(native, "_prefix_scan", None)
    assert not native.available()
    unbuilt = jax.jit(lambda *a: ucb_backward_fast(*a))(*inst)
    assert calls == [1]
    for other in (compiled, unbuilt):
        np.testing.assert_allclose(np.asarray(other[0]), np.asarray(fast[0]),
                                   rtol=1e-10)
    with pytest.raises(RuntimeError, match="not built"):
        ucb_backward_native(*inst)


def test_rankucb_selects_the_dense_dp_list_through_the_c_kernel():
    """RankUCB at K = 600 (above the thresholds: "auto" takes the C kernel) selects a
    list whose value under its own scores equals the dense decoder's best."""
    import bayesrank as br
    from bayesrank.decoding import dispatch as decoder

    env = br.RankingEnv.paper(seed=3, K=600, L=4, d=10)
    pol = br.RankUCB(items=env.items, w=env.w, seed=0)
    rng = np.random.default_rng(0)
    lists = rng.integers(0, 600, size=(40, 4))
    pol.update(lists, np.asarray(env.sample(jax.random.key(0), lists)))
    assert decoder.use_fast(pol.core.tables.spec(False), 600)
    tabs = pol.core.tables
    pol.select()
    rest = tabs.rest(pol._last.params, pol.state.items)
    A, B, Ua, Ub, c = (np.asarray(x, np.float64) for x in tabs.factors(rest))
    H, _ = _dense_backward(A, B, Ua, Ub, c, np.ones(600, bool))
    to_go, _, _ = ucb_backward_native(A, B, Ua, Ub, c, np.ones(600, bool))
    np.testing.assert_allclose(to_go, H, rtol=1e-10)


def test_a_stale_build_is_not_used(monkeypatch):
    """A build of another kernel version (an editable install left behind by a change
    of the C source) is ignored with a warning, and the fallback is used."""
    from bayesrank.decoding import _prefix_scan

    monkeypatch.setattr(_prefix_scan, "KERNEL_VERSION", native.KERNEL_VERSION + 1)
    with pytest.warns(RuntimeWarning, match="stale build"):
        assert native._load() is None
    monkeypatch.setattr(_prefix_scan, "KERNEL_VERSION", native.KERNEL_VERSION)
    assert native._load() is _prefix_scan


# ---- bad inputs, by entry point ---------------------------------------------------

def _good(K=5, Lm1=2, q=3):
    rng = np.random.default_rng(0)
    return dict(A=rng.normal(size=(Lm1, K)), B=rng.normal(size=(Lm1, K)),
                Ua=rng.normal(size=(Lm1, q, K)), Ub=rng.normal(size=(Lm1, q, K)),
                c=np.ones(Lm1), mask=np.ones(K, bool))


BAD_HOST = [
    ("A", np.zeros(5), ValueError, "A: expected shape"),
    ("A", np.zeros((0, 5)), ValueError, "A: expected shape"),
    ("B", np.zeros((2, 4)), ValueError, "B: expected shape"),
    ("Ua", np.zeros((2, 5)), ValueError, "Ua: expected shape"),
    ("Ua", np.zeros((2, 3, 4)), ValueError, "Ua: expected shape"),
    ("Ub", np.zeros((2, 4, 5)), ValueError, "Ub: expected shape"),
    ("c", np.ones(3), ValueError, "c: expected shape"),
    ("c", np.array([1.0, -0.5]), ValueError, "c: expected finite bonus widths >= 0"),
    ("c", np.array([1.0, np.nan]), ValueError, "c: expected finite bonus widths >= 0"),
    ("c", np.array([np.inf, 1.0]), ValueError, "c: expected finite bonus widths >= 0"),
    ("mask", np.ones(5), ValueError, "mask: expected a boolean"),
    ("mask", np.ones(4, bool), ValueError, "mask: expected a boolean"),
    ("A", np.full((2, 5), "x"), TypeError, "A: expected real numbers"),
    ("c", np.array(["a", "b"]), TypeError, "c: expected real numbers"),
]


@pytest.mark.parametrize("name, value, exc, match", BAD_HOST)
def test_host_entry_rejects_bad_arrays(name, value, exc, match):
    args = _good()
    args[name] = value
    with pytest.raises(exc, match=match):
        ucb_backward_native(*args.values())


@pytest.mark.parametrize("threads", [0, -1, 65])
def test_host_entry_rejects_bad_thread_counts(threads):
    with pytest.raises(ValueError, match="threads: expected 1 to 64"):
        ucb_backward_native(*_good().values(), threads=threads)


def _raw_args(dtype=np.float64, K=5, Lm1=2, q=3):
    g = _good(K, Lm1, q)
    arrs = [np.asarray(g[k], dtype) for k in ("A", "B", "Ua", "Ub", "c")]
    return [Lm1, K, q, 1, *arrs, g["mask"], np.empty(K, dtype),
            np.empty((Lm1, K), np.int32), np.empty(Lm1, np.int64)]


BAD_RAW = [
    (9, np.ones(4, bool), ValueError, "mask: expected a contiguous buffer of 5 bools"),
    (9, np.ones(5, np.uint8), ValueError, "mask: expected a contiguous buffer of 5 bools"),
    (4, np.zeros((2, 6)), ValueError, "A: expected a contiguous buffer of 10 reals"),
    (11, np.empty((2, 5), np.int64), ValueError, "ptr: expected a contiguous buffer"),
    (11, np.empty((2, 5), np.float32), ValueError, "ptr: expected a contiguous buffer"),
    (12, np.empty(2, np.int32), ValueError, "evals: expected a contiguous buffer"),
    (6, np.zeros((2, 3, 5), np.float32), ValueError, "Ua: expected a contiguous"),
    (10, np.empty(5, np.int64), ValueError, "to_go: expected a contiguous buffer"),
    (4, np.zeros((2, 5), np.int64), TypeError, "A: expected float32 or float64"),
    (4, np.zeros((2, 5), np.int16), TypeError, "A: expected float32 or float64"),
    (5, np.zeros((5, 2)).T, ValueError, "contiguous"),
    (8, [1.0, 1.0], TypeError, "bytes-like"),
    (4, np.zeros((2, 5), ">f8" if np.little_endian else "<f8"), TypeError,
     "A: expected float32 or float64"),                   # foreign byte order
    (5, np.zeros((2, 5), ">f8" if np.little_endian else "<f8"), ValueError,
     "B: expected a contiguous buffer of 10 reals"),
]


@pytest.mark.parametrize("pos, value, exc, match", BAD_RAW)
def test_raw_kernel_checks_every_buffer(pos, value, exc, match):
    """The extension itself refuses buffers of the wrong size, type or layout (it
    never reads or writes past a buffer, or reads one type as another), and writes
    nothing then."""
    from bayesrank.decoding import _prefix_scan

    args = _raw_args()
    args[pos] = value
    outs = [a for a in args[10:] if isinstance(a, np.ndarray)]
    before = [a.tobytes() for a in outs]
    with pytest.raises(exc, match=match):
        _prefix_scan.ucb_backward(*args)
    assert [a.tobytes() for a in outs] == before


@pytest.mark.parametrize("bad", [(0, 5, 3, 1), (2, 0, 3, 1), (2, 5, 0, 1), (2, 5, 3, 0),
                                 (2, 5, 3, 65)])
def test_raw_kernel_checks_sizes(bad):
    from bayesrank.decoding import _prefix_scan

    args = _raw_args()
    args[:4] = bad
    with pytest.raises(ValueError, match="expected L-1 >= 1"):
        _prefix_scan.ucb_backward(*args)


def test_raw_kernel_rejects_read_only_outputs():
    from bayesrank.decoding import _prefix_scan

    args = _raw_args()
    args[10].flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _prefix_scan.ucb_backward(*args)
