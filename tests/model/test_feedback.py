"""cascade_rewards against a hand-written loop, and partial feedback end to end."""

import numpy as np
import pytest

import bayesrank as br


def test_cascade_rewards_equal_a_loop():
    rng = np.random.default_rng(0)
    clicks = rng.integers(-1, 4, 50)
    got = br.cascade_rewards(clicks, L=4)
    for c, row in zip(clicks, got):
        want = [0.0] * 4 if c < 0 else [0.0] * c + [1.0] + [np.nan] * (3 - c)
        np.testing.assert_array_equal(row, want)


def test_cascade_log_updates_only_examined_positions():
    """The posterior after a cascade log equals the closed-form ridge fit on the
    examined positions only."""
    env = br.RankingEnv.paper(seed=2, K=6, L=3, d=4, w_max=1.0)
    model = br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)  # the ridge fit below
    pol = br.RankTS(model=model, items=env.items, w=env.w, v0=env.v0, seed=0)
    rng = np.random.default_rng(1)
    lists = rng.integers(0, 6, (40, 3))
    r = br.cascade_rewards(rng.integers(-1, 3, 40), L=3)
    pol.update(lists, r)
    x = pol.features(lists)
    for pos in range(3):
        seen = np.isfinite(r[:, pos])
        X, y = x[seen, pos], r[seen, pos]
        ref = np.linalg.solve(np.eye(4) + X.T @ X, X.T @ y)
        np.testing.assert_allclose(pol.posterior_mean()[pos], ref, rtol=1e-8)


@pytest.mark.parametrize(
    "clicks, L, exc, words",
    [([0, 5], 3, ValueError, "first_click: expected positions in [0, 2] or -1"),
     ([-2], 3, ValueError, "first_click: expected positions"),
     ([0.5], 3, TypeError, "first_click: expected integer positions"),
     ([True], 3, TypeError, "first_click: expected integer positions"),
     (["1"], 3, TypeError, "first_click: expected integer positions"),
     ([[0]], 3, ValueError, "first_click: expected shape (n,)"),
     ([0], 0, ValueError, "L: expected an integer >= 1"),
     ([0], 2.0, TypeError, "L: expected an integer, got float")],
)
def test_bad_cascade_input(clicks, L, exc, words):
    with pytest.raises(exc) as info:
        br.cascade_rewards(clicks, L)
    assert words in str(info.value)
