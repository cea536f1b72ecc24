"""``LaplaceGLM()``'s default learns theta's prior scale tau (issue 44), and the two
surfaces that read a fixed ridge accept it: the latent-w form (``LatentLaplace``: tau
one more grid coordinate with theta, w collapsed) and the GLM-UCB width (the modal
grid node's ``lam = 1 / tau^2``). References written independently of the code:
scikit-learn's ridge-logistic MAP at the modal node, a brute-force 3-D quadrature in
NumPy over (theta, w, tau), and Lemma 1's width computed in NumPy from the lists."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from scipy.special import expit, log_expit

import bayesrank as br
from bayesrank.policies import Optimistic
from bayesrank.posteriors import (
    LaplaceGLM,
    LatentLaplace,
    LearntScaleLaplace,
    LearntScaleLinear,
    latent_model,
)

pytestmark = pytest.mark.x64


def _fold(model, X, y):
    state = model.init(1, X.shape[1])
    for i in range(len(y)):
        state = model.update(state, X[i][None], y[i:i + 1])
    return state


# ------------------------------------------------------------------ the default
def test_default_is_the_learnt_scale_and_its_map_node_is_sklearns_ridge_fit():
    """``LaplaceGLM()`` is the learnt-scale model; ``map_node`` is the MAP of the
    grid's modal tau_k, which scikit-learn's L2 logistic regression with C = tau_k^2
    (objective ``|theta|^2 / 2 + C sum logloss``) finds independently."""
    from sklearn.linear_model import LogisticRegression

    model = LaplaceGLM("logistic", n_max=60)
    assert type(model) is LaplaceGLM and type(model.scale_model) is LearntScaleLaplace
    assert type(model.hyperprior).__name__ == "HalfNormal"  # default_tau_hyperprior
    assert float(model.hyperprior.scale) == 1.0
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3))
    y = (rng.uniform(size=50) < expit(X @ np.array([1.5, -1.0, 0.5]))).astype(float)
    state = _fold(model, X, y)
    theta, lam = (np.asarray(a)[0] for a in model.map_node(state))
    k = int(np.argmax(np.asarray(model.log_weights(state))[0]))
    assert lam == pytest.approx(np.exp(-2 * model.log_tau[k]), rel=1e-12)
    ref = LogisticRegression(C=1.0 / lam, fit_intercept=False, tol=1e-12,
                             max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(theta, ref.coef_[0], rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------ latent w, tau learnt
def _latent_data(seed=1, n=80):
    rng = np.random.default_rng(seed)
    a, p = rng.normal(size=n), rng.normal(size=n)
    theta, w = 1.2, 0.6
    y = (rng.uniform(size=n) < expit(theta * (a + w * p))).astype(float)
    return np.stack([a, p], 1), y


def _moments(lp, th, w):
    """E[w], sd(w), E[theta] of the log density lp (..., nt, nw) on the box."""
    wgt = np.exp(lp - lp.max())
    z = wgt.sum()
    m_w = (wgt * w).sum() / z
    return m_w, np.sqrt((wgt * w**2).sum() / z - m_w**2), (wgt * th).sum() / z


def _box(nt=401, nw=401):
    return np.linspace(-6, 6, nt)[:, None], np.linspace(-5, 5, nw)[None, :]


def _half_normal(tau):
    """log density of HalfNormal(1), LaplaceGLM()'s hyperprior of tau."""
    return 0.5 * np.log(2 / np.pi) - 0.5 * tau * tau


def _exact_posterior(X, y, nt=161, nw=161, ng=41):
    """The true posterior's moments: logistic likelihood, theta ~ N(0, tau^2),
    w ~ N(0, 1), tau ~ HalfNormal(1), brute force on (theta, w, log tau)."""
    th, w = _box(nt, nw)
    eta = th[..., None] * (X[:, 0] + w[..., None] * X[:, 1])
    lik = np.sum(y * log_expit(eta) + (1 - y) * log_expit(-eta), -1) - 0.5 * w**2
    lp = np.stack([lik - 0.5 * th**2 / t**2 - np.log(t) + _half_normal(t) + np.log(t)
                   for t in np.exp(np.linspace(np.log(1e-3), np.log(1e3), ng))])
    return _moments(lp, th, w)


