"""Fresh multi-chain NUTS runs on one position's data, as an ArviZ DataTree.

The per-round chain of an online NUTS model is one chain on moving data, so R-hat and
ESS need fresh chains. :func:`fresh_chains` runs them on the model's padded, masked
data buffer (static shape ``(n_max, p)``), in one jitted function compiled once per
model, feature dimension and run size and then cached on the model: the first call
compiles (seconds), later calls only sample. ``numpyro.infer.MCMC.run`` instead builds
and compiles a new loop on every call (the cost per ``posterior(l)`` before this
module: docs/performance.md, "Why the code is written this way").

Each chain starts at a uniform draw in (-2, 2) in unconstrained space (NumPyro's
default ``init_to_uniform``), with its adapter seeded from the online chain's step
size and mass matrix, runs ``warmup`` adapting transitions (Stan-style windows) and
keeps the next ``draws``.

Example:
    >>> # dt = fresh_chains(model, state, 0, key=jax.random.key(0))   # see NumPyroModel
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.infer.util import log_likelihood

from bayesrank._validate import check_int
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.nuts.numpyro_compat import build_kernel, fresh_state

__all__ = ["fresh_chains"]

_CHAIN_METHODS = ("vectorized", "sequential")


def _sampler(model, p: int, chains: int, draws: int, warmup: int, depth: int, method):
    """The jitted sampler for one configuration (built once, cached on the model)."""
    args = model._empty_data(p)
    kernel = build_kernel(
        model._masked_model,
        args,
        num_warmup=warmup,
        dense_mass=model.dense_mass,
        target_accept_prob=model.target_accept_prob,
        max_tree_depth=depth,
    )
    user_model = model.model

    def log_prior(sample, x, y):
        tr = numpyro.handlers.trace(
            numpyro.handlers.substitute(numpyro.handlers.seed(user_model, 0), sample)
        ).get_trace(x, y)
        total = jnp.zeros(())
        for site in tr.values():
            if site["type"] == "sample" and not site["is_observed"]:
                total = total + jnp.sum(site["fn"].log_prob(site["value"]))
        return total

    def one_chain(key, x, y, mask, z_like, step_size, inv_mass):
        k_z, k_state = jax.random.split(key)
        leaves, tree = jax.tree.flatten(z_like)
        ks = jax.random.split(k_z, len(leaves))
        z = jax.tree.unflatten(
            tree,
            [
                jax.random.uniform(k, jnp.shape(a), jnp.result_type(a), -2.0, 2.0)
                for k, a in zip(ks, leaves)
            ],
        )
        h = fresh_state(kernel, z, step_size, inv_mass, k_state, x, y, mask)

        def step(h, _):
            h = kernel.sample_kernel(h, model_args=(x, y, mask))
            return h, (h.z, h.diverging, h.energy, h.num_steps, h.accept_prob)

        _, out = jax.lax.scan(step, h, None, length=warmup + draws)
        zs, div, energy, steps, acc = jax.tree.map(lambda a: a[warmup:], out)
        sites = jax.vmap(kernel.postprocess_gen(x, y, mask))(zs)
        ll = log_likelihood(user_model, sites, x, y)
        bad = {k: v.shape for k, v in ll.items() if v.shape != (draws, y.shape[0])}
        if bad:
            raise ValueError(
                "model: observed sites must have the observation index as their only "
                f"batch dim to build log_likelihood; got shapes {bad}"
            )
        ll = sum(ll.values()) if ll else jnp.zeros((draws, y.shape[0]))
        lp = jax.vmap(lambda s: log_prior(s, x, y))(sites)
        stats = {
            "diverging": div,
            "energy": energy,
            "n_steps": steps,
            "acceptance_rate": acc,
        }
        return sites, ll, lp, stats

    def run(key, x, y, mask, z_like, step_size, inv_mass):
        keys = jax.random.split(key, chains)

        def go(k):
            return one_chain(k, x, y, mask, z_like, step_size, inv_mass)

        if method == "vectorized":
            return jax.vmap(go)(keys)
        return jax.lax.map(go, keys)

    return jax.jit(run)


def fresh_chains(
    model,
    state,
    position: int,
    *,
    key,
    chains: int = 4,
    draws: int = 500,
    warmup: int | None = None,
    chain_method: str = "vectorized",
    max_tree_depth: int = 10,
):
    """A fresh multi-chain NUTS run on ``position``'s buffered data, as a DataTree.

    Args:
        model: a :class:`~bayesrank.posteriors.nuts.NumPyroModel`.
        state: its NutsState; position: 0-based position.
        key: JAX PRNG key.
        chains, draws: run size; warmup: adapting transitions per chain (default
            ``draws``).
        chain_method: "vectorized" (vmap over chains) or "sequential" (lax.map).
        max_tree_depth: NUTS tree depth limit of the fresh run.

    Returns:
        ``xarray.DataTree`` with posterior (every latent and deterministic site),
        sample_stats (diverging, energy, n_steps, acceptance_rate, tree_depth),
        log_likelihood (per observation), log_prior (each draw's prior log density:
        non-observed sample sites, constrained space), observed_data and
        constant_data (X).
    """
    x_all, y_all = model.data(state, position)  # validates position
    chains = check_int(chains, "chains", low=1)
    draws = check_int(draws, "draws", low=1)
    warmup = draws if warmup is None else check_int(warmup, "warmup", low=1)
    depth = check_int(max_tree_depth, "max_tree_depth", low=1)
    if chain_method not in _CHAIN_METHODS:
        raise ValueError(
            f"chain_method: expected one of {_CHAIN_METHODS}, got {chain_method!r}"
        )
    p = state.x.shape[-1]
    cache_key = (p, chains, draws, warmup, depth, chain_method, str(state.x.dtype))
    cache: dict[tuple, Callable] = model._export_cache
    if cache_key not in cache:
        cache[cache_key] = _sampler(model, p, chains, draws, warmup, depth, chain_method)
    run = cache[cache_key]
    n = y_all.shape[0]
    mask = jnp.arange(model.n_max) < n
    hs = state.hmc
    pick = lambda a: a[position]  # noqa: E731
    sites, ll, lp, stats = run(
        key,
        state.x[position],
        state.y[position],
        mask,
        jax.tree.map(pick, hs.z),
        hs.adapt_state.step_size[position],
        jax.tree.map(pick, hs.adapt_state.inverse_mass_matrix),
    )
    posterior = {k: np.asarray(v) for k, v in sites.items()}
    stats = {k: np.asarray(v) for k, v in stats.items()}
    stats["tree_depth"] = (
        np.floor(np.log2(np.maximum(stats["n_steps"], 1))).astype(int) + 1
    )
    return make_datatree(
        posterior,
        log_likelihood=np.asarray(ll)[..., :n],
        log_prior=np.asarray(lp),
        observed=y_all,
        sample_stats=stats,
        constant_data={"X": x_all},
        var_name=model.theta_site,
        attrs={"position": int(position), "sampler": "numpyro NUTS"},
    )
