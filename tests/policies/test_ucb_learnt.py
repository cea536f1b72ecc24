"""The UCB family's learnt-scale default (issue 44, item 2): the same lists whatever
the reward's units, and a width equal to a plain-NumPy computation of its formula
(Lemma 1 with R the posterior's noise sd and V the design Gram matrix)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import bayesrank as br
from bayesrank.model import noise
from bayesrank.posteriors.hyperprior import GRID, TAIL

pytestmark = pytest.mark.x64


def _rescaled(env, c):
    """theta and the noise sd times c: every reward c times the original's."""
    return br.RankingEnv(items=env.items, theta=c * np.asarray(env.theta, float),
                         w=env.w, v0=env.v0, link="identity", noise=noise.Gaussian(c))


def _play(pol, env, rounds):
    """The lists pol shows in the given rounds (round t's noise key is key(t))."""
    out = []
    for t in rounds:
        items = pol.select()
        pol.update(items, env.sample(jax.random.key(t), items))
        out.append(np.asarray(items))
    return np.array(out)


def _lists(make, env, T):
    """The lists a fresh policy shows over T rounds."""
    return _play(make(env), env, range(T))


MAKERS = {
    "RankUCB": lambda e, **kw: br.RankUCB(items=e.items, w=e.w, v0=e.v0, **kw),
    "GenRankUCB": lambda e, **kw: br.GenRankUCB(e.items, L=e.L, v0=e.v0, **kw),
    "WindowRankUCB": lambda e, **kw: br.WindowRankUCB(
        items=e.items, w=np.c_[np.asarray(e.w), np.full(e.L, 0.5)], v0=e.v0, **kw),
}


@pytest.mark.parametrize("name", list(MAKERS))
def test_default_lists_do_not_depend_on_the_units(name):
    """c = 0.01 and 100 (theta and noise times c) give the lists of c = 1; the old
    default (the ridge, noise sd 1: here selected by lam=1.0) does not."""
    base = br.RankingEnv.paper(seed=3, K=8, L=3, d=4, w_max=2.0)
    make = MAKERS[name]
    ref = _lists(make, base, 25)
    old_ref = _lists(lambda e: make(e, lam=1.0), base, 25)
    for c in (0.01, 100.0):
        env = _rescaled(base, c)
        np.testing.assert_array_equal(_lists(make, env, 25), ref, err_msg=f"c={c}")
        assert not np.array_equal(_lists(lambda e: make(e, lam=1.0), env, 25),
                                  old_ref), f"old default, c={c}"


def test_the_default_is_learnt_and_lam_alpha_m2_keep_the_ridge():
    env = br.RankingEnv.paper(seed=0, K=6, L=3, d=4)
    learnt = br.RankUCB(items=env.items, w=env.w)
    assert type(learnt.model).__name__ == "GaussianLinear" and learnt.model.learnt_scale
    assert learnt.model.learn_noise and learnt.model.hyperprior is None
    for kw in ({"lam": 2.0}, {"alpha": 1.5}, {"m2": 1.0}):
        pol = br.RankUCB(items=env.items, w=env.w, **kw)
        assert type(pol.model).__name__ == "GaussianLinear", kw
        assert pol.model.config()["prior_scale"] == 1 / math.sqrt(kw.get("lam", 1.0))
        assert pol.model.noise_scale == 1.0
    base = br.RankedBaseline(env.items, L=3)  # the paper's baseline keeps the ridge
    assert type(base.model).__name__ == "GaussianLinear"


