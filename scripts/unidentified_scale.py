"""Can any hyperprior on theta's scale tau cover the truth in [0.8, 0.97] at every c of
the units study's logistic rows?  A plain-NumPy model of the question, independent of
bayesrank's code.

    python scripts/unidentified_scale.py

The model: per position, the clicks' information about theta is summarised by a
Gaussian likelihood ``theta_hat_j ~ N(theta_j, s_j^2)`` (the Laplace picture), with
``s_j = 1 / sqrt(n * 1/4 * E[x_j^2])``: Fisher information 1/4 per impression (clicks
near p = 1/2, as at c <= 1), E[x_j^2] from the study's instance (the Figure 1
generator, K = 100, d = 10, w_max = 1, w known). ``theta = c * theta_true`` (the
instance's 4 x 10 theta), ``theta_j | tau ~ N(0, tau^2)`` and ``tau ~`` the hyperprior,
integrated on a fine grid in log tau; theta's 90 % interval is the posterior mixture's
5 % and 95 % quantiles. The coverage printed is the share of the 40 coordinates inside
their interval, averaged over 200 draws of theta_hat. Only the information's size
matters here, not bayesrank's approximations, so this isolates what the hyperprior
alone can do.

What it shows (docs/units.md, "Why not within 0.97 at c = 0.1"): where s_j is much
larger than the true scale (c = 0.1 at every round, c = 0.3 at round 100) the data
bound tau from above only; the interval is then as wide as the hyperprior's mass below
that bound, which is far wider than the truth unless the hyperprior itself sits near
the true scale. A hyperprior narrow enough to cover in [0.8, 0.97] at c = 0.1 holds
tau too low at c = 1 and 3.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from bayesrank.simulation.env import RankingEnv

C = (0.1, 0.3, 1.0, 3.0)
ROUNDS = (100, 1000, 3000)
LOG_TAU = np.linspace(np.log(1e-7), np.log(30.0), 500)
TAU = np.exp(LOG_TAU)


def log_uniform(lo: float, hi: float):
    """log density of tau uniform in log tau on (lo, hi), up to a constant."""
    return lambda t: np.where((t > lo) & (t < hi), -np.log(t), -np.inf)


HYPERPRIORS = {
    "HalfNormal(1) (the default)": stats.halfnorm(scale=1.0).logpdf,
    "HalfCauchy(1)": stats.halfcauchy(scale=1.0).logpdf,
    "HalfNormal(0.1)": stats.halfnorm(scale=0.1).logpdf,
    "HalfNormal(0.03)": stats.halfnorm(scale=0.03).logpdf,
    "HalfCauchy(0.01)": stats.halfcauchy(scale=0.01).logpdf,
    "log-uniform(1e-3, 3)": log_uniform(1e-3, 3.0),
    "log-uniform(1e-4, 3)": log_uniform(1e-4, 3.0),
    "log-uniform(1e-5, 3)": log_uniform(1e-5, 3.0),
}


def coverage(log_prior, theta, s, rng, reps=200, level=0.9):
    """Share of theta's coordinates inside their central ``level`` interval."""
    lo, hi = (1 - level) / 2, (1 + level) / 2
    t2 = TAU[:, None] ** 2
    log_w = log_prior(TAU) + LOG_TAU  # the hyperprior on the grid of log tau
    inside = []
    for _ in range(reps):
        hat = theta + s * rng.standard_normal(theta.shape)
        for h, sj, th in zip(hat, s, theta):  # one position (its own tau)
            v = t2 + sj**2  # (grid, d)
            logp = log_w - 0.5 * np.sum(np.log(v) + h**2 / v, axis=1)
            wts = np.exp(logp - np.max(logp))
            wts /= wts.sum()
            mean = t2 / v * h
            sd = np.sqrt(t2 * sj**2 / v)
            cdf = wts @ stats.norm.cdf((th - mean) / sd)  # (d,) mixture CDF at truth
            inside.append((cdf >= lo) & (cdf <= hi))
    return float(np.mean(inside))


def _sd(n: int, ex2, shape):
    """s_j at round n: Fisher information n / 4 * E[x_j^2] per coordinate."""
    return np.broadcast_to(1.0 / np.sqrt(n * 0.25 * ex2), shape)


def main() -> None:
    env = RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=1.0, link="logistic")
    theta_true = np.asarray(env.theta, float)
    ex2 = np.mean(np.asarray(env.items, float) ** 2, axis=0)  # E[x_j^2] (d,)
    rng = np.random.default_rng(0)
    print("coverage of theta's 90 % intervals, rounds " + " / ".join(map(str, ROUNDS)))
    print("| hyperprior | " + " | ".join(f"c = {c:g}" for c in C) + " |")
    print("|---" * (len(C) + 1) + "|")
    for name, log_prior in HYPERPRIORS.items():
        cells = []
        for c in C:
            cov = []
            for n in ROUNDS:
                s = _sd(n, ex2, theta_true.shape)
                cov.append(coverage(log_prior, c * theta_true, s, rng))
            cells.append(" / ".join(f"{x:.2f}" for x in cov))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    cells = []
    for c in C:  # the oracle: tau fixed at the generator's rms 0.224 c
        tau = c * np.sqrt(1 / 20)
        cov = []
        for n in ROUNDS:
            s = _sd(n, ex2, theta_true.shape)
            hat = c * theta_true + s * rng.standard_normal((200, *s.shape))
            m = tau**2 / (tau**2 + s**2) * hat
            sd = np.sqrt(tau**2 * s**2 / (tau**2 + s**2))
            z = np.abs(c * theta_true - m) / sd
            cov.append(float(np.mean(z <= stats.norm.ppf(0.95))))
        cells.append(" / ".join(f"{x:.2f}" for x in cov))
    print("| oracle (tau = 0.224 c) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