def _node_mixture(model, state, X, y):
    """The scheme's posterior by brute force: at each tau node k, the logistic
    log-likelihood expanded to second order at the node's MAP phi_k (gradient and
    Hessian recomputed here in NumPy), times N(theta; 0, tau_k^2) N(w; 0, 1) and the
    node's prior mass, summed over the nodes on a (theta, w) box (d = 1)."""
    th, w = _box()
    phi = np.stack(np.broadcast_arrays(th, w * th), -1)  # (nt, nw, 2)
    lps = []
    for k, (lt, lw0) in enumerate(zip(model.laplace.log_tau, model.laplace.log_w0)):
        pk = np.asarray(state.fit.theta, float)[0, k]
        mu = expit(X @ pk)
        score = X.T @ (y - mu)
        H = X.T @ (X * (mu * (1 - mu))[:, None])
        ll = np.sum(y * log_expit(X @ pk) + (1 - y) * log_expit(-(X @ pk)))
        dev = phi - pk
        quad = ll + dev @ score - 0.5 * np.einsum("...i,ij,...j->...", dev, H, dev)
        lps.append(lw0 + quad - 0.5 * th**2 * np.exp(-2 * lt) - lt - 0.5 * w**2)
    top = np.max(lps, 0)
    return _moments(top + np.log(np.sum(np.exp(np.array(lps) - top), 0)), th, w)


def test_latent_laplace_learnt_mixes_one_expansion_per_tau_node():
    """With tau learnt, LatentLaplace's exact summaries (w's grid, theta's mean)
    equal a brute-force quadrature of its scheme (one second-order expansion of the
    logistic likelihood per tau node, mixed by the nodes' evidence), and are close
    to the true posterior (logistic likelihood, tau continuous): Laplace's error."""
    model = latent_model(LaplaceGLM("logistic", n_max=100), dist.Normal(0.0, 1.0))
    assert type(model) is LatentLaplace and model.learnt
    X, y = _latent_data()
    state = _fold(model, X, y)
    got = (float(model.w_mean(state)[0]), float(model.w_sd(state)[0]),
           float(model.mean(state)[0, 0]))
    ref = _node_mixture(model, state, X, y)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    truth = _exact_posterior(X, y)
    np.testing.assert_allclose(got, truth, atol=0.1 * ref[1])
    # the exact draws (w, then a node and theta given w) follow the same posterior
    th_draws, w_draws = model.draw_exact(jax.random.key(0), state, 4000)
    assert float(jnp.mean(w_draws)) == pytest.approx(ref[0], abs=4 * ref[1] / 60)
    assert float(jnp.mean(th_draws)) == pytest.approx(ref[2], abs=0.03)


def test_latent_laplace_learnt_saves_and_reloads_and_rank_ts_runs(tmp_path):
    env = br.RankingEnv.paper(seed=2, K=8, L=3, d=2, link="logistic")
    ts = br.RankTS(model=LaplaceGLM("logistic", n_max=30), items=env.items, L=3,
                   w=dist.Normal(0.0, 2.0), seed=0)
    assert type(ts.model) is LatentLaplace and ts.model.learnt
    for t in range(6):
        items = ts.select()
        ts.update(items, env.sample(jax.random.key(t), items))
    ts.save(tmp_path / "p.npz")
    back = br.RankTS.load(tmp_path / "p.npz")
    assert type(back.model.glm) is LaplaceGLM and back.model.glm.learnt_scale
    np.testing.assert_array_equal(ts.select_batch(n=4), back.select_batch(n=4))


# ------------------------------------------------------------------ GLM-UCB
def _ucb_run(model, T=12, **kw):
    env = br.RankingEnv.paper(seed=4, K=10, L=3, d=3, link="logistic")
    ucb = br.RankUCB(model=model, items=env.items, w=env.w, c1=0.1, **kw)
    lists = []
    for t in range(T):
        items = ucb.select()
        lists.append(np.asarray(items))
        ucb.update(items, env.sample(jax.random.key(t), items))
    return env, ucb, np.array(lists)


def test_ucb_width_with_a_learnt_scale_against_numpy():
    """RankUCB(model=LaplaceGLM("logistic")): V = lam_k I + sum x x^T with the
    modal node's lam_k per position, Lemma 1's width at that lam_k, and theta_hat
    the node's MAP, all recomputed in NumPy from the lists shown."""
    env, ucb, lists = _ucb_run(LaplaceGLM("logistic", n_max=40))
    assert ucb.lam is None
    items, w = np.asarray(env.items, float), np.asarray(env.w, float)
    prev = np.concatenate([np.broadcast_to(np.asarray(env.v0, float),
                                           (len(lists), 1, items.shape[1])),
                           items[lists[:, :-1]]], 1)
    x = items[lists] + w[None, :, None] * prev  # (T, L, d)
    S = np.einsum("tli,tlj->lij", x, x)
    theta_k, lam = (np.asarray(a, float) for a in ucb.model.map_node(ucb.state.model))
    p = S.shape[-1]
    V = lam[:, None, None] * np.eye(p) + S
    ratio = np.linalg.slogdet(V)[1] - p * np.log(lam)
    width = np.sqrt(lam) * ucb.m2 + np.sqrt(2 * np.log(1 / ucb.delta) + ratio)
    np.testing.assert_allclose(ucb.width(), width, rtol=1e-10)
    est = ucb._core_estimate()
    params, _ = est(jax.random.key(0), ucb.state.model, ucb.state.est)
    chol = np.asarray(params.chol)
    np.testing.assert_allclose(chol @ np.swapaxes(chol, 1, 2), V, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(params.theta), theta_k, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(params.width), width / ucb.c1, rtol=1e-10)


