"""posterior(l) of the latent-w models holds the learnt scales beside theta and w,
drawn as a draw takes them (g | w, D on the grid; s^2 | w, g, D; tau_k | w, D),
against float64 quadrature over w in plain NumPy from the data (or, for the Laplace
form, from the state's node expansions)."""

import math

import jax
import numpy as np
import numpyro.distributions as dist
import pytest
from scipy import special, stats

import bayesrank as br
from bayesrank.posteriors import LatentW

N_DRAWS, CHAINS = 1000, 4


def _data(seed=0, n=40, d=2, w_true=0.7, noise=0.5):
    rng = np.random.default_rng(seed)
    A, P = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    theta = np.array([1.0, -0.5])[:d]
    y = (A + w_true * P) @ theta + noise * rng.normal(size=n)
    return A, P, y


def _fit(model, A, P, y):
    state = model.init(L=1, p=2 * A.shape[1])
    for a, p, r in zip(A, P, y):
        state = model.update(state, np.concatenate([a, p])[None], np.array([r]))
    return state


def _w_grid(logpost, lo, hi):
    """A uniform grid over w fine enough for the posterior: a coarse pass, then 4001
    nodes over the part holding all but 1e-12 of it."""
    w = np.linspace(lo, hi, 4001)
    lp = logpost(w)
    mass = np.exp(lp - lp.max())
    keep = np.nonzero(mass > 1e-14)[0]
    a, b = w[max(keep[0] - 1, 0)], w[min(keep[-1] + 1, len(w) - 1)]
    return np.linspace(a, b, 4001)


def _chi2_nodes(counts, probs):
    """p-value of the draws' node counts against the reference's probabilities
    (cells with expected count < 5 merged)."""
    n = counts.sum()
    order = np.argsort(probs)
    obs, exp, o_acc, e_acc = [], [], 0.0, 0.0
    for k in order:
        o_acc += counts[k]
        e_acc += n * probs[k]
        if e_acc >= 5:
            obs.append(o_acc), exp.append(e_acc)
            o_acc = e_acc = 0.0
    obs[-1] += o_acc
    exp[-1] += e_acc
    return stats.chisquare(obs, exp).pvalue


def _learnt_reference(model, A, P, y, w_prior):
    """(p(g_k | D) (G,), noise-sd cdf) by quadrature over w and the grid of g, float64:
    theta and s^2 integrated out (Jeffreys noise, theta | g, s ~ N(0, g^2 s^2 I))."""
    log_g, log_w0 = model.base.log_g, model.base.log_w0
    n, d = A.shape
    g2 = np.exp(2 * log_g)

    def terms(w):  # (W, G) log p(y | w, g) and beta
        X = A[None] + w[:, None, None] * P[None]
        S = np.einsum("wni,wnj->wij", X, X)
        u = np.einsum("wni,n->wi", X, y)
        M = S[:, None] + np.eye(d) / g2[None, :, None, None]
        sol = np.linalg.solve(M, u[:, None, :, None])[..., 0]
        beta = y @ y - np.einsum("wgi,wi->wg", sol, u)
        logdet = np.linalg.slogdet(np.eye(d) + g2[None, :, None, None] * S[:, None])[1]
        return -0.5 * logdet - 0.5 * n * np.log(beta), beta

    def logpost_w(w):
        ll, _ = terms(w)
        return np.asarray(w_prior.log_prob(w)) + special.logsumexp(log_w0 + ll, axis=1)

    w = _w_grid(logpost_w, -20.0, 20.0)
    ll, beta = terms(w)
    joint = np.asarray(w_prior.log_prob(w))[:, None] + log_w0 + ll
    wts = np.exp(joint - special.logsumexp(joint))  # (W, G), uniform w grid

    def noise_cdf(x):
        x = np.atleast_1d(x)
        # s^2 | w, g ~ InvGamma(n/2, beta/2): P(s <= x) = Q(n/2, beta / (2 x^2))
        return np.array([np.sum(wts * special.gammaincc(0.5 * n, beta / (2 * t * t)))
                         for t in x])

    return wts.sum(0), noise_cdf


