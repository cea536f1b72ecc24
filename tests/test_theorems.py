"""The regret bounds of the paper, against the printed formulas written out by hand."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from bayesrank import theorems
from bayesrank.simulation.env import RankingEnv

C = {
    "L": 4,
    "d": 10,
    "lam": 1.0,
    "delta": 0.1,
    "m1": math.sqrt(2),
    "m2": 1 / math.sqrt(2),
}


def _theorem1(T, L, d, lam, delta, m1, m2, w_max, c1=1.0, c2=1.0):
    """Theorem 1 with beta_T at the deterministic log det bound, term by term."""
    M2 = ((1 + w_max) * m1) ** 2
    logdet = d * math.log(1 + T * M2 / (d * lam))  # >= log det V_T / lam^d
    sqrt_beta = math.sqrt(lam) * m2 + math.sqrt(2 * math.log(1 / delta) + logdet)
    return (
        2
        * math.sqrt(2)
        * c2
        / c1
        * L
        * math.sqrt(d * T * sqrt_beta**2 * math.log(1 + T * M2 / (d * lam)))
    )


def test_rank_ucb_bound_matches_theorem_1():
    T = np.array([1, 10, 100, 5000])
    got = theorems.rank_ucb_bound(T, w_max=3.0, c1=0.5, c2=1.2, **C)
    ref = [_theorem1(t, w_max=3.0, c1=0.5, c2=1.2, **C) for t in T]
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert got.shape == T.shape


def test_bounds_vectorise_over_T_and_grow_sublinearly():
    T = np.arange(1, 20001)
    for b in (
        theorems.rank_ucb_bound(T, w_max=10.0, **C),
        theorems.gen_rank_ucb_bound(T, L=4, d=10, lam=1.0, delta=0.1, m2=0.7, m3=10.0),
        theorems.rank_ts_bound(T, L=4, d=10, m1=1.4, m2=0.7, w_max=10.0),
        theorems.win_rank_ucb_bound(T, w_sum_max=3.0, **C),
    ):
        assert b.shape == T.shape and np.all(np.isfinite(b))
        assert np.all(np.diff(b) > 0)  # increasing in T
        assert b[-1] / T[-1] < b[999] / T[999]  # sublinear: R_T / T decreases
    T2 = np.arange(1, 7).reshape(2, 3)
    assert theorems.rank_ucb_bound(T2, w_max=1.0, **C).shape == (2, 3)


def test_measured_logdet_gives_a_tighter_bound():
    T = np.array([100.0, 1000.0])
    loose = theorems.rank_ucb_bound(T, w_max=2.0, **C)
    ratio = np.array([5.0, 9.0])  # below d log(1 + T M^2/(d lam)) here
    assert np.all(ratio < theorems.logdet_ratio_bound(T, d=10, lam=1.0, M=3 * C["m1"]))
    tight = theorems.rank_ucb_bound(T, w_max=2.0, logdet_ratio=ratio, **C)
    assert np.all(tight < loose)
    M2 = (3 * C["m1"]) ** 2
    sb = math.sqrt(1.0) * C["m2"] + np.sqrt(2 * math.log(10) + ratio)
    ref = 2 * math.sqrt(2) * 4 * np.sqrt(10 * T * sb**2 * np.log1p(T * M2 / 10))
    np.testing.assert_allclose(tight, ref, rtol=1e-12)


def test_gen_rank_ucb_bound_matches_theorem_2_as_printed():
    T, L, d, lam, delta, m2, m3 = 500.0, 3, 5, 2.0, 0.05, 0.8, 4.0
    logdet = 2 * d * math.log(1 + T * (2 * m2) ** 2 / (2 * d * lam))
    sb = math.sqrt(lam) * m2 * math.sqrt(1 + m3**2) + math.sqrt(
        2 * math.log(1 / delta) + logdet
    )
    ref = 4 * L * math.sqrt(d * T * sb**2 * math.log(1 + 2 * T * m2**2 / (d * lam)))
    got = theorems.gen_rank_ucb_bound(T, L=L, d=d, lam=lam, delta=delta, m2=m2, m3=m3)
    assert np.isclose(got, ref, rtol=1e-12)
    # With the feature bound sqrt(2) m1 the log term is log(1 + T m1^2 / (d lam)).
    m1 = 1.3
    logdet = 2 * d * math.log(1 + T * m1**2 / (d * lam))
    sb = math.sqrt(lam) * m2 * math.sqrt(1 + m3**2) + math.sqrt(
        2 * math.log(1 / delta) + logdet
    )
    ref = 4 * L * math.sqrt(d * T * sb**2 * math.log(1 + T * m1**2 / (d * lam)))
    got = theorems.gen_rank_ucb_bound(
        T, L=L, d=d, lam=lam, delta=delta, m2=m2, m3=m3, m1=m1
    )
    assert np.isclose(got, ref, rtol=1e-12)


def test_rank_ts_bound_matches_the_theorem():
    T, L, d, m1, m2, w = 1000.0, 4, 10, 1.2, 0.5, 2.0
    lam = 1 / m2**2
    log_term = math.log(1 + T * ((1 + w) * m1) ** 2 / (d * lam))
    beta = 1 + math.sqrt(4 * math.log(T) + d * log_term)
    ref = 2 * L * (1 + beta * math.sqrt(2 * T * d * log_term))
    got = theorems.rank_ts_bound(T, L=L, d=d, m1=m1, m2=m2, w_max=w)
    assert np.isclose(got, ref, rtol=1e-12)


def test_window_bound_reduces_to_theorem_1():
    T = np.array([10.0, 1000.0])
    np.testing.assert_allclose(
        theorems.win_rank_ucb_bound(T, w_sum_max=2.5, **C),
        theorems.rank_ucb_bound(T, w_max=2.5, **C),
    )
    # A wider window (larger sum |w|) only loosens the bound.
    assert np.all(
        theorems.win_rank_ucb_bound(T, w_sum_max=4.0, **C)
        > theorems.win_rank_ucb_bound(T, w_sum_max=2.5, **C)
    )


def test_rank_ucb_bound_matches_the_closed_form_over_T_and_d():
    """Theorem 1 with beta_T at the log det bound, in numpy, on a (T, d) grid.

    docs/background/model.md, "Theorem 1's rate: what the code computes".
    """
    L, lam, delta, m1, m2, w, c1, c2 = 3, 0.5, 0.05, 1.3, 0.8, 2.0, 0.7, 1.1
    kw = {"L": L, "lam": lam, "delta": delta, "m1": m1, "m2": m2, "w_max": w}
    kw |= {"c1": c1, "c2": c2}
    T = np.array([1e2, 1e4, 1e6])[:, None]
    d = np.array([1, 10, 200, 800])[None, :]
    ell = np.log(1 + T * ((1 + w) * m1) ** 2 / (d * lam))
    sqrt_beta = np.sqrt(lam) * m2 + np.sqrt(2 * np.log(1 / delta) + d * ell)
    ref = 2 * np.sqrt(2) * (c2 / c1) * L * np.sqrt(d * T * sqrt_beta**2 * ell)
    got = np.array(
        [[theorems.rank_ucb_bound(t, d=int(k), **kw) for k in d[0]] for t in T[:, 0]]
    )
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=0)
    # Leading term once d * ell is large: 2 sqrt(2) (c2/c1) L d ell sqrt(T).
    lead = 2 * np.sqrt(2) * (c2 / c1) * L * d * ell * np.sqrt(T)
    assert 1 < got[-1, -1] / lead[-1, -1] < 1.02


# The bounds at M = (1 + w_max) m1 = 2, lam = 1, as functions of (T, d).
_IN_D = {
    "rank_ucb": lambda T, d: theorems.rank_ucb_bound(
        T, L=4, d=d, lam=1.0, delta=0.1, m1=1.0, m2=1.0, w_max=1.0
    ),
    "win_rank_ucb": lambda T, d: theorems.win_rank_ucb_bound(
        T, L=4, d=d, lam=1.0, delta=0.1, m1=1.0, m2=1.0, w_sum_max=1.0
    ),
    "gen_rank_ucb_printed": lambda T, d: theorems.gen_rank_ucb_bound(
        T, L=4, d=d, lam=1.0, delta=0.1, m2=1.0, m3=1.0
    ),
    "gen_rank_ucb_m1": lambda T, d: theorems.gen_rank_ucb_bound(
        T, L=4, d=d, lam=1.0, delta=0.1, m2=1.0, m3=1.0, m1=1.0
    ),
    "rank_ts": lambda T, d: theorems.rank_ts_bound(
        T, L=4, d=d, m1=1.0, m2=1.0, w_max=1.0
    ),
}
_DS = np.array([100, 200, 400, 800])


def _growth_in_d(bound, T):
    """The bound at d in _DS and its log-log slopes between consecutive d."""
    b = np.array([float(bound(T, int(d))) for d in _DS])
    return b, np.diff(np.log(b)) / np.diff(np.log(_DS))


@pytest.mark.parametrize("name", sorted(_IN_D))
def test_bounds_grow_linearly_in_d_at_fixed_T(name):
    """O~(L d sqrt(T)), not O~(L sqrt(dT)): beta_T carries d log T.

    docs/background/model.md, "Theorem 1's rate: what the code computes".
    """
    bound = _IN_D[name]
    b, slope = _growth_in_d(bound, 1e6)
    ratio = b[-1] / b[1]  # d = 800 against d = 200
    assert ratio > 3.2, (
        f"bound(d=800)/bound(d=200) = {ratio:.3f} at T = 1e6: linear growth in d "
        "gives about 4 (3.3-3.4 with the log factor), sqrt(d) growth gives 2"
    )
    assert np.all((slope > 0.8) & (slope < 1.0)), f"log-log slopes in d: {slope}"
    # The slope is about 1 - 1/log(T M^2 / (d lam)): it tends to 1 as T grows.
    slopes = np.array([_growth_in_d(bound, T)[1] for T in (1e6, 1e9, 1e12)])
    assert np.all(np.diff(slopes, axis=0) > 0), f"slopes, T = 1e6, 1e9, 1e12: {slopes}"
    assert np.all(slopes[-1] > 0.93), f"slopes at T = 1e12: {slopes[-1]}"


def test_lemma1_width_formula():
    r = np.array([0.0, 3.0])
    got = np.asarray(theorems.lemma1_width(r, lam=4.0, delta=0.2, m2=1.5))
    np.testing.assert_allclose(got, 2.0 * 1.5 + np.sqrt(2 * math.log(5.0) + r))


def test_link_constants():
    assert theorems.link_constants("identity", 5.0) == (1.0, 1.0)
    c1, c2 = theorems.link_constants("logistic", 2.0)
    s = 1 / (1 + math.exp(-2.0))
    assert np.isclose(c1, s * (1 - s)) and c2 == 1.0
    c1, c2 = theorems.link_constants("exp", 1.0)
    assert np.isclose(c1, math.exp(-1.0)) and np.isclose(c2, math.e)
    c1, _ = theorems.link_constants("probit", 0.0)
    assert np.isclose(c1, 1 / math.sqrt(2 * math.pi))


def test_instance_constants_of_the_paper_instance():
    env = RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)
    c = theorems.instance_constants(env)
    # v_i = (unit, 1) and theta = (unit, 1)/2 by construction.
    assert np.isclose(c["m1"], math.sqrt(2)) and np.isclose(c["m2"], math.sqrt(0.5))
    assert np.isclose(c["w_max"], np.abs(np.asarray(env.w))[1:].max())  # w_1 inert
    assert c["w_sum_max"] == c["w_max"] and c["c1"] == c["c2"] == 1.0
    assert (c["L"], c["d"]) == (4, 10)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: theorems.rank_ucb_bound(10, w_max=1.0, **{**C, "delta": 1.0}), "delta"),
        (lambda: theorems.rank_ucb_bound(10, w_max=1.0, **{**C, "lam": 0.0}), "lam"),
        (lambda: theorems.rank_ucb_bound(-1, w_max=1.0, **C), "T"),
        (lambda: theorems.rank_ucb_bound(10, w_max=-1.0, **C), "w_max"),
        (lambda: theorems.rank_ucb_bound(10, w_max=1.0, **{**C, "L": 0}), "L"),
        (lambda: theorems.rank_ucb_bound(10, w_max=1.0, c1=0.0, **C), "c1"),
        (
            lambda: theorems.rank_ucb_bound(
                [10, 20], w_max=1.0, logdet_ratio=[1, 2, 3], **C
            ),
            "logdet_ratio",
        ),
        (lambda: theorems.rank_ts_bound(0, L=2, d=2, m1=1, m2=1, w_max=0), "T"),
        (lambda: theorems.rank_ts_bound(5, L=2, d=2, m1=1, m2=0, w_max=0), "m2"),
        (lambda: theorems.link_constants("nope", 1.0), "link"),
        (lambda: theorems.link_constants("logistic", np.nan), "z_max"),
    ],
)
def test_bad_constants_raise_naming_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_instance_constants_leave_out_the_inert_w1_when_v0_is_zero():
    env = RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)
    w = np.asarray(env.w, dtype=float)
    assert abs(w[0]) > np.abs(w[1:]).max()  # w_1 = 7.76 is the largest draw here
    c = theorems.instance_constants(env)
    # brute force: the largest |w_l| over positions 2..L
    assert c["w_max"] == c["m3"] == pytest.approx(max(abs(x) for x in w[1:]))
    assert c["w_max"] == pytest.approx(7.509, abs=1e-3)
    assert theorems.w_max_realised(env) == c["w_max"]
    # with a non-zero v0, w_1 acts on the reward and counts
    env_v0 = RankingEnv(env.items, env.theta, env.w, v0=np.ones(10) / 10)
    assert theorems.instance_constants(env_v0)["w_max"] == pytest.approx(abs(w[0]))


@pytest.mark.parametrize(
    "K, w_max, realised",
    [(100, 10.0, 4.125), (10, 10.0, 7.509), (100, 0.5, 0.2062), (10, 0.1, 0.07509)],
)
def test_w_max_realised_of_the_paper_panels(K, w_max, realised):
    env = RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=w_max)
    assert theorems.w_max_realised(env) == pytest.approx(realised, rel=1e-3)


def test_this_file_runs_in_float64():
    """Listed in conftest.X64: the bounds above are compared at 1e-10."""
    assert jax.numpy.asarray(1.0).dtype == jax.numpy.float64
