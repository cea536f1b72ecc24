"""A user context beside v0 (the log's ``context`` variable, issue 37 item 2): the
reward model of dm and pair_dr uses it as extra features, checked against
scikit-learn's Ridge on the same design."""

import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import UniformLogger, collect, evaluate

sklearn_linear = pytest.importorskip("sklearn.linear_model")

K, L, D, C, N = 5, 3, 4, 3, 3000
TARGET = np.array([1, 2, 3])
Z95 = 1.959963984540054


class Fixed:
    def select_batch(self, v0, n=None):
        return np.tile(TARGET, (np.shape(v0)[0], 1))


def context_log(seed=0, nan=False):
    """A log whose rewards also depend on a per-round context x (N, C)."""
    env = br.RankingEnv.paper(seed=seed, K=K, L=L, d=D, w_max=2.0)
    log = collect(env, UniformLogger(K, L), N, seed=seed)
    rng = np.random.default_rng(seed + 10)
    x = rng.normal(size=(N, C))
    r = log["rewards"].values + x @ np.array([1.0, -0.5, 0.25])[:, None] * np.ones(L)
    if nan:
        r[::5, 1] = np.nan
    log["rewards"] = (("round", "position"), r)
    log["context"] = (("round", "context_dim"), x)
    return log


def features(lists, v0, items, x):
    """(n, L, 2d + c): (v_{a^l}, v_{a^{l-1}} (v0 at l = 0), x) per position."""
    cur = items[lists]
    prev = np.concatenate([np.broadcast_to(v0, (len(lists), 1, v0.shape[-1])),
                           cur[:, :-1]], axis=1)
    xs = np.broadcast_to(x[:, None, :], (len(lists), lists.shape[1], x.shape[1]))
    return np.concatenate([cur, prev, xs], axis=-1)


def sklearn_predictions(log, ridge):
    """(q_logged, q_target) (n, L) from one sklearn Ridge per position."""
    lists, r = log["lists"].values, log["rewards"].values
    v0, items, x = log["v0"].values, log["items"].values, log["context"].values
    F = features(lists, v0[:, None, :], items, x)
    T = features(np.tile(TARGET, (len(lists), 1)), v0[:, None, :], items, x)
    q_logged, q_target = np.zeros(r.shape), np.zeros(r.shape)
    for l in range(L):
        obs = ~np.isnan(r[:, l])
        m = sklearn_linear.Ridge(alpha=ridge, fit_intercept=False, solver="cholesky")
        m.fit(F[obs, l], r[obs, l])
        q_logged[:, l], q_target[:, l] = m.predict(F[:, l]), m.predict(T[:, l])
    return q_logged, q_target


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("ridge", [1.0, 10.0])
def test_dm_and_pair_dr_use_the_context_as_sklearns_ridge(nan, ridge):
    log = context_log(1, nan)
    res = evaluate(log, Fixed(), ["dm", "pair_dr"], ridge=ridge)
    q_logged, q_target = sklearn_predictions(log, ridge)
    assert float(res.estimate.sel(estimator="dm")) == pytest.approx(
        q_target.sum(axis=1).mean(), rel=1e-9)
    # pair_dr: sum_l q_target + w (r - q_logged), w from the exact pair events
    lists, r = log["lists"].values, log["rewards"].values
    match = lists == TARGET
    pi = match & np.c_[np.ones(N, bool), match[:, :-1]]
    w = pi / log["pscore_pair"].values
    e = np.where(np.isnan(r), 0.0, r - q_logged)
    terms = (q_target + w * e).sum(axis=1)
    row = res.sel(estimator="pair_dr")
    assert float(row.estimate) == pytest.approx(terms.mean(), rel=1e-9)
    assert float(row.stderr) == pytest.approx(terms.std(ddof=1) / np.sqrt(N), rel=1e-7)


def test_the_context_changes_dm_and_without_it_dm_is_as_before():
    log = context_log(2)
    with_ctx = evaluate(log, Fixed(), ["dm"])
    without = evaluate(log.drop_vars("context"), Fixed(), ["dm"])
    assert float(with_ctx.estimate[0]) != pytest.approx(float(without.estimate[0]),
                                                        rel=1e-6)
    # a context that is constant 0 adds nothing to the fit (ridge shrinks it to 0)
    zero = log.copy()
    zero["context"] = (("round", "context_dim"), np.zeros((N, C)))
    np.testing.assert_allclose(evaluate(zero, Fixed(), ["dm"]).estimate.values,
                               without.estimate.values, rtol=1e-12)


def test_a_random_target_and_the_bootstrap_run_with_a_context():
    log = context_log(3)

    class Noisy:
        rng = np.random.default_rng(0)

        def select_batch(self, v0, n=None):
            return self.rng.integers(0, K, (np.shape(v0)[0], L))

    res = evaluate(log, Noisy(), ["dm", "pair_dr"], n_draws=200, ci="bootstrap",
                   n_boot=100)
    assert np.isfinite(res.to_array().values).all()
    assert (res.ci_low < res.estimate).all() and (res.estimate < res.ci_high).all()
    assert (res.mc_stderr > 0).all()


@pytest.mark.parametrize("bad, exc", [
    (("context_dim", "round"), ValueError),
    ("nan", ValueError),
    ("str", TypeError),
])
def test_a_bad_context_is_refused_naming_it(bad, exc):
    log = context_log(0)
    x = log["context"].values
    if bad == "nan":
        x = x.copy()
        x[0, 0] = np.nan
        log["context"] = (("round", "context_dim"), x)
    elif bad == "str":
        log["context"] = (("round", "context_dim"), x.astype(str))
    else:
        log = log.drop_vars("context")
        log["context"] = (bad, np.zeros((C, N)))
    with pytest.raises(exc, match="^context:"):
        evaluate(log, Fixed(), ["dm"])


def test_cascade_dr_uses_the_context_as_sklearns_ridge():
    """cascade_dr's Q_l for a fixed list: the Ridge predictions of the target's list
    from l to the end in the round's context, where the logged prefix is the
    target's (w = 0 elsewhere)."""
    log = context_log(4)
    res = evaluate(log, Fixed(), ["cascade_dr"])
    _, q_target = sklearn_predictions(log, 1.0)
    Q = np.cumsum(q_target[:, ::-1], axis=1)[:, ::-1]
    lists, r = log["lists"].values, log["rewards"].values
    match = np.cumprod(lists == TARGET, axis=1)
    above = np.c_[np.ones(N), match[:, :-1]]
    ps = log["pscore_cascade"].values
    w, w_above = match / ps, above / np.c_[np.ones(N), ps[:, :-1]]
    terms = (w * (r - match * Q) + w_above * above * Q).sum(axis=1)
    assert float(res.estimate.sel(estimator="cascade_dr")) == pytest.approx(
        terms.mean(), rel=1e-9)