def _numpy_width(X, R, *, lam=1.0, delta=0.1, m2=1.0):
    """Per position: (width, theta_hat) of the learnt default from its history, by
    direct solves (no eigendecomposition): the HalfCauchy(1) grid of g, the
    Normal-Inverse-Gamma evidence (its residual floored at 8 eps q in float64, as
    the model's),
    E[s^2 | data] and Lemma 1 with V = lam I + X^T X. Positions with n <= 2 use the
    mean squared reward of all positions."""
    lo, hi = math.tan(0.5 * math.pi * TAIL), math.tan(0.5 * math.pi * (1 - TAIL))
    g = np.exp(np.linspace(math.log(lo), math.log(hi), GRID))
    logw0 = math.log(2 / math.pi) - np.log1p(g * g) + np.log(g)
    n_all, q_all = R.size, float(np.sum(R**2))
    widths, means = [], []
    for l in range(X.shape[1]):
        x, r = X[:, l], R[:, l]
        n, p = len(r), x.shape[1]
        S, u, q = x.T @ x, x.T @ r, r @ r
        beta, ll, mk = [], [], []
        for gk in g:
            P = S + np.eye(p) / gk**2
            m = np.linalg.solve(P, u)
            b = max(q - u @ m, 8 * np.finfo(float).eps * q)  # the model's floor (n < p interpolates)
            beta.append(b)
            mk.append(m)
            ll.append(-0.5 * np.linalg.slogdet(np.eye(p) + gk**2 * S)[1]
                      - 0.5 * n * np.log(b))
        logit = logw0 + np.array(ll)
        w = np.exp(logit - logit.max())
        w /= w.sum()
        s2 = w @ np.array(beta) / (n - 2) if n > 2 else q_all / n_all
        V = lam * np.eye(p) + S
        lemma1 = math.sqrt(lam) * m2 + np.sqrt(
            2 * math.log(1 / delta) + np.linalg.slogdet(V)[1] - p * math.log(lam))
        widths.append(math.sqrt(s2) * lemma1)
        means.append(w @ np.array(mk))
    return np.array(widths), np.array(means)


@pytest.mark.parametrize("rounds", [2, 30])
def test_default_width_matches_numpy(rounds):
    """Lemma 1's width times sqrt(E[s^2 | data]) (the pooled fallback at n <= 2),
    and theta_hat the grid-averaged posterior mean, against direct NumPy solves."""
    env = _rescaled(br.RankingEnv.paper(seed=1, K=7, L=3, d=4, w_max=2.0), 7.0)
    pol = br.RankUCB(items=env.items, w=env.w, lam=None, delta=0.05)
    _play(pol, env, range(rounds))
    lists, R = pol.history()
    X = np.asarray(env.features(lists))
    width, theta = _numpy_width(X, R, delta=0.05)
    np.testing.assert_allclose(pol.width(), width, rtol=1e-9)
    np.testing.assert_allclose(pol.theta_hat(), theta, rtol=1e-7, atol=1e-12)


def test_known_noise_scales_the_width_and_save_load_keeps_the_default(tmp_path):
    """A learnt-prior model with a known noise sd s: the width is s times Lemma 1's
    (R = s), or s times alpha; the default saved and loaded selects the same lists
    with the same width."""
    env = br.RankingEnv.paper(seed=2, K=6, L=3, d=4, w_max=2.0)
    known = br.RankUCB(env.items, model=br.GaussianLinear(noise_scale=2.5), w=env.w)
    pol = br.RankUCB(items=env.items, w=env.w)
    for p in (known, pol):
        _play(p, env, range(6))
    X = np.asarray(env.features(known.history()[0]))
    logdet = [np.linalg.slogdet(np.eye(4) + X[:, l].T @ X[:, l])[1] for l in range(3)]
    expect = 2.5 * (1.0 + np.sqrt(2 * math.log(10) + np.array(logdet)))
    np.testing.assert_allclose(known.width(), expect, rtol=1e-12)
    const = br.RankUCB(env.items, model=br.GaussianLinear(noise_scale=2.5), w=env.w,
                       alpha=1.5)  # a constant width, in units of the noise sd
    np.testing.assert_allclose(const.width(), np.full(3, 3.75), rtol=1e-12)
    pol.save(tmp_path / "u.npz")
    back = br.RankUCB.load(tmp_path / "u.npz")
    assert type(back.model).__name__ == "GaussianLinear" and back.model.learnt_scale
    np.testing.assert_allclose(back.width(), pol.width(), rtol=1e-12)
    np.testing.assert_array_equal(_play(back, env, range(6, 10)),
                                  _play(pol, env, range(6, 10)))
