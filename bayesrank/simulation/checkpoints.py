"""Play runs to checkpoint rounds and look at their posteriors there.

The in-loop studies (the posterior of w over rounds in ``bayesrank reproduce
unknown-w``) need more than regret: at chosen rounds they read each run's posterior.
:func:`play_to_checkpoints` plays every run through :func:`~bayesrank.simulation.play.play`
(vmapped over runs, compiled once per segment length) with the keys of
:func:`bayesrank.simulate`: run r's policy is built with seed ``policy_seed(seed, r)``
and samples with ``noise_key(seed, r)``, so its regret is the regret ``simulate``
records for that run (common random numbers with every other policy of a study).

Example:
    >>> import jax, bayesrank as br
    >>> from bayesrank.simulation.checkpoints import play_to_checkpoints
    >>> env = br.RankingEnv.paper(seed=0, K=6, L=3, d=2)
    >>> make = lambda s: br.RankTS(items=env.items, w=env.w, seed=s)
    >>> regret, means = play_to_checkpoints(make, env, (5, 10), runs=2,
    ...     measure=lambda model, states: jax.vmap(model.mean)(states))
    >>> regret.shape, means[1].shape          # (runs, T); (runs, L, d) at round 10
    ((2, 10), (2, 3, 2))
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_int
from bayesrank.simulation.play import fold_in_keys, play
from bayesrank.simulation.simulate import noise_key, policy_seed

__all__ = ["play_to_checkpoints", "segment"]


@functools.partial(jax.jit, static_argnames=("T",))
def segment(core, env, states, pkeys, nkeys, ctx, best, *, T: int, t0):
    """Rounds ``t0 .. t0 + T - 1`` of every run (vmapped over the leading axis of
    ``states``, ``pkeys`` and ``nkeys``): ``(final states, regret (runs, T))``.
    ``t0`` is traced: segments of one length share one program."""

    def run(state, pk, nk):
        keys = fold_in_keys(pk, nk)
        return play(core, env, state, T, keys=lambda t: keys(t + t0), ctx=ctx,
                    best=best, record=lambda r: r.best - r.env.expected_reward(r.items))

    return jax.vmap(run)(states, pkeys, nkeys)


def play_to_checkpoints(factory: Callable[[int], object], env, rounds: Sequence[int],
                        runs: int, measure: Callable, *, seed: int = 0):
    """Play ``runs`` runs of ``factory``'s policy and measure them at ``rounds``.

    Args:
        factory: ``seed -> policy`` (as for :func:`bayesrank.simulate`); every run's
            policy must share one configuration (one functional core).
        env: the environment (its ``best_value`` is the regret's reference).
        rounds: increasing checkpoint rounds (1-based: after that many rounds).
        runs: how many runs.
        measure: ``(model, model states with a leading run axis) -> pytree`` of
            arrays with a leading run axis, called at each checkpoint.
        seed: the study's seed (``simulate``'s keys).

    Returns:
        ``(regret, measured)``: per-round pseudo-regret ``(runs, rounds[-1])`` as a
        NumPy array, and the list of ``measure``'s outputs (NumPy), one per checkpoint.
    """
    runs = check_int(runs, "runs", low=1)
    rounds = [int(r) for r in rounds]
    if not rounds or rounds[0] < 1 or any(b <= a for a, b in itertools.pairwise(rounds)):
        raise ValueError(f"rounds: expected increasing positive rounds, got {rounds!r}")
    pols = [factory(policy_seed(seed, r)) for r in range(runs)]
    core, ctx = pols[0].core, pols[0].context()
    states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[p.state for p in pols])
    pkeys = jnp.stack([p.key for p in pols])
    nkeys = jnp.stack([noise_key(seed, r) for r in range(runs)])
    regret, measured, start = [], [], 0
    for end in rounds:
        states, reg = segment(core, env, states, pkeys, nkeys, ctx, env.best_value,
                              T=end - start, t0=start)
        regret.append(np.asarray(reg, float))
        measured.append(jax.tree_util.tree_map(np.asarray,
                                               measure(core.model, states.model)))
        start = end
    return np.concatenate(regret, axis=1), measured
