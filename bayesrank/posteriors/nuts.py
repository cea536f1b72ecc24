"""Per-position posteriors sampled by warm-started NUTS (NumPyro's functional kernel).

Each position l has its own posterior over theta^l, defined by a NumPyro model (see
:mod:`bayesrank.posteriors.numpyro_models` for the contract), and its own NUTS chain. Nothing
recompiles as data arrive:

* Data live in zero-padded buffers ``x (L, n_max, p)``, ``y (L, n_max)`` with a count
  per position; padded rows are masked on the observed sites only (the prior is never
  masked), so every shape is static.
* The chains are NumPyro ``HMCState`` s built by ``numpyro.infer.hmc.hmc(
  potential_fn_gen=..., algo="NUTS")`` on the potential generator of
  ``initialize_model(..., dynamic_args=True)``, batched over positions with ``vmap``.
* ``update`` writes one impression into the buffers and refreshes ``potential_energy``
  and ``z_grad`` of each chain at its current ``z`` on the new data (the kernel reuses
  them, so stale values would make the next transition target the old posterior).
* ``draw`` runs ``steps_per_round`` NUTS transitions per position and returns the last
  ``theta``. The whole state is a NamedTuple of arrays: ``draw`` and ``update`` jit,
  ``lax.scan`` over rounds and ``vmap`` over runs.

Adaptation. The first ``num_warmup`` transitions of each chain adapt step size and
(diagonal or dense) mass matrix with NumPyro's Stan-style windows, on whatever data have
arrived (the prior at first); warm-up then re-runs on the geometric schedule of
:mod:`bayesrank.posteriors.nuts_adapt`. Draws made while adapting come from an adaptive
chain (fine for Thompson sampling; ``diagnostics`` says when). Use ``num_warmup`` >= 100:
NumPyro's windows shrink below 150 and a very short warm-up ends with a poor step size.

Buffer overflow (more than ``n_max`` observations at a position): ``overflow="raise"``
(default) raises ValueError from ``update`` when called eagerly, and under ``jit`` /
``scan`` a host callback raises, which surfaces as a ``JaxRuntimeError`` carrying the
same message (inside a ``scan`` the check costs nothing measurable per round, but a
jitted function containing it pays a host synchronisation per call (costly on CPU;
figures: docs/performance.md, "Why the code is written this way"); a
Python loop of rounds should call ``update`` eagerly, where the host check replaces the
callback, or use "window"). ``overflow="window"`` keeps the most recent ``n_max`` observations (a ring
buffer): the posterior then conditions on a sliding window; ``state.n`` still counts
every observation so the truncation is visible.

Posterior mean. ``mean(state)`` is a running mean of the per-round draws (each round
contributes the average of its ``steps_per_round`` transitions) with weight
``1 / min(k, mean_window)`` at round k: the exact average of all rounds for the first
``mean_window`` rounds, then an exponentially weighted average over about the last
``mean_window`` rounds, so it follows the posterior as data arrive. It moves only when
the chains advance: ``draw`` does, and so does ``refresh(key, state)`` (what a UCB
policy calls before reading ``mean``).

Module layout: this module holds the online kernel (buffers, init/update/draw/refresh,
config); :mod:`.nuts_adapt` the re-adaptation schedule; :mod:`.nuts_export` the
DataTree export with fresh chains (compiled once per model and shape);
:mod:`.numpyro_compat` everything that touches NumPyro internals; :mod:`.registry` the
names under which model functions are saved; :mod:`.model_link` the link inference.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from bayesrank.posteriors.nuts import BayesGLM
    >>> model = BayesGLM(link="logistic", n_max=100)
    >>> state = model.init(L=2, p=3)
    >>> state = model.update(state, jnp.ones((2, 3)), jnp.array([1.0, 0.0]))
    >>> theta, state = model.draw(jax.random.key(0), state)
    >>> theta.shape
    (2, 3)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.distributions import biject_to, constraints
from numpyro.infer.util import potential_energy as _potential_energy
from numpyro.primitives import Messenger

from bayesrank._static import Part, jit_method
from bayesrank._validate import check_int, check_real
from bayesrank.model.links import Link, get_link
from bayesrank.posteriors import numpyro_models as models
from bayesrank.posteriors.base import check_reward_support
from bayesrank.posteriors.laplace import check_update
from bayesrank.posteriors.model_link import infer_link, support_of
from bayesrank.posteriors.numpyro_compat import (
    HMCState,
    Kernel,
    build_kernel,
    refresh_potential,
)
from bayesrank.posteriors.nuts_adapt import Schedule, readapt
from bayesrank.posteriors.nuts_export import fresh_chains
from bayesrank.posteriors.registry import function_path, resolve_model
from bayesrank.posteriors.scaled import check_hyperprior
from bayesrank.posteriors.w_prior import prior_config, prior_from_config

__all__ = ["BayesGLM", "MaskObserved", "NumPyroModel", "NutsState"]

_SUPPORT_BY_LINK = {
    "identity": "real",
    "logistic": "binary",
    "probit": "binary",
    "exp": "count",
}


class NutsState(NamedTuple):
    """State of the per-position NUTS posteriors (arrays only; leading axis L).

    Example:
        >>> import bayesrank as br
        >>> state = br.BayesGLM(link="logistic", n_max=50).init(L=2, p=3)
        >>> state.x.shape, state.theta.shape
        ((2, 50, 3), (2, 3))
    """

    x: jax.Array  # (L, n_max, p) feature buffer, zero rows past the count
    y: jax.Array  # (L, n_max) reward buffer
    n: jax.Array  # (L,) int, observations received (may exceed n_max in "window")
    hmc: HMCState  # per-position NUTS states, every leaf with leading axis L
    readapt_at: jax.Array  # (L,) int, count at which warm-up re-runs next
    theta: jax.Array  # (L, p) last draw
    theta_mean: jax.Array  # (L, p) running mean of the draws (see ``mean``)
    rounds: jax.Array  # () int, number of ``draw`` calls
    divergences: jax.Array  # (L,) int, divergent post-warm-up transitions
    accept_sum: jax.Array  # (L,) sum of acceptance probabilities, post-warm-up
    steps_sum: jax.Array  # (L,) int, leapfrog steps, post-warm-up
    transitions: jax.Array  # (L,) int, post-warm-up transitions
    tree_depth: jax.Array  # (L,) int, tree depth of the last transition


class MaskObserved(Messenger):
    """Mask observed sample sites only (the prior is left alone).

    A site is masked when it is observed and the last dim of its batch shape equals
    the mask length (the observation axis). ``numpyro.handlers.mask`` would mask
    every site, the prior included.

    Args:
        fn: a model, or None to use as a context manager.
        mask: (n,) bool, True for the rows that count.

    Example:
        >>> import jax.numpy as jnp, numpyro, numpyro.distributions as dist
        >>> from numpyro.handlers import seed, trace
        >>> from bayesrank.posteriors import MaskObserved
        >>> def model(y=None):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     numpyro.sample("y", dist.Normal(mu, 1.0).expand([3]), obs=y)
        >>> masked = MaskObserved(model, mask=jnp.array([True, False, True]))
        >>> tr = trace(seed(masked, 0)).get_trace(y=jnp.zeros(3))
        >>> (tr["y"]["fn"].log_prob(jnp.zeros(3)) != 0).tolist()   # row 2 dropped
        [True, False, True]
    """

    def __init__(self, fn: Callable | None = None, mask=None):
        if mask is None:
            raise ValueError("mask: expected an (n,) boolean array, got None")
        self.mask = mask
        super().__init__(fn)

    def process_message(self, msg):
        if msg["type"] != "sample" or not msg["is_observed"]:
            return
        batch = tuple(msg["fn"].batch_shape)
        if batch and batch[-1] == self.mask.shape[-1]:
            msg["fn"] = msg["fn"].mask(self.mask)


def _is_key(a) -> bool:
    return hasattr(a, "dtype") and jnp.issubdtype(a.dtype, jax.dtypes.prng_key)


def _typed_key(key):
    key = jnp.asarray(key) if not hasattr(key, "dtype") else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    return jax.random.wrap_key_data(key)


def _raise_overflow(full, n_max):
    if np.any(np.asarray(full)):
        raise ValueError(
            f"update: a position received more than n_max={int(n_max)} observations; "
            "raise n_max or pass overflow='window' to keep the most recent n_max"
        )




#: The models' jitted steps, compiled once per model configuration: the model is
#: an argument (a pytree; its kernel caches are carried, not compared).
_UPDATE = jit_method("_update_core", static_argnums=5)
_DRAW = jit_method("_draw_core")
_POTENTIAL = jit_method("_potential_core")


#: How the L positions' chains advance: in turn (``lax.map``, True) or batched
#: (``vmap``, False); None: in turn on CPU, batched on other backends. Read when a
#: program is traced: set it before building policies (``benchmarks/nuts.py``
#: measures both).
POSITIONS_IN_TURN: bool | None = None


def _vmap_map(f, xs):
    """``jax.lax.map``'s signature, batched with vmap."""
    return jax.vmap(f)(xs)


