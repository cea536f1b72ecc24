"""The online NUTS kernel of :class:`~bayesrank.posteriors.nuts.NumPyroModel`: its
state, its data buffers and the pure init/update/advance functions over them.

Each function takes the model (a :class:`~bayesrank._static.Part`: its settings, its
per-instance kernel cache) and a :class:`NutsState` of arrays, and returns a new
state; the model's methods are thin calls of these (module docstring of
:mod:`bayesrank.posteriors.nuts`: buffers, overflow, adaptation, the running mean).

* :func:`kernel_for` builds (once per feature dimension and dtype, cached on the
  model) the NumPyro kernel of :func:`bayesrank.posteriors.nuts.numpyro_compat.build_kernel`.
* :func:`init_state` fills empty buffers and L chains at the prior median.
* :func:`update_core` writes one impression per position into the buffers and
  refreshes each chain's potential and gradient at its current ``z`` on the new data.
* :func:`advance` re-runs warm-up when due (:mod:`~bayesrank.posteriors.nuts.adapt`) and runs
  ``steps_per_round`` transitions per position; :func:`draw_core` adds ``refit_every``.
* :func:`diagnostics` reads the sampler's health from the state.

Example:
    >>> from bayesrank.posteriors.nuts import BayesGLM
    >>> model = BayesGLM(link="logistic", n_max=10, num_warmup=5)
    >>> state = init_state(model, 2, 3)
    >>> state.n.tolist(), state.x.shape
    ([0, 0], (2, 10, 3))
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import biject_to
from numpyro.infer.util import potential_energy as _potential_energy

from bayesrank.posteriors.nuts.adapt import readapt
from bayesrank.posteriors.nuts.numpyro_compat import (
    build_kernel,
    HMCState,
    Kernel,
    refresh_potential,
)

__all__ = [
    "NutsState",
    "advance",
    "diagnostics",
    "draw_core",
    "empty_data",
    "init_state",
    "kernel_for",
    "positions_in_turn",
    "potential_core",
    "raise_overflow",
    "theta_of",
    "typed_key",
    "update_core",
]


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


def typed_key(key):
    """A typed PRNG key from a typed or a raw (uint32) key."""
    key = jnp.asarray(key) if not hasattr(key, "dtype") else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    return jax.random.wrap_key_data(key)


def raise_overflow(full, n_max):
    """Raise ValueError if any position's buffer is full (host side)."""
    if np.any(np.asarray(full)):
        raise ValueError(
            f"update: a position received more than n_max={int(n_max)} observations; "
            "raise n_max or pass overflow='window' to keep the most recent n_max"
        )


def _vmap_map(f, xs):
    """``jax.lax.map``'s signature, batched with vmap."""
    return jax.vmap(f)(xs)


# ---------------------------------------------------------------- the kernel
def empty_data(model, p: int):
    """Template data (host arrays: concrete inside any trace)."""
    dtype = jnp.result_type(float)
    return (
        np.zeros((model.n_max, p), dtype),
        np.zeros((model.n_max,), dtype),
        np.zeros((model.n_max,), bool),
    )


def kernel_for(model, p: int) -> Kernel:
    """The online NUTS kernel for feature dimension p (built once, cached)."""
    dtype = jnp.result_type(float)
    key = (p, str(dtype))
    if key in model._cache:
        return model._cache[key]
    # concrete even when first reached inside jit/vmap: the cache outlives traces
    # (the site check is abstract; build_kernel computes outside any trace)
    if p != model._dim:
        model._trace_theta_site(p)
    kernel = build_kernel(
        model._masked_model,
        empty_data(model, p),
        num_warmup=model.num_warmup,
        dense_mass=model.dense_mass,
        target_accept_prob=model.target_accept_prob,
        max_tree_depth=model.max_tree_depth,
        staged=model._param_free,
    )
    model._cache[key] = kernel
    return kernel


def theta_of(model, mach: Kernel, z, x, y, mask):
    """The drawn value: theta, or ``(theta, w)`` concatenated (latent w)."""
    site = mach.model_trace[model.theta_site]
    if site["type"] == "sample":
        theta = biject_to(site["fn"].support)(z[model.theta_site])
    else:
        theta = mach.postprocess_gen(x, y, mask)(z)[model.theta_site]
    if not model.latent_w:
        return theta
    wsite = mach.model_trace[model.w_site]
    w = biject_to(wsite["fn"].support)(z[model.w_site])
    return jnp.concatenate([theta, jnp.reshape(w, (1,)).astype(theta.dtype)])


def _mask(model, n):
    count = jnp.minimum(n, model.n_max)
    return jnp.arange(model.n_max) < count[:, None]


def potential_core(model, z, x, y, mask):
    """The potential (negative log joint, unconstrained space) at ``z``."""
    return _potential_energy(model._masked_model, (x, y, mask), {}, z)


