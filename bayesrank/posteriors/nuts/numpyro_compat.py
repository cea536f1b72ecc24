"""Everything that reaches into NumPyro internals, in one place.

Checked against NumPyro 0.22 (``numpyro.infer.hmc.hmc`` functional kernel,
``numpyro.infer.hmc_util.warmup_adapter`` / ``IntegratorState``, the fields of
``HMCState``). Re-check this module, and only this one, when NumPyro is upgraded:
the online NUTS models (:mod:`~bayesrank.posteriors.nuts`, :mod:`~bayesrank.posteriors.nuts.adapt`, :mod:`~bayesrank.posteriors.nuts.export`) use
NumPyro only through the functions below and the public model API.

What is internal here:

* ``hmc(potential_fn_gen=...)`` returns ``(init_kernel, sample_kernel)`` sharing
  nonlocal settings (tree depth, warm-up adapter) fixed by the last ``init_kernel``
  call: each :class:`Kernel` therefore owns its own pair, initialised once.
* ``HMCState.potential_energy`` / ``z_grad`` / ``energy`` cache the potential at ``z``
  on the data last seen; :func:`refresh_potential` recomputes them for new data.
* Warm-up restarts rewrite ``HMCState.i`` / ``mean_accept_prob`` / ``adapt_state``
  with a fresh ``warmup_adapter`` state (:func:`restart_adaptation`), and fresh chains
  for a DataTree are built the same way (:func:`fresh_state`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc import HMCState, hmc
from numpyro.infer.hmc_util import IntegratorState, warmup_adapter
from numpyro.infer.initialization import init_to_median
from numpyro.infer.util import initialize_model

__all__ = [
    "HMCState",
    "Kernel",
    "build_kernel",
    "fresh_state",
    "refresh_potential",
    "restart_adaptation",
]

NUMPYRO_CHECKED = "0.22"


class Kernel(NamedTuple):
    """A NUTS kernel for one model and data shape (host-side object, not a pytree)."""

    init_kernel: Callable
    sample_kernel: Callable  # (HMCState, model_args=(x, y, mask)) -> HMCState
    potential_gen: Callable  # (x, y, mask) -> (z dict -> potential)
    postprocess_gen: Callable  # (x, y, mask) -> (z dict -> constrained sites)
    hmc0: HMCState  # a state at the prior median, warm-up pending
    wa_init: Callable  # fresh warm-up adapter state
    model_trace: dict  # the model's trace on the template data


def build_kernel(
    masked_model: Callable,
    args: tuple,
    *,
    num_warmup: int,
    dense_mass: bool,
    target_accept_prob: float,
    max_tree_depth: int,
    staged: bool = False,
) -> Kernel:
    """Initialise a NUTS kernel on template data ``args = (x, y, mask)`` (host
    arrays). The result is concrete even when called inside a trace.

    ``staged=True`` computes the start (NumPyro's initial values at the prior
    median, their potential and gradient, the first HMC state) as one compiled
    program instead of op by op, which a new process reads from the persistent
    cache at once instead of ~150 small programs. Only for models whose latent
    sites all have parameter-free supports: the traced model's transforms then hold
    no traced values. A start that is not finite is recomputed eagerly, so NumPyro's
    own check raises.
    """
    made = {}

    def start(key_data, args):
        key = jax.random.wrap_key_data(key_data)
        info = initialize_model(
            key,
            masked_model,
            model_args=args,
            dynamic_args=True,
            init_strategy=init_to_median,
        )
        init_kernel, sample_kernel = hmc(potential_fn_gen=info.potential_fn, algo="NUTS")
        made.update(info=info, init_kernel=init_kernel, sample_kernel=sample_kernel)
        return init_kernel(
            info.param_info,
            num_warmup,
            dense_mass=dense_mass,
            target_accept_prob=target_accept_prob,
            max_tree_depth=max_tree_depth,
            model_args=args,
            rng_key=key,
        )

    with jax.ensure_compile_time_eval():
        key_data = np.asarray(jax.random.key_data(jax.random.key(0)))
    if staged:
        # ahead of time: traced with the data as arguments, then run as compiled
        hmc0 = jax.jit(start).lower(key_data, args).compile()(key_data, args)
        start_values = (hmc0.z, hmc0.z_grad, hmc0.potential_energy)
        if not all(np.isfinite(np.asarray(a)).all() for a in jax.tree.leaves(start_values)):
            staged = False
    if not staged:
        with jax.ensure_compile_time_eval():  # op by op, even inside a trace
            hmc0 = start(key_data, args)
    info = made["info"]
    wa_init, _ = warmup_adapter(
        num_warmup, dense_mass=dense_mass, target_accept_prob=target_accept_prob
    )
    return Kernel(
        made["init_kernel"],
        made["sample_kernel"],
        info.potential_fn,
        info.postprocess_fn,
        hmc0,
        wa_init,
        info.model_trace,
    )


def refresh_potential(kernel: Kernel, hs: HMCState, x, y, mask) -> HMCState:
    """Recompute ``potential_energy``/``z_grad``/``energy`` of L chains at their ``z``
    on new data (leaves with leading axis L; x (L, n, p), y/mask (L, n))."""

    def one(z, xl, yl, ml):
        return jax.value_and_grad(kernel.potential_gen(xl, yl, ml))(z)

    pe, grad = jax.vmap(one)(hs.z, x, y, mask)
    energy = hs.energy - hs.potential_energy + pe
    return hs._replace(potential_energy=pe, z_grad=grad, energy=energy)


def _where(pred, new, old):
    def sel(a, b):
        if hasattr(b, "dtype") and jnp.issubdtype(b.dtype, jax.dtypes.prng_key):
            return b
        p = jnp.reshape(pred, pred.shape + (1,) * (jnp.ndim(b) - 1))
        return jnp.where(p, a, b)

    return jax.tree.map(sel, new, old)


def restart_adaptation(kernel: Kernel, hs: HMCState, due) -> HMCState:
    """Restart warm-up for the chains where ``due`` (L,) is True: counter to 0 and a
    fresh adapter started from the current step size and mass matrix."""

    def fresh(z, pe, grad, step_size, inv_mass, k):
        info = IntegratorState(z, None, pe, grad)
        return kernel.wa_init(info, k, step_size, inverse_mass_matrix=inv_mass)

    a = hs.adapt_state
    new = jax.vmap(fresh)(
        hs.z, hs.potential_energy, hs.z_grad, a.step_size, a.inverse_mass_matrix, a.rng_key
    )
    return hs._replace(
        i=jnp.where(due, 0, hs.i),
        mean_accept_prob=jnp.where(due, 0.0, hs.mean_accept_prob),
        adapt_state=_where(due, new, a),
    )


def fresh_state(
    kernel: Kernel, z: dict, step_size, inverse_mass_matrix: Any, key, x, y, mask
) -> HMCState:
    """One chain at ``z`` on data (x, y, mask), warm-up pending, its adapter started
    from ``step_size`` and ``inverse_mass_matrix`` (jittable)."""
    pe, grad = jax.value_and_grad(kernel.potential_gen(x, y, mask))(z)
    k_adapt, k_chain = jax.random.split(key)
    info = IntegratorState(z, None, pe, grad)
    adapt = kernel.wa_init(
        info, k_adapt, step_size, inverse_mass_matrix=inverse_mass_matrix
    )
    h = kernel.hmc0
    return h._replace(
        i=jnp.zeros_like(h.i),
        z=z,
        z_grad=grad,
        potential_energy=pe,
        energy=pe,
        num_steps=jnp.zeros_like(h.num_steps),
        accept_prob=jnp.zeros_like(h.accept_prob),
        mean_accept_prob=jnp.zeros_like(h.mean_accept_prob),
        diverging=jnp.zeros_like(h.diverging),
        adapt_state=adapt,
        rng_key=k_chain,
    )