def _base_support(fn):
    """A distribution's support without its ``independent`` wrappers."""
    support = fn.support
    while isinstance(support, constraints.independent):
        support = support.base_constraint
    return support


class NumPyroModel(Part):
    """Any NumPyro model ``model(x, y=None)`` per position, sampled by warm NUTS.

    Args:
        model: a NumPyro model following :mod:`bayesrank.posteriors.numpyro_models`' contract.
        theta_site: name of the (p,)-shaped latent or deterministic site to draw.
        link: the link used to score items (name, Link or callable). None (default):
            inferred from the model's observed site (:mod:`.model_link`: e.g.
            ``Bernoulli(logits=x @ theta)`` -> logistic, ``Poisson(exp(...))`` ->
            exp, ``Normal(x @ theta, s)`` -> identity), or a ValueError asking
            for ``link=``; never a silent identity.
        reward_support: "real", "binary" or "count", checked by ``check_rewards``.
            None (default): from the observed site's support.
        n_max: buffer length per position.
        num_warmup: warm-up (adaptation) transitions per (re-)adaptation.
        steps_per_round: NUTS transitions per ``draw``.
        readapt_start: observation count of the first warm-up re-run.
        readapt_growth: factor by which the count grows between re-runs (> 1), or
            None never to re-run warm-up.
        refit_every: run transitions only every ``refit_every``-th draw (others
            return the previous draw). Uses ``lax.cond``: under ``vmap`` over runs it
            becomes a select and saves nothing.
        max_tree_depth: NUTS tree depth limit (at most 2**depth leapfrog steps).
        target_accept_prob: dual-averaging target.
        dense_mass: adapt a dense mass matrix instead of a diagonal one.
        mean_window: rounds over which ``mean`` averages (see module docstring).
        overflow: "raise" or "window" (see module docstring).
        dim: feature dimension for the construction-time check (default 2).
        w_site: the name of a scalar latent site that, if the model declares it,
            makes it a latent-w model (``RankTS`` learns w): the model then takes the
            pair features ``x = (v_{a^l}, v_{a^{l-1}})`` (n, 2d), its theta site has
            shape (d,), and ``draw`` returns ``(theta (L, d), w (L,))``.

    Raises:
        ValueError: the model has no site ``theta_site`` (traced once on dummy data),
            or an option is out of range.

    Example:
        >>> import functools
        >>> from bayesrank.posteriors import numpyro_models as models
        >>> m = NumPyroModel(functools.partial(models.student_t_glm, df=4.0))
        >>> state = m.init(L=3, p=2)
    """

    #: ``bayesrank.simulate`` runs NUTS policies run by run (each run still one
    #: compiled ``lax.scan``): batched NUTS trees wait for the longest tree, so a
    #: vmap over runs is slower than a loop on CPU (docs/performance.md, "Why the code
    #: is written this way"; ``benchmarks/nuts.py``).
    vmappable = False
    #: per-instance caches of kernels built from the compared settings
    _derived = ("_cache", "_export_cache", "_schedule")

    def __init__(
        self,
        model: Callable,
        theta_site: str = "theta",
        *,
        link: str | Link | Callable | None = None,
        reward_support: str | None = None,
        n_max: int = 2000,
        num_warmup: int = 200,
        steps_per_round: int = 5,
        readapt_start: int = 10,
        readapt_growth: float | None = 4.0,
        refit_every: int = 1,
        max_tree_depth: int = 6,
        target_accept_prob: float = 0.8,
        dense_mass: bool = False,
        mean_window: int = 20,
        overflow: str = "raise",
        dim: int | None = None,
        w_site: str = "w",
    ):
        if not callable(model):
            raise TypeError(f"model: expected a callable, got {type(model).__name__}")
        if not isinstance(theta_site, str):
            raise TypeError(f"theta_site: expected a str, got {theta_site!r}")
        if reward_support not in (None, "real", "binary", "count"):
            raise ValueError(
                "reward_support: expected 'real', 'binary' or 'count', "
                f"got {reward_support!r}"
            )
        if overflow not in ("raise", "window"):
            raise ValueError(
                f"overflow: expected 'raise' or 'window', got {overflow!r}"
            )
        if readapt_growth is not None and not (
            check_real(readapt_growth, "readapt_growth") > 1.0
        ):
            raise ValueError(
                f"readapt_growth: expected a number > 1 or None, got {readapt_growth}"
            )
        target_accept_prob = check_real(target_accept_prob, "target_accept_prob", low=0, high=1, inclusive="neither")
        self.model = model
        self.theta_site = theta_site
        if not isinstance(w_site, str):
            raise TypeError(f"w_site: expected a str, got {w_site!r}")
        self.w_site = w_site
        self.latent_w = False
        self.n_max = check_int(n_max, "n_max", low=1)
        self.num_warmup = check_int(num_warmup, "num_warmup", low=0)
        self.steps_per_round = check_int(steps_per_round, "steps_per_round", low=1)
        self.readapt_start = check_int(readapt_start, "readapt_start", low=1)
        self.readapt_growth = None if readapt_growth is None else float(readapt_growth)
        self.refit_every = check_int(refit_every, "refit_every", low=1)
        self.max_tree_depth = check_int(max_tree_depth, "max_tree_depth", low=1)
        self.target_accept_prob = float(target_accept_prob)
        if not isinstance(dense_mass, (bool, np.bool_)):
            raise TypeError(f"dense_mass: expected a bool, got {dense_mass!r}")
        self.dense_mass = bool(dense_mass)
        self.mean_window = check_int(mean_window, "mean_window", low=1)
        self.overflow = overflow
        self._dim = 2 if dim is None else check_int(dim, "dim", low=1)
        self._cache: dict = {}
        self._export_cache: dict = {}
        site_support = self._check_theta_site(self._dim)
        if link is None:
            link, inferred_support = infer_link(
                model, theta_site, self._dim, self.w_site if self.latent_w else None
            )
            site_support = inferred_support
        self.link = get_link(link)
        if reward_support is None:
            reward_support = site_support or _SUPPORT_BY_LINK.get(self.link.name, "real")
        self.reward_support = reward_support
        self._schedule = Schedule(
            self.num_warmup, self.readapt_growth, self.target_accept_prob
        )

    # ------------------------------------------------------------------ model
    def _masked_model(self, x, y, mask):
        with MaskObserved(mask=mask):
            self.model(x, y)

    def _check_theta_site(self, p: int) -> None:
        x = jnp.zeros((3, p))
        y = jnp.zeros(3)
        box = {}

        def run(x, y):  # traced, not computed: one abstract pass, no op-by-op work
            box["tr"] = numpyro.handlers.trace(
                numpyro.handlers.seed(self.model, 0)
            ).get_trace(x, y)
            return {k: s["value"] for k, s in box["tr"].items() if "value" in s}

        try:
            shapes = jax.eval_shape(run, x, y)
        except Exception as err:  # the user's model failed on dummy data
            raise ValueError(
                f"model: tracing model(x, y) on dummy data x {x.shape}, y {y.shape} "
                f"failed ({type(err).__name__}: {err}); models must accept any "
                "feature dimension p, or pass dim= the p they expect"
            ) from err
        tr = {k: dict(s, value=shapes.get(k)) for k, s in box["tr"].items()}
        # Every latent site's support without parameters: the kernel's start can
        # then be computed as one compiled program (numpyro_compat.build_kernel).
        self._param_free = all(
            isinstance(_base_support(s["fn"]), constraints.ParameterFreeConstraint)
            for s in tr.values()
            if s["type"] == "sample" and not s["is_observed"]
        )
        site = tr.get(self.theta_site)
        w = tr.get(self.w_site)
        self.latent_w = (
            w is not None and w["type"] == "sample" and not w["is_observed"]
        )
        if self.latent_w:
            if p % 2 or jnp.shape(w["value"]) != ():
                raise ValueError(
                    f"model: a latent-w model (site {self.w_site!r}) takes pair features "
                    f"x (n, 2d) and a scalar {self.w_site!r}; got x of shape (n, {p}) "
                    f"and {self.w_site!r} of shape {jnp.shape(w['value'])}"
                )
            p = p // 2
        ok = site is not None and (
            (site["type"] == "sample" and not site["is_observed"])
            or site["type"] == "deterministic"
        )
        if not ok:
            raise ValueError(
                f"model: expected a latent sample or deterministic site named "
                f"{self.theta_site!r}; found sites {sorted(tr)}"
            )
        if tuple(jnp.shape(site["value"])) != (p,):
            want = f"(d,) = ({p},) for pair" if self.latent_w else f"(p,) = ({p},) for"
            raise ValueError(
                f"model: site {self.theta_site!r} must have shape {want} "
                f"features x of shape {tuple(x.shape)}; got {jnp.shape(site['value'])}"
            )
        observed = [
            s for s in tr.values() if s["type"] == "sample" and s["is_observed"]
        ]
        return support_of(observed[0]["fn"]) if len(observed) == 1 else None

    def _machinery(self, p: int) -> Kernel:
        """The online NUTS kernel for feature dimension p (built once, cached)."""
        dtype = jnp.result_type(float)
        key = (p, str(dtype))
        if key in self._cache:
            return self._cache[key]
        # concrete even when first reached inside jit/vmap: the cache outlives traces
        # (the site check is abstract; build_kernel computes outside any trace)
        if p != self._dim:
            self._check_theta_site(p)
        kernel = build_kernel(
            self._masked_model,
            self._empty_data(p),
            num_warmup=self.num_warmup,
            dense_mass=self.dense_mass,
            target_accept_prob=self.target_accept_prob,
            max_tree_depth=self.max_tree_depth,
            staged=self._param_free,
        )
        self._cache[key] = kernel
        return kernel

    def _empty_data(self, p: int):
        """Template data (host arrays: concrete inside any trace)."""
        dtype = jnp.result_type(float)
        return (
            np.zeros((self.n_max, p), dtype),
            np.zeros((self.n_max,), dtype),
            np.zeros((self.n_max,), bool),
        )

    def _theta_of(self, mach: Kernel, z, x, y, mask):
        """The drawn value: theta, or ``(theta, w)`` concatenated (latent w)."""
        site = mach.model_trace[self.theta_site]
        if site["type"] == "sample":
            theta = biject_to(site["fn"].support)(z[self.theta_site])
        else:
            theta = mach.postprocess_gen(x, y, mask)(z)[self.theta_site]
        if not self.latent_w:
            return theta
        wsite = mach.model_trace[self.w_site]
        w = biject_to(wsite["fn"].support)(z[self.w_site])
        return jnp.concatenate([theta, jnp.reshape(w, (1,)).astype(theta.dtype)])

    def _mask(self, n):
        count = jnp.minimum(n, self.n_max)
        return jnp.arange(self.n_max) < count[:, None]

    def potential_energy(self, z: dict, x, y, mask=None):
        """The chain's potential (negative log joint, unconstrained space) at ``z``.

        Args:
            z: dict of unconstrained latent values (as in ``state.hmc.z``, one
                position).
            x: (n, p) features; y: (n,) rewards.
            mask: (n,) bool rows that count (default all).

        Returns:
            A scalar.
        """
        x = jnp.asarray(x, jnp.result_type(float))
        y = jnp.asarray(y, jnp.result_type(float))
        mask = jnp.ones(y.shape, bool) if mask is None else jnp.asarray(mask, bool)
        return _POTENTIAL(self, z, x, y, mask)

    def _potential_core(self, z, x, y, mask):
        return _potential_energy(self._masked_model, (x, y, mask), {}, z)

    # --------------------------------------------------------------- contract
    def init(self, L: int, p: int) -> NutsState:
        """Empty buffers and L chains at the prior median, warm-up pending.

        Args:
            L: number of positions.
            p: feature dimension.

        Returns:
            NutsState.
        """
        L = check_int(L, "L", low=1)
        p = check_int(p, "p", low=1)
        mach = self._machinery(p)
        dtype = jnp.result_type(float)
        hmc_l = jax.tree.map(
            lambda a: jnp.broadcast_to(a, (L,) + jnp.shape(a)), mach.hmc0
        )
        x0, y0, m0 = self._empty_data(p)
        theta0 = self._theta_of(mach, mach.hmc0.z, x0, y0, m0)
        theta = jnp.broadcast_to(jnp.asarray(theta0, dtype), (L,) + jnp.shape(theta0))
        zeros_i = jnp.zeros((L,), jnp.result_type(int))
        return NutsState(
            x=jnp.zeros((L, self.n_max, p), dtype),
            y=jnp.zeros((L, self.n_max), dtype),
            n=zeros_i,
            hmc=hmc_l,
            readapt_at=jnp.full((L,), self.readapt_start, jnp.result_type(int)),
            theta=theta,
            theta_mean=theta,
            rounds=jnp.zeros((), jnp.result_type(int)),
            divergences=zeros_i,
            accept_sum=jnp.zeros((L,), dtype),
            steps_sum=zeros_i,
            transitions=zeros_i,
            tree_depth=zeros_i,
        )

    def update(self, state: NutsState, x, y, valid=None) -> NutsState:
        """Append one impression per position and refresh the chains' potentials.

        Args:
            state: NutsState.
            x: (L, p) features shown at each position.
            y: (L,) rewards.
            valid: (L,) bool, positions whose reward counts (default all).

        Returns:
            NutsState with the data added and ``potential_energy``/``z_grad``
            recomputed at each chain's ``z`` on its new data.

        Raises:
            ValueError: wrong shapes, or buffer overflow with ``overflow="raise"``.
        """
        n_max = state.x.shape[1]
        x, y, valid = check_update(state, x, y, valid)
        concrete = not isinstance(state.n, jax.core.Tracer) and not isinstance(
            valid, jax.core.Tracer
        )
        if self.overflow == "raise" and concrete:
            _raise_overflow(np.asarray(valid) & (np.asarray(state.n) >= n_max), n_max)
            return _UPDATE(self, state, x, y, valid, False)
        return _UPDATE(self, state, x, y, valid, self.overflow == "raise")

    def _update_core(self, state, x, y, valid, check):
        L, n_max, p = state.x.shape
        if check:
            full = valid & (state.n >= n_max)
            # the host callback runs only when a buffer overflows (it costs a sync)
            jax.lax.cond(
                jnp.any(full),
                lambda f: jax.debug.callback(_raise_overflow, f, n_max),
                lambda f: None,
                full,
            )
        if self.overflow == "raise":
            idx = jnp.minimum(state.n, n_max - 1)
        else:
            idx = state.n % n_max
        rows = jnp.arange(L)
        x_buf = state.x.at[rows, idx].set(
            jnp.where(valid[:, None], x, state.x[rows, idx])
        )
        y_buf = state.y.at[rows, idx].set(jnp.where(valid, y, state.y[rows, idx]))
        n = state.n + valid.astype(state.n.dtype)
        hs = self._refresh(state.hmc, x_buf, y_buf, self._mask(n), p)
        return state._replace(x=x_buf, y=y_buf, n=n, hmc=hs)

    def _refresh(self, hs: HMCState, x, y, mask, p: int) -> HMCState:
        return refresh_potential(self._machinery(p), hs, x, y, mask)

    def draw(self, key, state: NutsState) -> tuple[jax.Array, NutsState]:
        """Advance every chain ``steps_per_round`` NUTS transitions; return theta.

        Args:
            key: a JAX PRNG key.
            state: NutsState.

        Returns:
            (theta (L, p), new state); for a latent-w model ``((theta (L, d),
            w (L,)), new state)``.
        """
        theta, state = _DRAW(self, _typed_key(key), state)
        if self.latent_w:
            return (theta[:, :-1], theta[:, -1]), state
        return theta, state

    def _draw_core(self, key, state):
        if self.refit_every == 1:
            return self._advance(key, state)

        def skip(s):
            return s.theta, s._replace(rounds=s.rounds + 1)

        return jax.lax.cond(
            state.rounds % self.refit_every == 0,
            lambda s: self._advance(key, s),
            skip,
            state,
        )

    def _advance(self, key, state: NutsState):
        L, _, p = state.x.shape
        mach = self._machinery(p)
        mask = self._mask(state.n)
        hs, readapt_at = readapt(
            mach, self._schedule, state.hmc, state.n, state.readapt_at
        )
        keys = jax.random.split(key, L)
        num_warmup = self.num_warmup

        def one(h, k, x, y, m):
            h = h._replace(rng_key=k)

            def body(h, _):
                sampling = h.i >= num_warmup
                h = mach.sample_kernel(h, model_args=(x, y, m))
                th = self._theta_of(mach, h.z, x, y, m)
                return h, (sampling, h.diverging, h.accept_prob, h.num_steps, th)

            return jax.lax.scan(body, h, None, length=self.steps_per_round)

        # The L chains: one after another on CPU, batched elsewhere. Batching NUTS's
        # nested while loops costs a new process most of its first round's tracing,
        # and the batched loops run until the longest tree ends (docs/performance.md,
        # "Why the code is written this way").
        in_turn = POSITIONS_IN_TURN
        if in_turn is None:
            in_turn = jax.default_backend() == "cpu"
        each = jax.lax.map if in_turn else _vmap_map
        hs, (sampling, div, acc, steps, thetas) = each(
            lambda a: one(*a), (hs, keys, state.x, state.y, mask)
        )
        theta = thetas[:, -1]
        k = state.rounds + 1
        w = 1.0 / jnp.minimum(k, self.mean_window)
        theta_mean = state.theta_mean + w * (thetas.mean(axis=1) - state.theta_mean)
        last_steps = jnp.maximum(steps[:, -1], 1)
        depth = jnp.floor(jnp.log2(last_steps)).astype(state.tree_depth.dtype) + 1
        new = state._replace(
            hmc=hs,
            readapt_at=readapt_at,
            theta=theta.astype(state.theta.dtype),
            theta_mean=theta_mean.astype(state.theta.dtype),
            rounds=k,
            divergences=state.divergences + jnp.sum(div & sampling, axis=1),
            accept_sum=state.accept_sum + jnp.sum(jnp.where(sampling, acc, 0.0), 1),
            steps_sum=state.steps_sum + jnp.sum(jnp.where(sampling, steps, 0), 1),
            transitions=state.transitions + jnp.sum(sampling, axis=1),
            tree_depth=depth,
        )
        return new.theta, new

    def mean(self, state: NutsState) -> jax.Array:
        """(L, p) running mean of recent draws (see the module docstring); current
        after :meth:`refresh` or :meth:`draw`; theta only for a latent-w model."""
        return state.theta_mean[:, :-1] if self.latent_w else state.theta_mean

    def w_mean(self, state: NutsState) -> jax.Array:
        """(L,) the running mean of the drawn w (latent-w models)."""
        if not self.latent_w:
            raise TypeError(f"w_mean: the model has no latent site {self.w_site!r}")
        return state.theta_mean[:, -1]

    def refresh(self, key, state: NutsState) -> NutsState:
        """Advance every chain one round (``steps_per_round`` transitions) so that
        :meth:`mean` follows the data; UCB policies call this before reading it.

        Args:
            key: a JAX PRNG key; state: NutsState.

        Returns:
            The advanced state (the draw itself is discarded).
        """
        return self.draw(key, state)[1]

    def diagnostics(self, state: NutsState) -> dict[str, jax.Array]:
        """Per-position sampler health, each (L,).

        Returns:
            dict with ``divergences`` (post-warm-up count), ``accept_rate`` (mean
            acceptance probability), ``mean_steps`` (leapfrog steps per transition),
            ``tree_depth`` (last transition), ``step_size``, ``adapting`` (bool) and
            ``n`` (observations).
        """
        t = jnp.maximum(state.transitions, 1)
        return {
            "divergences": state.divergences,
            "accept_rate": state.accept_sum / t,
            "mean_steps": state.steps_sum / t,
            "tree_depth": state.tree_depth,
            "step_size": state.hmc.adapt_state.step_size,
            "adapting": state.hmc.i < self.num_warmup,
            "n": state.n,
        }

    def check_rewards(self, y) -> None:
        """Raise if rewards are outside the likelihood's support (host side)."""
        check_reward_support(y, self.reward_support)

    def data(self, state: NutsState, position: int) -> tuple[np.ndarray, np.ndarray]:
        """The observations held for ``position``: x (n, p), y (n,) as NumPy."""
        L = state.x.shape[0]
        if isinstance(position, bool) or not isinstance(position, (int, np.integer)):
            raise TypeError(f"position: expected an int, got {position!r}")
        if not 0 <= position < L:
            raise ValueError(f"position: expected 0 <= position < {L}, got {position}")
        n = min(int(state.n[position]), self.n_max)
        return np.asarray(state.x[position, :n]), np.asarray(state.y[position, :n])

    def to_datatree(
        self,
        state: NutsState,
        position: int,
        *,
        key,
        data=None,
        chains: int = 4,
        draws: int = 500,
        warmup: int | None = None,
        chain_method: str = "vectorized",
        max_tree_depth: int = 10,
    ):
        """A fresh multi-chain NUTS run on ``position``'s data, as an ArviZ DataTree.

        The warm per-round chain is one chain on moving data, so R-hat needs fresh
        chains (:func:`bayesrank.posteriors.nuts_export.fresh_chains`): compiled on
        the first call for a given model, p and run size, cached afterwards.

        Args:
            state: NutsState.
            position: 0-based position.
            key: JAX PRNG key.
            data: accepted for the common protocol and ignored: the model's buffers
                hold exactly the observations its posterior conditions on (a
                policy's history may hold more, e.g. past a sliding window).
            chains, draws: MCMC sizes; warmup: adapting transitions (default draws).
            chain_method: "vectorized" or "sequential".
            max_tree_depth: NUTS tree depth limit of the fresh run.

        Returns:
            xarray.DataTree with groups posterior (every latent and deterministic
            site), sample_stats (diverging, energy, n_steps, acceptance_rate,
            tree_depth), log_likelihood (per observation), log_prior (each draw's
            prior log density: non-observed sample sites, constrained space),
            observed_data and constant_data (X).
        """
        del data
        return fresh_chains(
            self,
            state,
            position,
            key=_typed_key(key),
            chains=chains,
            draws=draws,
            warmup=warmup,
            chain_method=chain_method,
            max_tree_depth=max_tree_depth,
        )

    # ----------------------------------------------------------------- config
    def _options(self) -> dict:
        return {
            "n_max": self.n_max,
            "num_warmup": self.num_warmup,
            "steps_per_round": self.steps_per_round,
            "readapt_start": self.readapt_start,
            "readapt_growth": self.readapt_growth,
            "refit_every": self.refit_every,
            "max_tree_depth": self.max_tree_depth,
            "target_accept_prob": self.target_accept_prob,
            "dense_mass": self.dense_mass,
            "mean_window": self.mean_window,
            "overflow": self.overflow,
        }

    def _link_name(self) -> str:
        if self.link.name == "custom":
            raise TypeError("config: a custom link callable cannot be saved")
        return self.link.name

    def config(self) -> dict:
        """JSON-able description; the model must be a module-level function (or a
        ``functools.partial`` of one with JSON-able keywords)."""
        path, kwargs = function_path(self.model)
        return {
            "type": "NumPyroModel",
            "model": path,
            "model_kwargs": kwargs,
            "theta_site": self.theta_site,
            "w_site": self.w_site,
            "link": self._link_name(),
            "reward_support": self.reward_support,
            **self._options(),
        }

    @classmethod
    def from_config(cls, cfg: dict, *, model: Callable | None = None) -> NumPyroModel:
        """Rebuild from :meth:`config`'s output.

        Args:
            cfg: the configuration.
            model: the model function to use instead of resolving ``cfg["model"]``.
                Without it the name is looked up ONLY in the registry
                (:func:`bayesrank.posteriors.register_model`): no import, no
                attribute walk, so a tampered file cannot reach other code.

        Raises:
            ValueError: an unregistered model name (pass ``model=``), a wrong type.
        """
        if not isinstance(cfg, dict):
            raise TypeError(f"cfg: expected a dict, got {type(cfg).__name__}")
        cfg = dict(cfg)
        kind = cfg.pop("type", "NumPyroModel")
        if kind != "NumPyroModel":
            raise ValueError(f"cfg: expected type 'NumPyroModel', got {kind!r}")
        name = cfg.pop("model", None)
        if model is None:
            fn = resolve_model(name)
        elif not callable(model):
            raise TypeError(f"model: expected a callable, got {type(model).__name__}")
        else:
            fn = model
        kwargs = cfg.pop("model_kwargs", {})
        if not isinstance(kwargs, dict):
            raise ValueError(f"cfg: model_kwargs must be a dict, got {kwargs!r}")
        model = functools.partial(fn, **kwargs) if kwargs else fn
        return cls(model, **cfg)

    def __repr__(self) -> str:
        name = getattr(self.model, "__name__", type(self.model).__name__)
        return f"NumPyroModel({name}, link={self.link.name!r}, n_max={self.n_max})"