# ------------------------------------------------------------ init / update
def init_state(model, L: int, p: int):
    """Empty buffers and L chains at the prior median, warm-up pending."""
    mach = kernel_for(model, p)
    dtype = jnp.result_type(float)
    hmc_l = jax.tree.map(
        lambda a: jnp.broadcast_to(a, (L,) + jnp.shape(a)), mach.hmc0
    )
    x0, y0, m0 = empty_data(model, p)
    theta0 = theta_of(model, mach, mach.hmc0.z, x0, y0, m0)
    theta = jnp.broadcast_to(jnp.asarray(theta0, dtype), (L,) + jnp.shape(theta0))
    zeros_i = jnp.zeros((L,), jnp.result_type(int))
    return NutsState(
        x=jnp.zeros((L, model.n_max, p), dtype),
        y=jnp.zeros((L, model.n_max), dtype),
        n=zeros_i,
        hmc=hmc_l,
        readapt_at=jnp.full((L,), model.readapt_start, jnp.result_type(int)),
        theta=theta,
        theta_mean=theta,
        rounds=jnp.zeros((), jnp.result_type(int)),
        divergences=zeros_i,
        accept_sum=jnp.zeros((L,), dtype),
        steps_sum=zeros_i,
        transitions=zeros_i,
        tree_depth=zeros_i,
    )


def update_core(model, state, x, y, valid, check):
    """Append one impression per position (``valid`` rows) and refresh the chains'
    potentials; ``check``: raise through a host callback on overflow."""
    L, n_max, p = state.x.shape
    if check:
        full = valid & (state.n >= n_max)
        # the host callback runs only when a buffer overflows (it costs a sync)
        jax.lax.cond(
            jnp.any(full),
            lambda f: jax.debug.callback(raise_overflow, f, n_max),
            lambda f: None,
            full,
        )
    if model.overflow == "raise":
        idx = jnp.minimum(state.n, n_max - 1)
    else:
        idx = state.n % n_max
    rows = jnp.arange(L)
    x_buf = state.x.at[rows, idx].set(
        jnp.where(valid[:, None], x, state.x[rows, idx])
    )
    y_buf = state.y.at[rows, idx].set(jnp.where(valid, y, state.y[rows, idx]))
    n = state.n + valid.astype(state.n.dtype)
    hs = refresh_potential(kernel_for(model, p), state.hmc, x_buf, y_buf,
                           _mask(model, n))
    return state._replace(x=x_buf, y=y_buf, n=n, hmc=hs)


# ------------------------------------------------------------------ advance
def draw_core(model, key, state, in_turn: bool):
    """:func:`advance` every ``refit_every``-th round; the others keep the draw."""
    if model.refit_every == 1:
        return advance(model, key, state, in_turn)

    def skip(s):
        return s.theta, s._replace(rounds=s.rounds + 1)

    return jax.lax.cond(
        state.rounds % model.refit_every == 0,
        lambda s: advance(model, key, s, in_turn),
        skip,
        state,
    )


def advance(model, key, state: NutsState, in_turn: bool):
    """Re-adapt when due, run ``steps_per_round`` transitions per position (in turn
    with ``lax.map`` or batched with ``vmap``); returns (theta, new state)."""
    L, _, p = state.x.shape
    mach = kernel_for(model, p)
    mask = _mask(model, state.n)
    hs, readapt_at = readapt(
        mach, model._schedule, state.hmc, state.n, state.readapt_at
    )
    keys = jax.random.split(key, L)
    num_warmup = model.num_warmup

    def one(h, k, x, y, m):
        h = h._replace(rng_key=k)

        def body(h, _):
            sampling = h.i >= num_warmup
            h = mach.sample_kernel(h, model_args=(x, y, m))
            th = theta_of(model, mach, h.z, x, y, m)
            return h, (sampling, h.diverging, h.accept_prob, h.num_steps, th)

        return jax.lax.scan(body, h, None, length=model.steps_per_round)

    # The L chains: one after another on CPU, batched elsewhere. Batching NUTS's
    # nested while loops costs a new process most of its first round's tracing,
    # and the batched loops run until the longest tree ends (docs/performance.md,
    # "Why the code is written this way").
    each = jax.lax.map if in_turn else _vmap_map
    hs, (sampling, div, acc, steps, thetas) = each(
        lambda a: one(*a), (hs, keys, state.x, state.y, mask)
    )
    theta = thetas[:, -1]
    k = state.rounds + 1
    w = 1.0 / jnp.minimum(k, model.mean_window)
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


def diagnostics(state: NutsState, num_warmup: int) -> dict[str, jax.Array]:
    """Per-position sampler health, each (L,) (see ``NumPyroModel.diagnostics``)."""
    t = jnp.maximum(state.transitions, 1)
    return {
        "divergences": state.divergences,
        "accept_rate": state.accept_sum / t,
        "mean_steps": state.steps_sum / t,
        "tree_depth": state.tree_depth,
        "step_size": state.hmc.adapt_state.step_size,
        "adapting": state.hmc.i < num_warmup,
        "n": state.n,
    }


#: How the L positions' chains advance: in turn (``lax.map``, True) or batched
#: (``vmap``, False); None: in turn on CPU, batched on other backends. Read when a
#: program is traced: set it before building policies (``benchmarks/nuts.py``
#: measures both).
POSITIONS_IN_TURN: bool | None = None


def positions_in_turn() -> bool:
    """:data:`POSITIONS_IN_TURN` resolved for the current backend."""
    if POSITIONS_IN_TURN is None:
        return jax.default_backend() == "cpu"
    return POSITIONS_IN_TURN
