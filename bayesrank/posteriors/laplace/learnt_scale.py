# Over 450 lines because: one class, LearntScaleLaplace, whose contract (update, draws, DataTree, files) serves both ways of integrating tau (the fixed grid and the adaptive nodes); splitting it would split the class.
"""Laplace GLM posterior that learns theta's prior scale (non-identity links).

For each position independently (Bernoulli or Poisson rewards: no noise scale)::

    tau ~ pi(tau)                          theta's prior sd (the hyperprior)
    theta | tau ~ N(0, tau^2 I)            (``LaplaceGLM()``: tau ~ HalfNormal(1))
    r_i ~ F(f(<theta, x_i>))               logistic, probit or exp link

**Laplace evidence on a coarse grid.** tau lives on ``GRID`` nodes, uniform in log tau
between the hyperprior's ``TAIL`` and ``1 - TAIL`` quantiles; node k carries the
hyperprior's mass of its cell in log tau (the end cells reach 0 and infinity, so the
tails are lumped into the end nodes and no prior mass is lost). At each node the
Laplace approximation of :class:`~bayesrank.posteriors.laplace.LaplaceGLM` gives the
MAP ``theta_k``, the Hessian ``H_k = I / tau_k^2 + sum_i w_i x_i x_i^T`` and the log
evidence::

    log p(y | tau_k) ~ sum_i log p(r_i | theta_k) - |theta_k|^2 / (2 tau_k^2)
                       - p log tau_k - 1/2 log det H_k

and the posterior of tau is the grid's ``log weight + log evidence``, normalised. A
draw picks a node from that posterior, then theta from ``N(theta_k, H_k^-1)``.

**Cost.** Every node keeps its own MAP and Hessian factor, refitted by the same
warm-started Newton iteration as ``LaplaceGLM`` (its first step from the rank-one
updated factor): once warm, about one pass over the buffer per node and round, so an
update costs about ``GRID`` fixed-scale updates (the evidence itself is free: the
log-likelihood and the factor are by-products of the fit). The choice of a coarse grid
with a MAP per node, over one MAP at the modal tau with a Gaussian extrapolation of
the evidence, is argued in docs/design-choices.md.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from bayesrank.posteriors import LaplaceGLM
    >>> model = LaplaceGLM(link="logistic", prior_scale=None, n_max=50)
    >>> type(model).__name__, type(model.scale_model).__name__    # the part it holds
    ('LaplaceGLM', 'LearntScaleLaplace')
    >>> state = model.init(L=2, p=3)
    >>> state = model.update(state, jnp.ones((2, 3)), jnp.array([1.0, 0.0]))
    >>> theta, state = model.draw(jax.random.key(0), state)
    >>> theta.shape
    (2, 3)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import jit_method, Part
from bayesrank._validate import check_int, check_position
from bayesrank.posteriors import buffers, linalg
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.host_sampler import host_rng
from bayesrank.posteriors.hyperprior import cell_spread, log_density, valid_hyperprior
from bayesrank.posteriors.laplace import glm_fit, scale_nodes
from bayesrank.posteriors.laplace.fixed_scale import FixedScaleLaplace
from bayesrank.posteriors.laplace.glm_fit import loglik
from bayesrank.posteriors.w_prior import prior_config, prior_from_config

__all__ = ["GRID", "NODES", "TAIL", "LearntScaleLaplace", "LearntScaleLaplaceState",
           "ScaleNodesState", "default_tau_hyperprior", "tau_grid"]

#: Nodes of the grid of log tau.
GRID = 24
#: Hyperprior quantiles at the grid's end nodes (their cells hold the tails).
TAIL = 0.01
#: How tau is integrated: nodes around the posterior's mode (the default) or the
#: fixed grid (the reference).
NODES = ("adaptive", "grid")


class LearntScaleLaplaceState(NamedTuple):
    """Buffers and one Laplace fit per grid node, leading axis L.

    Example:
        >>> from bayesrank.posteriors import LaplaceGLM
        >>> state = LaplaceGLM("logistic", prior_scale=None, n_max=10).init(L=2, p=3)
        >>> state.theta.shape, state.chol.shape
        ((2, 24, 3), (2, 24, 3, 3))
    """

    x: jax.Array  # (L, n_max, p) ring buffer of features
    y: jax.Array  # (L, n_max) ring buffer of rewards
    n: jax.Array  # (L,) int32, observations received (may exceed n_max: window)
    theta: jax.Array  # (L, G, p) MAP at each node of the grid of tau
    chol: jax.Array  # (L, G, p, p) lower factor of the Hessian at each node's MAP


class ScaleNodesState(NamedTuple):
    """Buffers and the nodes of tau around its posterior's mode
    (:mod:`~bayesrank.posteriors.laplace.scale_nodes`), leading axis L.

    Example:
        >>> from bayesrank.posteriors import LaplaceGLM
        >>> model = LearntScaleLaplace("logistic", None, n_max=10, nodes="adaptive")
        >>> state = model.init(L=2, p=3)
        >>> state.theta.shape, state.log_tau.shape
        ((2, 13, 3), (2, 13))
    """

    x: jax.Array  # (L, n_max, p) ring buffer of features
    y: jax.Array  # (L, n_max) ring buffer of rewards
    n: jax.Array  # (L,) int32, observations received (may exceed n_max: window)
    theta: jax.Array  # (L, J, p) each node's MAP
    chol: jax.Array  # (L, J, p, p) lower factor of each node's Hessian
    log_tau: jax.Array  # (L, J) the nodes, uniform in log tau
    log_pi: jax.Array  # (L, J) log hyperprior mass of each node's cell
    log_w: jax.Array  # (L, J) normalised log posterior weight of each node


def default_tau_hyperprior():
    """``LaplaceGLM()``'s hyperprior of tau: ``HalfNormal(1)``.

    The Laplace approximation is over-confident where tau is large: the clicks are
    then nearly separable and the posterior is skewed along the separating
    direction. Under HalfCauchy(1) (20 % of its mass above tau = 3) simulation-based
    calibration fails at 1,000 simulations (p = 0.0012, theta's coordinates flagged;
    25 % of theta's ranks outside the central 90 % where the true tau >= 3); under
    HalfNormal(1) theta's ranks pass (docs/units.md). A logit scale above 3 per
    coordinate is nearly deterministic clicks, which HalfNormal(1) still allows.

    Example:
        >>> type(default_tau_hyperprior()).__name__
        'HalfNormal'
    """
    import numpyro.distributions as dist

    return dist.HalfNormal(1.0)


def tau_grid(prior=None, G: int = GRID, tail: float = TAIL):
    """``(log_tau (G,), log weight (G,))``: nodes uniform in log tau between the
    hyperprior's ``tail`` and ``1 - tail`` quantiles; each node's weight is the
    hyperprior's mass of its cell (midpoints in log tau; the end cells reach 0 and
    infinity). None: HalfCauchy(1).

    Example:
        >>> log_t, logw = tau_grid()
        >>> round(float(np.exp(logw).sum()), 6), log_t.shape
        (1.0, (24,))
    """
    fine, cdf = scale_nodes.prior_table(prior)
    a, b = np.interp([tail, 1.0 - tail], cdf, fine)
    log_t = np.linspace(a, b, G)
    edges = np.interp(0.5 * (log_t[1:] + log_t[:-1]), fine, cdf)
    cell = np.diff(np.concatenate([[0.0], edges, [1.0]]))
    return log_t, np.log(np.maximum(cell, 1e-300))


def node_spread(nodes, k, frac):
    """``nodes`` (L, J) uniform per position, k (..., L) node indices: each drawn
    node moved to the place ``frac`` in [0, 1] of its cell in log tau."""
    at = jnp.take_along_axis(jnp.broadcast_to(nodes, k.shape[:-1] + nodes.shape),
                             k[..., None], -1)[..., 0]
    return at + (nodes[:, 1] - nodes[:, 0]) * (frac - 0.5)


#: LearntScaleLaplace.update compiled once per model configuration.
_UPDATE = jit_method("_update_core")
_UPDATE_NODES = jit_method("_update_nodes")


class LearntScaleLaplace(Part):
    """Laplace GLM posterior per position whose prior scale tau is learnt on a grid
    (see the module docstring). The part ``LaplaceGLM(prior_scale=None | <dist>)``
    holds for the logistic, probit and exp links (None: :func:`default_tau_hyperprior`;
    ``LaplaceGLM.scale_model``); it describes itself as a
    ``LaplaceGLM`` (``repr``).

    Args:
        link: "logistic", "probit" or "exp".
        prior_scale: None (HalfCauchy(1) in closed form: the files saved before
            ``LaplaceGLM()`` took :func:`default_tau_hyperprior`) or a
            scalar NumPyro distribution on (0, inf): the hyperprior of tau.
        n_max, tol, max_iter, hessian_tol: as :class:`LaplaceGLM` (every node's fit).
        nodes: "grid" (the default: the 24 fixed nodes, a Newton fit each) or
            "adaptive" (13 nodes around the mode of log tau's posterior, moved
            with it, one Newton fit a round,
            :mod:`~bayesrank.posteriors.laplace.scale_nodes`; known w only for
            now, not yet the default: docs/design-choices.md).

    Raises:
        ValueError: the identity link (use ``GaussianLinear``), a hyperprior that is
            not a positive scalar distribution, bad numbers (the message names them).

    Example:
        >>> import numpyro.distributions as dist
        >>> from bayesrank.posteriors import LaplaceGLM
        >>> LaplaceGLM("logistic", prior_scale=dist.HalfNormal(2.0), n_max=10)
        LaplaceGLM(link='logistic', prior_scale=HalfNormal(...), n_max=10)
    """

    vmappable = True
    learnt_scale = True

    def __init__(self, link="logistic", prior_scale=None, *, n_max: int = 2000,
                 tol=1e-10, max_iter: int = 50, hessian_tol=None, nodes="grid"):
        base = FixedScaleLaplace(link, 1.0, n_max=n_max, tol=tol, max_iter=max_iter,
                          hessian_tol=hessian_tol)  # checks the shared arguments
        if base.link.name == "identity":
            raise ValueError("link: the identity link learns its scales exactly: use "
                             "GaussianLinear(prior_scale=None) (or LaplaceGLM's "
                             "delegation to it)")
        self._base = base
        self.link = base.link
        self.reward_support = base.reward_support
        self.n_max, self.tol, self.max_iter = base.n_max, base.tol, base.max_iter
        self.hessian_tol = base.hessian_tol
        self.hyperprior = valid_hyperprior(prior_scale, "prior_scale")
        if not isinstance(nodes, str) or nodes not in NODES:
            raise ValueError(f"nodes: expected one of {NODES}, got {nodes!r}")
        self.nodes = nodes
        #: the fixed grid (the nodes of ``nodes="grid"``) and its cells' masses
        self.log_tau, self.log_w0 = tau_grid(self.hyperprior)
        if nodes == "adaptive":
            self._table = scale_nodes.prior_table(self.hyperprior)
            rho, cdf = self._table
            mass = np.diff(cdf)
            mid = 0.5 * (rho[1:] + rho[:-1])
            mean = float(mass @ mid)
            #: the nodes' first centre, the hyperprior's mean in log tau
            self.centre0 = mean
            #: the nodes' largest spread, the hyperprior's sd in log tau
            self.spread0 = float(np.sqrt(mass @ (mid - mean) ** 2))

    #: what ``LaplaceGLM(prior_scale=None)`` passes as the hyperprior
    default_hyperprior = staticmethod(default_tau_hyperprior)

    def __repr__(self) -> str:
        hp = ("None" if self.hyperprior is None
              else f"{type(self.hyperprior).__name__}(...)")
        grid = ", nodes='adaptive'" if self.nodes == "adaptive" else ""
        return (f"LaplaceGLM(link={self.link.name!r}, prior_scale={hp}, "
                f"n_max={self.n_max}{grid})")

    def label(self) -> str:
        """Short name for reports."""
        return f"LaplaceGLM({self.link.name}, learnt scale)"

    def _lams(self, dtype):
        return jnp.exp(-2.0 * jnp.asarray(self.log_tau, dtype))

    # ------------------------------------------------------------------ contract
    def init(self, L: int, p: int) -> LearntScaleLaplaceState | ScaleNodesState:
        """The prior: every node's MAP 0 and Hessian I / tau_k^2, empty buffers."""
        s = self._base.init(L, p)
        dtype = s.theta.dtype
        if self.nodes == "adaptive":
            rho = jnp.broadcast_to(jnp.asarray(
                self.centre0 + self.spread0 * scale_nodes.Z, dtype),
                (L, len(scale_nodes.Z)))
            log_pi = scale_nodes.cell_log_mass(rho, self._table)
            eye = jnp.eye(p, dtype=dtype)
            return ScaleNodesState(
                s.x, s.y, s.n, jnp.zeros((L, rho.shape[1], p), dtype),
                jnp.exp(-rho)[..., None, None] * eye, rho, log_pi,
                log_pi - jax.scipy.special.logsumexp(log_pi, -1, keepdims=True))
        G = len(self.log_tau)
        eye = jnp.eye(s.theta.shape[1], dtype=dtype)
        chol = jnp.exp(-jnp.asarray(self.log_tau, dtype))[:, None, None] * eye
        return LearntScaleLaplaceState(
            s.x, s.y, s.n, jnp.zeros((s.x.shape[0], G, s.theta.shape[1]), dtype),
            jnp.broadcast_to(chol, (s.x.shape[0], *chol.shape)))

    def update(self, state, x, y, valid=None) -> LearntScaleLaplaceState:
        """Add one observation per position and refit every node's MAP and Hessian:
        x (L, p), y (L,), valid (L,) bool (False leaves the position bit for bit)."""
        x, y, valid = buffers.valid_update(state, x, y, valid)
        if self.nodes == "adaptive":
            return _UPDATE_NODES(self, state, x, y, valid)
        return _UPDATE(self, state, x, y, valid)

    def _update_nodes(self, state, x, y, valid) -> ScaleNodesState:
        """The adaptive nodes' round (:mod:`~bayesrank.posteriors.laplace.scale_nodes`)."""
        L = state.x.shape[0]
        dtype = state.x.dtype
        x_buf, y_buf, n = buffers.append_rows(state, x, y, valid)
        # the nodes move to the posterior's mean and sd after the last round
        m, s = scale_nodes.centre_spread(state.log_tau, state.log_w, self.spread0)
        rho = m[:, None] + s[:, None] * jnp.asarray(scale_nodes.Z, dtype)
        lam_c = jnp.exp(-2.0 * m)
        # the exact fit at the centre, from the last centre's MAP moved to lam_c by
        # one Newton step, its first Hessian the last one's at lam_c plus the new row
        c = len(scale_nodes.Z) // 2
        th_old, ch_old = state.theta[:, c], state.chol[:, c]
        lam_old = jnp.exp(-2.0 * state.log_tau[:, c])
        th0, ch0, _ = scale_nodes.node_fits(th_old, ch_old, lam_old, lam_c[:, None])
        th0, ch0 = th0[:, 0], ch0[:, 0]
        eta = jnp.einsum("lp,lp->l", th0, x)
        d2 = glm_fit.link_derivatives(self.link.name)(eta, y)[1]
        row = jnp.where(valid[:, None], jnp.sqrt(jnp.maximum(d2, 0.0))[:, None] * x, 0.0)
        ch0 = jax.vmap(linalg.chol_update)(ch0, row)
        theta_c, chol_c = self._base._fit(x_buf, y_buf, n, th0, ch0, lam_c)
        lam = jnp.exp(-2.0 * rho)
        theta, chol, (U, D) = scale_nodes.node_fits(theta_c, chol_c, lam_c, lam)
        # the centre keeps its exact fit
        theta = theta.at[:, c].set(theta_c)
        chol = chol.at[:, c].set(chol_c)
        inv = 1.0 / (D[:, None, :] + lam[..., None])
        lik, dlogdet = scale_nodes.node_loglik(self.link.name, x_buf, y_buf, n, theta,
                                               (U, D, inv), c)
        log_pi = scale_nodes.cell_log_mass(rho, self._table)
        logits = log_pi + scale_nodes.log_evidence(lik, theta, chol, rho, dlogdet)
        logits = jnp.where(jnp.isfinite(logits), logits, -jnp.inf)
        log_w = logits - jax.scipy.special.logsumexp(logits, -1, keepdims=True)
        new = ScaleNodesState(x_buf, y_buf, n, theta, chol, rho, log_pi, log_w)
        return jax.tree.map(
            lambda a, b: jnp.where(valid.reshape((L,) + (1,) * (a.ndim - 1)), a, b),
            new, state._replace(x=x_buf, y=y_buf, n=n))

    def _update_core(self, state, x, y, valid) -> LearntScaleLaplaceState:
        L, n_max, _ = state.x.shape
        x_buf, y_buf, n = buffers.append_rows(state, x, y, valid)
        eta = jnp.einsum("lgp,lp->lg", state.theta, x)
        yy = jnp.broadcast_to(y[:, None], eta.shape)
        d2 = glm_fit.link_derivatives(self.link.name)(eta.ravel(), yy.ravel())[1].reshape(eta.shape)
        row = jnp.where(valid[:, None, None],
                        jnp.sqrt(jnp.maximum(d2, 0.0))[..., None] * x[:, None, :], 0.0)
        chol0 = jax.vmap(jax.vmap(linalg.chol_update))(state.chol, row)
        lams = self._lams(x_buf.dtype)
        theta, chol = jax.vmap(
            lambda t0, c0, lam: self._base._fit(x_buf, y_buf, n, t0, c0, lam),
            in_axes=(1, 1, 0), out_axes=(1, 1))(state.theta, chol0, lams)
        pick = lambda new, old: jnp.where(  # noqa: E731
            valid.reshape((L,) + (1,) * (new.ndim - 1)), new, old)
        return LearntScaleLaplaceState(x_buf, y_buf, n, pick(theta, state.theta),
                                       pick(chol, state.chol))

    def node_log_tau(self, state) -> jax.Array:
        """(L, J) the nodes in log tau (the grid's, the same at every position, or
        the adaptive nodes of each position)."""
        if isinstance(state, ScaleNodesState):
            return state.log_tau
        return jnp.broadcast_to(jnp.asarray(self.log_tau, state.x.dtype),
                                state.theta.shape[:2])

    def node_log_prior(self, state) -> jax.Array:
        """(L, J) the log hyperprior mass of every node's cell."""
        if isinstance(state, ScaleNodesState):
            return state.log_pi
        return jnp.broadcast_to(jnp.asarray(self.log_w0, state.x.dtype),
                                state.theta.shape[:2])

    def log_evidence(self, state) -> jax.Array:
        """(L, J) the Laplace log evidence ``log p(y | tau_k)`` at every node (up to
        a constant common to the nodes)."""
        lik = scale_nodes.node_loglik(self.link.name, state.x, state.y, state.n,
                                      state.theta)
        return scale_nodes.log_evidence(lik, state.theta, state.chol,
                                        self.node_log_tau(state))

    def log_weights(self, state) -> jax.Array:
        """(L, J) the normalised log posterior of tau on the nodes (the adaptive
        nodes keep it from the last update)."""
        if isinstance(state, ScaleNodesState):
            return state.log_w
        logits = self.node_log_prior(state) + self.log_evidence(state)
        return logits - jax.scipy.special.logsumexp(logits, -1, keepdims=True)

    def scale_posterior(self, state):
        """The posterior of tau on the nodes per position: ``(tau (L, J), weights
        (L, J))``."""
        logw = self.log_weights(state)
        return jnp.exp(self.node_log_tau(state)), jnp.exp(logw)

    def _draws(self, key, state, shape):
        """theta (*shape, L, p) and the node index (*shape, L)."""
        k_g, k_e = jax.random.split(key)
        L, G, p = state.theta.shape
        k = jax.random.categorical(k_g, self.log_weights(state), -1, (*shape, L))
        pos = jnp.arange(L)
        mean, chol = state.theta[pos, k], state.chol[pos, k]  # (*shape, L, p[, p])
        eps = jax.random.normal(k_e, (*shape, L, p), state.theta.dtype)
        spread = jax.lax.linalg.triangular_solve(
            chol, eps[..., None], left_side=True, lower=True, transpose_a=True)[..., 0]
        return mean + spread, k

    def draw(self, key, state):
        """One theta per position: tau from its grid posterior, then theta from the
        Laplace Gaussian at that tau. Returns theta (L, p), and the state unchanged."""
        return self._draws(key, state, ())[0], state

    def draw_batch(self, key, state, n: int) -> jax.Array:
        """n independent draws at once: (n, L, p)."""
        return self._draws(key, state, (int(n),))[0]

    def draw_scales(self, key, state, n: int):
        """n draws with their scales: ``theta (n, L, p)``, ``tau (n, L)``.

        tau is its node's value spread uniformly in log tau over the node's cell (as
        :func:`bayesrank.posteriors.hyperprior.grid_draw` spreads g): the piecewise-constant density whose
        cell masses are the grid's weights, theta | tau the node's Laplace Gaussian
        throughout the cell. Confined to the 24 nodes, 0.23 apart in log tau, the
        drawn tau ranks against a continuous truth as a step function of its cell,
        which simulation-based calibration flags. theta's draws are the same as
        :meth:`draw_batch`'s for the same key."""
        theta, k = self._draws(key, state, (int(n),))
        u = jax.random.uniform(jax.random.fold_in(key, 1), k.shape, theta.dtype)
        return theta, jnp.exp(node_spread(self.node_log_tau(state), k, u))

    def mean(self, state) -> jax.Array:
        """(L, p) the posterior mean: the MAPs averaged over tau's grid posterior."""
        return jnp.einsum("lg,lgp->lp", jnp.exp(self.log_weights(state)), state.theta)

    def map_node(self, state):
        """The grid's modal node per position: ``(theta_k (L, p), lam_k (L,))``, its
        MAP and its ridge weight ``1 / tau_k^2``.

        theta_k is the ``lam_k``-regularised MLE (Lemma 3 of the paper), so the UCB
        family (:class:`~bayesrank.policies.Optimistic`) pairs it with the design
        Gram matrix ``V = lam_k I + sum x x^T`` of the same ``lam_k``: the paired
        estimate and ellipsoid of Lemma 3, at the prior scale the data favour. (The
        grid-averaged precision ``E[1 / tau^2 | D]`` is not used: under a
        HalfCauchy hyperprior it is infinite, and on the grid it is set by the
        lowest node's tail mass.)
        """
        k = jnp.argmax(self.log_weights(state), -1)
        theta = jnp.take_along_axis(state.theta, k[:, None, None], 1)[:, 0]
        log_tau = jnp.take_along_axis(self.node_log_tau(state), k[:, None], 1)[:, 0]
        return theta, jnp.exp(-2.0 * log_tau)

    def covariance(self, state) -> jax.Array:
        """(L, p, p) the mixture's covariance (for inspection, not hot paths)."""
        w = jnp.exp(self.log_weights(state))
        eye = jnp.eye(state.theta.shape[-1], dtype=state.theta.dtype)
        inv = jax.vmap(jax.vmap(lambda c: linalg.chol_solve(c, eye)))(state.chol)
        m = self.mean(state)
        d = state.theta - m[:, None, :]
        return jnp.einsum("lg,lgij->lij", w, inv + d[..., :, None] * d[..., None, :])

    def refresh(self, key, state):
        """No-op: ``update`` already refits every node."""
        del key
        return state

    def check_rewards(self, y) -> None:
        """Host-side check: rewards in the likelihood's support (raises)."""
        self._base.check_rewards(y)

    def validate_loaded(self, state, name: str = "model") -> None:
        """Host-side check of a state read from a file (as
        ``LaplaceGLM.validate_loaded``; every node's factor)."""
        self._base.validate_loaded(state, name)

    # -------------------------------------------------------------- host side
    def data(self, state, position: int):
        """The observations the posterior at ``position`` conditions on, oldest
        first (as ``LaplaceGLM.data``)."""
        return self._base.data(state, position)

    def to_datatree(self, state, position: int, *, key, data=None, draws: int = 1000,
                    chains: int = 4):
        """I.i.d. draws of the grid mixture at one position as a DataTree: posterior
        variables ``theta`` and ``prior_scale`` (tau); ``log_prior`` holds theta's
        Gaussian term and tau's hyperprior. ``data`` is ignored (the buffers hold the
        observations, as for :class:`LaplaceGLM`)."""
        from scipy.linalg import solve_triangular

        del data
        position = check_position(position, state.x.shape[0])
        draws = check_int(draws, "draws", low=1)
        chains = check_int(chains, "chains", low=1)
        rng = host_rng(key)
        w = np.asarray(jnp.exp(self.log_weights(state))[position], float)
        N = chains * draws
        k = rng.choice(len(w), size=N, p=w / w.sum())
        means = np.asarray(state.theta[position], float)
        chols = np.asarray(state.chol[position], float)
        p = means.shape[1]
        z = rng.standard_normal((N, p))
        theta = np.empty((N, p))
        for j in np.unique(k):
            sel = k == j
            theta[sel] = means[j] + solve_triangular(chols[j], z[sel].T, lower=True,
                                                     trans="T").T
        nodes = np.asarray(self.node_log_tau(state)[position], float)
        tau = np.exp(cell_spread(nodes, k, rng.uniform(size=N)))
        lp_theta = (-0.5 * p * np.log(2 * math.pi * tau**2)
                    - 0.5 * np.sum(theta**2, -1) / tau**2)
        X, y = self.data(state, position)
        ll = obs = const = None
        if y.shape[0] > 0:
            ll = np.asarray(loglik(self.link.name)(theta @ X.T, y)).reshape(
                chains, draws, -1)
            obs, const = y, {"X": X}
        return make_datatree(
            {"theta": theta.reshape(chains, draws, p),
             "prior_scale": tau.reshape(chains, draws)},
            log_likelihood=ll,
            log_prior={"theta": lp_theta.reshape(chains, draws),
                       "prior_scale": log_density(self.hyperprior, tau).reshape(
                           chains, draws)},
            observed=obs, constant_data=const,
            attrs={"model": "LaplaceGLM (learnt scale)", "link": self.link.name,
                   "position": position})

    # ------------------------------------------------------------ persistence
    def config(self) -> dict:
        """JSON-able constructor arguments, with ``class``."""
        hyper = None
        if self.hyperprior is not None:
            hyper = prior_config(self.hyperprior)
            if hyper["params"] is None:
                raise ValueError(f"prior_scale: cannot save the hyperprior: {hyper['why']}")
        cfg = {"class": "LearntScaleLaplace", "link": self.link.name,
               "prior_scale": hyper, "n_max": self.n_max, "tol": self.tol,
               "max_iter": self.max_iter, "hessian_tol": self.hessian_tol}
        if self.nodes != "grid":  # the grid's files stay as they were
            cfg["nodes"] = self.nodes
        return cfg

    @classmethod
    def from_config(cls, cfg: dict) -> LearntScaleLaplace:
        """Rebuild from :meth:`config` (the hyperprior by class name, never imported)."""
        if not isinstance(cfg, dict):
            raise TypeError(f"cfg: expected a dict, got {type(cfg).__name__}")
        cfg = dict(cfg)
        name = cfg.pop("class", "LearntScaleLaplace")
        if name != "LearntScaleLaplace":
            raise ValueError(f"cfg: describes a {name!r}, not a 'LearntScaleLaplace'")
        unknown = sorted(set(cfg) - {"link", "prior_scale", "n_max", "tol", "max_iter",
                                     "hessian_tol", "nodes"})
        if unknown:
            raise ValueError(f"cfg: unknown LearntScaleLaplace options {unknown}")
        if isinstance(cfg.get("prior_scale"), dict):
            try:
                cfg["prior_scale"] = prior_from_config(cfg["prior_scale"])
            except ValueError as exc:
                raise ValueError(str(exc).replace("w_prior:", "prior_scale:", 1)) \
                    from None
        elif cfg.get("prior_scale") is not None:
            raise ValueError("cfg: prior_scale must be a saved hyperprior or None")
        return cls(**cfg)