def test_latent_learnt_scales_match_quadrature_over_w():
    A, P, y = _data(n=12)  # w's posterior sd about 0.27
    w_prior = dist.Normal(0.3, 1.0)
    model = LatentW(br.GaussianLinear(), w_prior)  # g and s learnt
    state = _fit(model, A, P, y)
    dt = model.to_datatree(state, 0, key=jax.random.key(5), draws=N_DRAWS,
                           chains=CHAINS)
    g = np.asarray(dt.posterior["prior_scale"]).ravel()
    s = np.asarray(dt.posterior["noise_scale"]).ravel()
    p_g, noise_cdf = _learnt_reference(model, A, P, y, w_prior)
    nodes = np.exp(model.base.log_g)
    k = np.argmin(np.abs(np.log(g)[:, None] - model.base.log_g[None]), axis=1)
    np.testing.assert_allclose(g, nodes[k], rtol=1e-5)  # g on its grid's nodes
    counts = np.bincount(k, minlength=len(nodes)).astype(float)
    assert _chi2_nodes(counts, p_g) > 1e-3
    assert stats.kstest(s, noise_cdf).pvalue > 1e-3
    # the test can fail: g | D with w pinned at its posterior mean (w's uncertainty
    # ignored) is rejected, and so is that law's noise sd
    w_mean = float(np.mean(np.asarray(dt.posterior["w"])))
    pinned, pinned_cdf = _learnt_reference(model, A, P, y, dist.Normal(w_mean, 1e-4))
    assert _chi2_nodes(counts, pinned) < 1e-6
    assert stats.kstest(s, pinned_cdf).pvalue < 1e-6


def test_latent_unknown_noise_sd_matches_quadrature_over_w():
    A, P, y = _data(seed=1)
    n, d = A.shape
    base = br.GaussianLinearUnknownNoise()
    w_prior = dist.Normal(0.0, 2.0)
    model = LatentW(base, w_prior)
    state = _fit(model, A, P, y)
    dt = model.to_datatree(state, 0, key=jax.random.key(4), draws=N_DRAWS,
                           chains=CHAINS)
    s = np.asarray(dt.posterior["noise_scale"]).ravel()
    m0, L0 = (np.asarray(a, float) for a in base.prior(d)[:2])
    a0, b0 = float(base.a0), float(base.b0)

    def post(w):  # (log p(w | D), b_n) of the Normal-Inverse-Gamma model given w
        X = A[None] + w[:, None, None] * P[None]
        Ln = L0 + np.einsum("wni,wnj->wij", X, X)
        bn = L0 @ m0 + np.einsum("wni,n->wi", X, y)
        quad = np.einsum("wi,wi->w", bn, np.linalg.solve(Ln, bn[..., None])[..., 0])
        b_n = b0 + 0.5 * (y @ y + m0 @ L0 @ m0 - quad)
        lp = (np.asarray(w_prior.log_prob(w)) - 0.5 * np.linalg.slogdet(Ln)[1]
              - (a0 + 0.5 * n) * np.log(b_n))
        return lp, b_n

    w = _w_grid(lambda w: post(w)[0], -15.0, 15.0)
    lp, b_n = post(w)
    wts = np.exp(lp - special.logsumexp(lp))

    def cdf(x):  # s^2 | w ~ InvGamma(a0 + n/2, b_n)
        return np.array([np.sum(wts * special.gammaincc(a0 + 0.5 * n, b_n / (t * t)))
                         for t in np.atleast_1d(x)])

    assert stats.kstest(s, cdf).pvalue > 1e-3
    # theta's log prior is the NIG's: given s, N(m0, s^2 L0^-1)
    th = np.asarray(dt.posterior["theta"])
    s2 = np.asarray(dt.posterior["noise_scale"]) ** 2
    r = th - m0
    expect = (-0.5 * d * np.log(2 * math.pi * s2) + 0.5 * np.linalg.slogdet(L0)[1]
              - 0.5 * np.einsum("cdi,ij,cdj->cd", r, L0, r) / s2)
    np.testing.assert_allclose(np.asarray(dt.log_prior["theta"]), expect, rtol=1e-6,
                               atol=1e-6)