def _scale_or_hyperprior(value, name: str):
    """A positive number (as float) or a NumPyro distribution on (0, inf)."""
    if isinstance(value, numpyro.distributions.Distribution):
        return check_hyperprior(value, name)
    return float(check_real(value, name, low=0, inclusive="neither"))


def _scale_config(value, name: str):
    """A scale for a config: the number, or the hyperprior's class and parameters."""
    if not isinstance(value, numpyro.distributions.Distribution):
        return value
    cfg = prior_config(value)
    if cfg["params"] is None:
        raise TypeError(f"config: {name}: the hyperprior cannot be saved: {cfg['why']}")
    return cfg


class BayesGLM(NumPyroModel):
    """GLM per position, theta ~ N(0, prior_scale^2 I) (or ``prior``), by warm NUTS.

    Rewards: identity -> Gaussian(noise_scale), logistic/probit -> Bernoulli,
    exp -> Poisson (see :func:`bayesrank.posteriors.numpyro_models.glm`).

    Args:
        link: "logistic", "probit", "identity" or "exp".
        prior_scale: sd of the default Normal prior, or a NumPyro distribution on
            (0, inf): the hyperprior of that sd, learnt with theta (a site
            ``"prior_scale"``, theta non-centred; relative to the noise sd when that
            is learnt too).
        prior: a NumPyro distribution for theta (scalar i.i.d. or shape (p,)).
        noise_scale: Gaussian noise sd (identity link only), or a NumPyro
            distribution on (0, inf): its hyperprior (a site ``"noise_scale"``).
        theta_site: name of the coefficient site.
        **options: the sampler options of :class:`NumPyroModel`.

    Example:
        >>> model = BayesGLM(link="probit", prior_scale=2.0, n_max=500)
        >>> state = model.init(L=4, p=10)
    """

    def __init__(
        self,
        link: str = "logistic",
        prior_scale: float = 1.0,
        prior=None,
        noise_scale: float = 1.0,
        *,
        theta_site: str = "theta",
        **options,
    ):
        name = link.name if isinstance(link, Link) else link
        if not isinstance(name, str) or name not in models.GLM_LINKS:
            raise ValueError(f"link: expected one of {models.GLM_LINKS}, got {link!r}")
        prior_scale = _scale_or_hyperprior(prior_scale, "prior_scale")
        noise_scale = _scale_or_hyperprior(noise_scale, "noise_scale")
        if isinstance(noise_scale, numpyro.distributions.Distribution) \
                and name != "identity":
            raise ValueError(
                f"noise_scale: a hyperprior needs the identity link (Gaussian noise), "
                f"got link {name!r}")
        if prior is not None and isinstance(
                prior_scale, numpyro.distributions.Distribution):
            raise ValueError("prior_scale: a hyperprior and prior= exclude each other")
        if prior is not None and not isinstance(
            prior, numpyro.distributions.Distribution
        ):
            raise TypeError(
                f"prior: expected a numpyro Distribution or None, got {type(prior).__name__}"
            )
        self.prior_scale = prior_scale
        self.prior = prior
        self.noise_scale = noise_scale
        model = functools.partial(
            models.glm,
            link=name,
            prior_scale=self.prior_scale,
            prior=prior,
            noise_scale=self.noise_scale,
            theta_site=theta_site,
        )
        for bad in ("link", "reward_support", "model"):
            if bad in options:
                raise TypeError(f"{bad}: not an option of BayesGLM")
        super().__init__(
            model,
            theta_site,
            link=name,
            reward_support=_SUPPORT_BY_LINK[name],
            **options,
        )

    def config(self) -> dict:
        """JSON-able description (a custom ``prior`` distribution cannot be saved)."""
        if self.prior is not None:
            raise TypeError(
                "config: BayesGLM with a custom prior distribution cannot be saved"
            )
        return {
            "type": "BayesGLM",
            "link": self.link.name,
            "prior_scale": _scale_config(self.prior_scale, "prior_scale"),
            "noise_scale": _scale_config(self.noise_scale, "noise_scale"),
            "theta_site": self.theta_site,
            **self._options(),
        }

    @classmethod
    def from_config(cls, cfg: dict) -> BayesGLM:
        """Rebuild from :meth:`config`'s output."""
        if not isinstance(cfg, dict):
            raise TypeError(f"cfg: expected a dict, got {type(cfg).__name__}")
        cfg = dict(cfg)
        kind = cfg.pop("type", "BayesGLM")
        if kind != "BayesGLM":
            raise ValueError(f"cfg: expected type 'BayesGLM', got {kind!r}")
        for name in ("prior_scale", "noise_scale"):
            if isinstance(cfg.get(name), dict):  # a hyperprior, by class name
                try:
                    cfg[name] = prior_from_config(cfg[name])
                except ValueError as exc:
                    raise ValueError(str(exc).replace("w_prior:", f"{name}:", 1)) \
                        from None
        return cls(**cfg)

    def __repr__(self) -> str:
        def show(v):
            return (f"{type(v).__name__}(...)"
                    if isinstance(v, numpyro.distributions.Distribution) else repr(v))

        return (
            f"BayesGLM(link={self.link.name!r}, prior_scale={show(self.prior_scale)}, "
            f"n_max={self.n_max})"
        )