def test_ucb_with_a_learnt_scale_saves_and_reloads(tmp_path):
    _, ucb, _ = _ucb_run(LaplaceGLM("logistic", n_max=40), T=6)
    ucb.save(tmp_path / "u.npz")
    back = br.RankUCB.load(tmp_path / "u.npz")
    assert type(back.model) is LaplaceGLM and back.model.learnt_scale
    assert back.lam is None
    np.testing.assert_array_equal(ucb.select(), back.select())
    np.testing.assert_allclose(ucb.width(), back.width(), rtol=0)


def test_a_fixed_scale_keeps_todays_lists_and_file(tmp_path):
    """prior_scale=1.0 is the old default: lam = 1 from the model, the same Gram
    path, and a saved policy reloads as that fixed model with the same lists."""
    _, ucb, _ = _ucb_run(LaplaceGLM("logistic", prior_scale=1.0, n_max=40), T=8)
    assert ucb.lam == 1.0 and type(ucb.model) is LaplaceGLM
    ucb.save(tmp_path / "f.npz")
    back = br.RankUCB.load(tmp_path / "f.npz")
    assert type(back.model) is LaplaceGLM and back.model.prior_scale == 1.0
    np.testing.assert_array_equal(ucb.select(), back.select())


# --------------------------------------------------------------- bad inputs
def _env_items():
    return br.RankingEnv.paper(seed=0, K=6, L=2, d=2, link="logistic")


BAD = [
    ("ucb-lam-with-learnt", lambda: br.RankUCB(
        model=LaplaceGLM("logistic", n_max=5), items=_env_items().items,
        w=_env_items().w, lam=2.0), ValueError, "lam: the model learns its prior"),
    ("gen-ucb-lam-with-learnt", lambda: br.GenRankUCB(
        model=LaplaceGLM("logistic", n_max=5), items=_env_items().items, L=2,
        lam=1.0, m3=1.0), ValueError, "lam: the model learns its prior"),
    ("optimistic-lam-with-learnt", lambda: Optimistic(
        LaplaceGLM("logistic", n_max=5), lam=1.0, delta=0.1, m2=1.0, alpha=None,
        c1=0.1), ValueError, "lam: the model learns its prior scale"),
    ("optimistic-no-lam-fixed", lambda: Optimistic(
        LaplaceGLM("logistic", prior_scale=1.0, n_max=5), lam=None, delta=0.1,
        m2=1.0, alpha=None, c1=0.1), ValueError, "lam: expected a positive"),
    ("learnt-noise-scale", lambda: LaplaceGLM("logistic", noise_scale=0.0),
     ValueError, "noise_scale"),
    ("learnt-bad-hyperprior", lambda: LaplaceGLM("logistic", prior_scale=dist.Normal(
        0.0, 1.0)), ValueError, "prior_scale: the hyperprior must live on"),
    ("latent-learnt-identity-is-latent-w", lambda: LatentLaplace(
        LaplaceGLM("identity"), dist.Normal(0.0, 1.0)), TypeError, "LatentLaplace needs"),
]