def test_latent_laplace_tau_matches_quadrature_over_w():
    rng = np.random.default_rng(2)
    n, d = 60, 2
    A, P = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    eta = (A + 0.5 * P) @ np.array([1.0, -0.7])
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    w_prior = dist.Normal(0.0, 2.0)
    model = br.posteriors.LatentLaplace(br.LaplaceGLM("logistic", n_max=100), w_prior)
    state = _fit(model, A, P, y)
    dt = model.to_datatree(state, 0, key=jax.random.key(5), draws=N_DRAWS,
                           chains=CHAINS)
    tau = np.asarray(dt.posterior["prior_scale"]).ravel()
    log_tau = np.asarray(model.laplace.log_tau, float)
    step = log_tau[1] - log_tau[0]
    k = np.rint((np.log(tau) - log_tau[0]) / step).astype(int)
    assert np.all(np.abs(np.log(tau) - log_tau[k]) <= 0.5 * step * (1 + 1e-4))
    # reference: the node expansions' mixture (latent_laplace_grid's docstring),
    # integrated over w on a fine grid in float64
    Saa, Sap, Spp, ba, bp, yy = (np.asarray(a, float)[0] for a in (
        state.Saa, state.Sap, state.Spp, state.ba, state.bp, state.yy))
    lams = np.exp(-2 * log_tau)

    def terms(w):  # (W, G)
        Pm = (lams[None, :, None, None] * np.eye(d) + Saa[None]
              + w[:, None, None, None] * (Sap + np.swapaxes(Sap, -1, -2))[None]
              + (w * w)[:, None, None, None] * Spp[None])
        b = ba[None] + w[:, None, None] * bp[None]
        quad = np.einsum("wgi,wgi->wg", b, np.linalg.solve(Pm, b[..., None])[..., 0])
        return yy[None] - 0.5 * np.linalg.slogdet(Pm)[1] + 0.5 * quad

    def logpost_w(w):
        return np.asarray(w_prior.log_prob(w)) + special.logsumexp(terms(w), axis=1)

    w = _w_grid(logpost_w, -15.0, 15.0)
    joint = np.asarray(w_prior.log_prob(w))[:, None] + terms(w)
    p_k = np.exp(joint - special.logsumexp(joint)).sum(0)
    counts = np.bincount(k, minlength=len(log_tau)).astype(float)
    assert _chi2_nodes(counts, p_k) > 1e-3


@pytest.mark.parametrize("noise_scale", [None, 0.5])
def test_latent_learnt_scale_names_follow_the_known_w_model(noise_scale):
    A, P, y = _data(n=10)
    model = LatentW(br.GaussianLinear(noise_scale=noise_scale), dist.Normal(0.0, 5.0))
    state = _fit(model, A, P, y)
    dt = model.to_datatree(state, 0, key=jax.random.key(0), draws=20, chains=2)
    known = br.GaussianLinear(noise_scale=noise_scale)
    ks = known.update(known.init(L=1, p=2), A[:1], y[:1])
    kdt = known.to_datatree(ks, 0, key=jax.random.key(0), draws=20, chains=2)
    assert set(dt.posterior.data_vars) == set(kdt.posterior.data_vars) | {"w"}
    assert set(dt.log_prior.data_vars) == set(kdt.log_prior.data_vars) | {"w"}
    for v in dt.posterior.data_vars.values():
        assert np.all(np.isfinite(np.asarray(v)))
