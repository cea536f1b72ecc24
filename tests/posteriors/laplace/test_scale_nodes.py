"""The adaptive nodes of a learnt Laplace scale (``LearntScaleLaplace(...,
nodes="adaptive")``, :mod:`bayesrank.posteriors.laplace.scale_nodes`) against
independent references: the 24-node grid (a Newton fit per node) and a 96-node grid
over the hyperprior's 1e-5 quantiles, the fixed-scale fit at each node's scale, the
hyperprior's CDF in closed form."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

from bayesrank.posteriors.laplace import scale_nodes
from bayesrank.posteriors.laplace.fixed_scale import FixedScaleLaplace
from bayesrank.posteriors.laplace.learnt_scale import LearntScaleLaplace, tau_grid

pytestmark = pytest.mark.x64

PRIOR = dist.HalfNormal(1.0)


def _data(seed, T, L, p, tau):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, L, p)) / np.sqrt(p)
    th = tau * rng.normal(size=(L, p))
    prob = 1.0 / (1.0 + np.exp(-np.einsum("nlp,lp->nl", X, th)))
    return X, (rng.uniform(size=(T, L)) < prob).astype(float)


def _tv_on_cells(grid_nodes, grid_w, nodes, w):
    """Total variation between the grid's piecewise-constant density in log tau and
    the adaptive nodes' weights, on the adaptive nodes' cells (the finer of the two
    cannot be resolved by the coarser)."""
    h = grid_nodes[1] - grid_nodes[0]
    edges = np.concatenate([[grid_nodes[0] - h / 2], 0.5 * (grid_nodes[1:] + grid_nodes[:-1]),
                            [grid_nodes[-1] + h / 2]])
    cdf = np.concatenate([[0.0], np.cumsum(grid_w)])
    at = np.interp(0.5 * (nodes[1:] + nodes[:-1]), edges, cdf)
    return 0.5 * np.abs(np.diff(np.concatenate([[0.0], at, [1.0]])) - w).sum()


def _fine_grid():
    model = LearntScaleLaplace("logistic", PRIOR, n_max=120, nodes="grid")
    model.log_tau, model.log_w0 = tau_grid(PRIOR, G=96, tail=1e-5)
    return model


@pytest.fixture(scope="module")
def runs():
    """Adaptive, 24-node and 96-node fits on the same logistic data (float64), at
    three true scales, checked after 10, 40 and 120 rows."""
    out = []
    models = {"adaptive": LearntScaleLaplace("logistic", PRIOR, n_max=120,
                                             nodes="adaptive"),
              "grid": LearntScaleLaplace("logistic", PRIOR, n_max=120),
              "fine": _fine_grid()}
    for seed, tau in enumerate((0.1, 0.7, 2.0)):
        X, y = _data(seed, 120, 2, 6, tau)
        states = {k: m.init(2, 6) for k, m in models.items()}
        for t in range(120):
            for k, m in models.items():
                states[k] = m.update(states[k], jnp.asarray(X[t]), jnp.asarray(y[t]))
            if t + 1 in (10, 40, 120):
                out.append((tau, t + 1, models, states))
    return out


@pytest.mark.parametrize("ref, tv_bound", [("grid", 0.09), ("fine", 0.035)])
def test_adaptive_nodes_match_the_grid_posterior_of_tau_and_theta(runs, ref, tv_bound):
    """tau's posterior within total variation ``tv_bound`` of the reference (on the
    adaptive cells), E[log tau] and E[theta] within 0.1 posterior sd."""
    worst = {"tv": 0.0, "log_tau": 0.0, "theta": 0.0}
    for tau, t, models, states in runs:
        A, R = models["adaptive"], models[ref]
        sa, sr = states["adaptive"], states[ref]
        wa, ra = np.exp(np.asarray(A.log_weights(sa))), np.asarray(A.node_log_tau(sa))
        wr, rr = np.exp(np.asarray(R.log_weights(sr))), np.asarray(R.log_tau)
        ma, mr = np.asarray(A.mean(sa)), np.asarray(R.mean(sr))
        sd = np.sqrt(np.diagonal(np.asarray(R.covariance(sr)), axis1=-2, axis2=-1))
        for l in range(2):
            e_r = wr[l] @ rr
            sd_r = np.sqrt(wr[l] @ (rr - e_r) ** 2)
            worst["tv"] = max(worst["tv"], _tv_on_cells(rr, wr[l], ra[l], wa[l]))
            worst["log_tau"] = max(worst["log_tau"], abs(wa[l] @ ra[l] - e_r) / sd_r)
            worst["theta"] = max(worst["theta"], np.max(np.abs(ma[l] - mr[l]) / sd[l]))
    assert worst["tv"] <= tv_bound, worst
    assert worst["log_tau"] <= 0.1 and worst["theta"] <= 0.1, worst


def test_node_fits_near_the_centre_are_the_fixed_scale_fits():
    """Each node's MAP, one Newton step from the centre's exact fit, is the
    fixed-scale model's MAP at that node's scale to within 0.1 posterior sd for the
    nodes within one sd of log tau's posterior, and the centre's is exact."""
    if True:
        X, y = _data(5, 80, 2, 4, 0.8)
        model = LearntScaleLaplace("logistic", PRIOR, n_max=80, nodes="adaptive")
        state = model.init(2, 4)
        for t in range(80):
            state = model.update(state, jnp.asarray(X[t]), jnp.asarray(y[t]))
        c = len(scale_nodes.Z) // 2
        near = np.flatnonzero(np.abs(scale_nodes.Z) <= 1.0)
        for j in near:
            lam = jnp.exp(-2.0 * state.log_tau[:, j])
            ref = FixedScaleLaplace("logistic", 1.0, n_max=80)
            fit, _ = ref._fit(state.x, state.y, state.n, jnp.zeros((2, 4)),
                              jnp.broadcast_to(jnp.eye(4), (2, 4, 4)), lam)
            sd = 1.0 / np.sqrt(np.diagonal(np.asarray(
                state.chol[:, j] @ jnp.swapaxes(state.chol[:, j], -1, -2)),
                axis1=-2, axis2=-1))
            err = np.max(np.abs(np.asarray(state.theta[:, j]) - np.asarray(fit)) / sd)
            assert err <= (1e-8 if j == c else 0.1), (j, err)


def test_cell_masses_are_the_hyperpriors_in_closed_form():
    """HalfNormal(1): P(a < tau < b) = erf(b / sqrt 2) - erf(a / sqrt 2), the end
    cells reaching 0 and infinity."""
    table = scale_nodes.prior_table(PRIOR)
    rho = jnp.asarray(np.linspace(-3.0, 1.0, 13), jnp.float64)[None]
    got = np.exp(np.asarray(scale_nodes.cell_log_mass(rho, table)))[0]
    r = np.asarray(rho)[0]
    edges = np.exp(np.concatenate([[-np.inf], 0.5 * (r[1:] + r[:-1]), [np.inf]]))
    want = np.diff([math.erf(e / math.sqrt(2)) if np.isfinite(e) else 1.0
                    for e in edges])
    np.testing.assert_allclose(got, want, atol=2e-6)
    assert abs(got.sum() - 1.0) < 1e-12


def test_adaptive_nodes_follow_the_data_and_an_invalid_position_keeps_its_state():
    """With rows the nodes move to where the data put tau (a true tau of 0.05 pulls
    them below the hyperprior's mean); ``valid=False`` leaves a position bit for bit."""
    model = LearntScaleLaplace("logistic", PRIOR, n_max=60, nodes="adaptive")
    X, y = _data(2, 60, 2, 6, 0.05)
    state = model.init(2, 6)
    first = np.asarray(state.log_tau)
    for t in range(60):
        before = state
        valid = jnp.asarray([True, t % 2 == 0])
        state = model.update(state, jnp.asarray(X[t]), jnp.asarray(y[t]), valid)
        if t % 2:
            for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(state)):
                np.testing.assert_array_equal(np.asarray(a)[1], np.asarray(b)[1])
    mean = (np.exp(np.asarray(state.log_w)) * np.asarray(state.log_tau)).sum(-1)
    assert mean[0] < first[0].mean() - 0.3, (mean, first.mean(-1))
    assert np.all(np.isfinite(np.asarray(state.log_w)))


@pytest.mark.parametrize("nodes", ["adaptve", 3, None])
def test_bad_nodes_are_refused(nodes):
    with pytest.raises(ValueError, match="nodes: expected one of"):
        LearntScaleLaplace("logistic", PRIOR, nodes=nodes)


def test_config_round_trip_keeps_the_nodes_and_latent_w_refuses_them():
    import bayesrank as br
    from bayesrank.posteriors import LatentLaplace

    model = br.LaplaceGLM._holding(LearntScaleLaplace("logistic", PRIOR, n_max=9,
                                                      nodes="adaptive"))
    back = br.LaplaceGLM.from_config(model.config())
    assert back.nodes == "adaptive" and back.config() == model.config()
    assert "nodes" not in br.LaplaceGLM().config()  # the grid's files unchanged
    with pytest.raises(ValueError, match="latent w needs the fixed grid"):
        LatentLaplace(model, dist.Normal(0.0, 1.0))
