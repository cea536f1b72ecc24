"""WindowRankUCB (:mod:`bayesrank.policies.window_ucb`): with S = 2 it is RankUCB,
list for list and table for table."""

from __future__ import annotations

import jax
import numpy as np

from bayesrank.policies.ucb import RankUCB
from bayesrank.policies.window_ucb import WindowRankUCB
from bayesrank.simulation.env import RankingEnv


def test_window_s2_picks_what_rank_ucb_picks():
    env = RankingEnv.paper(seed=2, K=10, L=4, d=6, w_max=5.0)
    ucb = RankUCB(items=env.items, w=env.w, v0=np.ones(6) / 3)
    win = WindowRankUCB(
        items=env.items, w=np.asarray(env.w)[:, None], v0=np.ones(6) / 3
    )
    for t in range(100):
        a, b = ucb.select(), win.select()
        assert np.array_equal(a, b), (t, a, b)
        r = np.asarray(env.sample(jax.random.key(t), a))
        ucb.update(a, r)
        win.update(b, r)
    for a, b in zip(win.scores(), ucb.scores()):  # one shared path: the same tables
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
