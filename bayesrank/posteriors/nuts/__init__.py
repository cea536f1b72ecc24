"""Per-position posteriors sampled by warm-started NUTS (NumPyro's functional kernel).

Each position l has its own posterior over theta^l, defined by a NumPyro model (see
:mod:`bayesrank.posteriors.nuts.numpyro_models` for the contract), and its own NUTS chain. Nothing
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
:mod:`bayesrank.posteriors.nuts.adapt`. Draws made while adapting come from an adaptive
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

Module layout: this module holds the two model classes, thin calls of the concept
modules beside it: :mod:`~bayesrank.posteriors.nuts.kernel` the state, buffers and the pure
init/update/advance functions of the online kernel; :mod:`~bayesrank.posteriors.nuts.sites` the site
tracing and :class:`MaskObserved`; :mod:`~bayesrank.posteriors.nuts.config` the configurations (saving and
rebuilding); :mod:`~bayesrank.posteriors.nuts.adapt` the re-adaptation schedule; :mod:`~bayesrank.posteriors.nuts.export` the
DataTree export with fresh chains (compiled once per model and shape);
:mod:`~bayesrank.posteriors.nuts.numpyro_compat` everything that touches NumPyro internals; :mod:`~bayesrank.posteriors.nuts.registry` the
names under which model functions are saved; :mod:`~bayesrank.posteriors.nuts.model_link` the link inference.

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

from bayesrank.posteriors.nuts.glm import BayesGLM
from bayesrank.posteriors.nuts.kernel import NutsState
from bayesrank.posteriors.nuts.model import NumPyroModel
from bayesrank.posteriors.nuts.numpyro_models import latent_w_glm
from bayesrank.posteriors.nuts.registry import (
    register_model,
    registered_models,
    resolve_model,
)
from bayesrank.posteriors.nuts.sites import MaskObserved

__all__ = ["BayesGLM", "MaskObserved", "NumPyroModel", "NutsState", "latent_w_glm",
           "register_model", "registered_models", "resolve_model"]