@pytest.mark.parametrize("make, err, match", [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_inputs_raise_naming_the_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_joint_map_reference_refuses_a_learnt_scale():
    from bayesrank.studies.calibration.latent import JointMAPDraws

    with pytest.raises(TypeError, match="fixed prior scale"):
        JointMAPDraws(LatentLaplace(LaplaceGLM("logistic", n_max=5),
                                    dist.Normal(0.0, 1.0)))


def test_identity_link_default_is_the_conjugate_learnt_scale():
    model = LaplaceGLM("identity")
    assert type(model) is LaplaceGLM and model.learnt_scale
    assert type(model.scale_model.scale_model) is LearntScaleLinear
    assert model.noise_scale == 1.0


@pytest.mark.parametrize("kind", ["gen", "window"])
def test_gen_and_window_ucb_take_the_learnt_scale(kind):
    """GenRankUCB and WindowRankUCB: the posterior's lam (no number of their own),
    a finite width per position that V's lam drives (the width is Lemma 1's at the
    modal node's lam: recomputed here from the estimate's own sum x x^T)."""
    env = br.RankingEnv.paper(seed=4, K=10, L=3, d=3, link="logistic")
    model = LaplaceGLM("logistic", n_max=20)
    if kind == "gen":
        pol = br.GenRankUCB(model=model, items=env.items, L=3, m3=1.0, c1=0.1)
    else:
        pol = br.WindowRankUCB(model=model, items=env.items, c1=0.1,
                               w=np.stack([env.w, 0 * env.w], 1))
    for t in range(4):
        items = pol.select()
        pol.update(items, env.sample(jax.random.key(t), items))
    assert pol.lam is None
    S = np.asarray(pol.state.est[0], float)
    lam = np.asarray(pol.model.map_node(pol.state.model)[1], float)
    p = S.shape[-1]
    ratio = np.linalg.slogdet(lam[:, None, None] * np.eye(p) + S)[1] - p * np.log(lam)
    width = np.sqrt(lam) * pol._m2_width() + np.sqrt(2 * np.log(1 / pol.delta) + ratio)
    np.testing.assert_allclose(pol.width(), width, rtol=1e-10)


def test_default_hyperprior_is_halfnormal_and_old_files_keep_halfcauchy():
    """``LaplaceGLM()`` takes HalfNormal(1) (its grid from that distribution's 1 % and
    99 % quantiles, computed here with NumPy's erf-free bisection of the CDF) and saves
    it by name; a config saved under the former default (``prior_scale: null``) loads
    as the HalfCauchy(1) model it was, grid and all."""
    from math import erf, sqrt

    from bayesrank.posteriors.laplace.learnt_scale import tau_grid

    new = LaplaceGLM("logistic")
    cfg = new.config()
    assert cfg["prior_scale"]["class"] == "HalfNormal"
    back = LearntScaleLaplace.from_config(cfg)
    np.testing.assert_array_equal(back.log_tau, new.log_tau)

    def quantile(q):  # HalfNormal(1): CDF erf(t / sqrt 2)
        lo, hi = 0.0, 10.0
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if erf(mid / sqrt(2.0)) < q else (lo, mid)
        return lo

    np.testing.assert_allclose(np.exp(new.log_tau[[0, -1]]),
                               [quantile(0.01), quantile(0.99)], rtol=2e-3)
    old = LearntScaleLaplace.from_config({**cfg, "prior_scale": None})
    assert old.hyperprior is None
    np.testing.assert_array_equal(old.log_tau, tau_grid(None)[0])
    assert np.exp(old.log_tau[-1]) > 30  # HalfCauchy's 99 % quantile, 63.7


# ------------------------------------------------ constructors are what they say
@pytest.mark.parametrize("link", ["logistic", "probit", "exp", "identity"])
@pytest.mark.parametrize("prior_scale, learnt", [
    (None, True), (dist.HalfNormal(2.0), True), (dist.LogNormal(0.0, 1.0), True),
    (1.0, False), (0.5, False)])
def test_every_laplace_glm_form_is_a_laplace_glm(link, prior_scale, learnt):
    """``LaplaceGLM(...)`` is a LaplaceGLM for every link and scale; the part it
    holds is the fixed fit, the learnt grid or (identity, learnt) GaussianLinear."""
    from bayesrank.posteriors.base import PosteriorModel
    from bayesrank.posteriors.laplace import FixedScaleLaplace

    model = LaplaceGLM(link, prior_scale=prior_scale, n_max=20)
    assert type(model) is LaplaceGLM and isinstance(model, br.LaplaceGLM)
    assert isinstance(model, PosteriorModel)
    assert model.learnt_scale is learnt and model.link.name == link
    part = (FixedScaleLaplace if not learnt else
            br.GaussianLinear if link == "identity" else LearntScaleLaplace)
    assert type(model.scale_model) is part
    assert not isinstance(model, (LearntScaleLaplace, LearntScaleLinear))
    assert repr(model).startswith(f"LaplaceGLM(link={link!r}")
    back = LaplaceGLM.from_config(model.config())
    assert type(back) is LaplaceGLM and back.config() == model.config()
    assert type(back.scale_model) is part


def test_an_earlier_versions_learnt_laplace_config_rebuilds_a_laplace_glm():
    """Files of earlier versions name ``LearntScaleLaplace`` (with prior_scale None:
    the HalfCauchy(1) of before issue 44, kept): they rebuild a LaplaceGLM."""
    from bayesrank.policies.runtime.model_config import model_from_config

    cfg = {"class": "LearntScaleLaplace", "link": "probit", "prior_scale": None,
           "n_max": 30, "tol": 1e-10, "max_iter": 50, "hessian_tol": None}
    for model in (LaplaceGLM.from_config(cfg),
                  model_from_config({"class": "LearntScaleLaplace", "config": cfg})):
        assert type(model) is LaplaceGLM and model.learnt_scale
        assert model.hyperprior is None and model.config() == cfg
    with pytest.raises(ValueError, match="describes a 'Nope'"):
        LaplaceGLM.from_config({"class": "Nope"})
