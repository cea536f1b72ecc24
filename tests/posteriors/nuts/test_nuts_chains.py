"""The L positions' NUTS chains advance in turn on CPU (``lax.map``) and batched
elsewhere (``vmap``): the two give the same chains, up to the rounding of batched
against single products (which NUTS's trajectories amplify over many rounds)."""

from __future__ import annotations

import jax
import numpy as np

import bayesrank as br
from bayesrank.posteriors.nuts import kernel as nuts_kernel
def _rounds(in_turn, monkeypatch, T=3):
    monkeypatch.setattr(nuts_kernel, "POSITIONS_IN_TURN", in_turn)
    jax.clear_caches()  # read when traced
    model = br.BayesGLM("logistic", n_max=40, num_warmup=10, steps_per_round=2)
    L, p = 3, 4
    rng = np.random.default_rng(0)
    state = model.init(L, p)
    draws = []
    for t in range(T):
        x = rng.normal(size=(L, p))
        y = (rng.random(L) < 0.5).astype(float)
        state = model.update(state, x, y)
        theta, state = model.draw(jax.random.key(t), state)
        draws.append(np.asarray(theta))
    return np.stack(draws), state


def test_chains_in_turn_equal_batched_chains(monkeypatch):
    assert jax.config.jax_enable_x64
    in_turn, s1 = _rounds(True, monkeypatch)
    batched, s2 = _rounds(False, monkeypatch)
    assert in_turn.shape == (3, 3, 4)
    np.testing.assert_allclose(in_turn, batched, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(s1.hmc.num_steps), np.asarray(s2.hmc.num_steps))
    # each position its own chain: the positions' draws differ
    assert np.abs(in_turn[:, 0] - in_turn[:, 1]).max() > 1e-3


def test_the_default_runs_in_turn_on_cpu(monkeypatch):
    """Bit for bit the in-turn chains (the batched ones differ in the last bits)."""
    assert jax.default_backend() == "cpu"
    auto, _ = _rounds(None, monkeypatch)
    in_turn, _ = _rounds(True, monkeypatch)
    np.testing.assert_array_equal(auto, in_turn)
