"""Why the logistic units rows over-cover at small c: what tau does the learnt
``LaplaceGLM()`` believe, against theta's true scale?

    python scripts/logistic_tau.py

One RankTS run (seed 0, known w) on the units study's logistic instance
(``RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=1, link="logistic")``, theta x c)
for c = 0.1 and 1; at rounds 100, 1,000 and 3,000 it prints each position's
posterior mean of tau beside the true rms of theta's coordinates.
"""

from __future__ import annotations

import jax
import numpy as np

import bayesrank as br
from bayesrank.studies.units import _rescaled


def main() -> None:
    env0 = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=1.0, link="logistic")
    for c in (0.1, 1.0):
        env = _rescaled(env0, c)
        ts = br.RankTS(model=br.LaplaceGLM("logistic", prior_scale=None, n_max=3000),
                       items=env.items, w=env.w, seed=0)
        rms = np.sqrt((np.asarray(env.theta) ** 2).mean(-1))
        for t in range(3000):
            items = ts.select()
            ts.update(items, np.asarray(env.sample(jax.random.key(t), items), float))
            if t + 1 in (100, 1000, 3000):
                tau, w = (np.asarray(a) for a in ts.model.scale_posterior(ts.state.model))
                print(f"c = {c:g}, round {t + 1}: E[tau | D] = {np.round((w * tau).sum(-1), 3)}, "
                      f"true rms {np.round(rms, 3)}", flush=True)


if __name__ == "__main__":
    main()
