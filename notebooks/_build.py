"""Write the tutorial notebooks (``notebooks/*.ipynb``) from the cell sources below.

The committed notebooks carry no outputs. Edit the cells here and run

    python notebooks/_build.py

to rewrite them; ``tests/test_notebooks.py`` executes every notebook at its quick scale.
Each notebook has a cell tagged ``parameters`` (``QUICK = True``: well under a minute on
a 2-core CPU; ``QUICK = False``: the larger scale quoted in the notebook).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

KERNEL = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def md(text: str):
    return ("md", text)


def code(text: str):
    return ("code", text)


def params(text: str):
    return ("params", text)


# --------------------------------------------------------------------------- 01
QUICKSTART = [
    md("""\
# 1. Quickstart: rank your own items with RankTS

You have **K items** described by feature vectors (embeddings, metadata, ...) and a page
with **L slots**. Each visit you show an ordered list and observe one reward per slot
(a rating, dwell time, a click). What makes this *ranking in GLM bandits* (the paper
`Ranking In Generalized Linear Bandits`) different from ranking each slot on its own:
the reward of an item depends on **the item shown just before it**,

$$r^l = \\langle \\theta^l,\\; v_{a^l} + w_l\\, v_{a^{l-1}} \\rangle + \\varepsilon ,$$

so the best list is not "the best item per slot" but the best *path* through the slots.

This notebook:

1. builds item vectors and a hidden "true" world to simulate feedback,
2. runs `RankTS` (Thompson sampling with an exact conjugate Gaussian posterior per slot)
   in a plain `select()` / `update()` loop,
3. plots its regret, against a policy that ignores the neighbour effect,
4. summarises the posterior with ArviZ, and saves / resumes the policy."""),
    params("""\
# Parameters. QUICK = True runs in a few seconds; QUICK = False is a longer run.
QUICK = True"""),
    code("""\
T = 300 if QUICK else 3000  # rounds (page views)
RUNS = 8 if QUICK else 50  # independent runs for the many-runs comparison"""),
    code("""\
import tempfile
from pathlib import Path

import arviz as az
import jax
import matplotlib.pyplot as plt
import numpy as np

import bayesrank as br
from bayesrank import plots

print(f"bayesrank {br.__version__} | jax {jax.__version__} | arviz {az.__version__}")"""),
    md("""\
## Your items

`items` is a `(K, d)` array: one row per item. Here 40 random items in 6 dimensions, the
last coordinate a constant 1 (an intercept, like the paper's generator). In your
application these would be your own embeddings."""),
    code("""\
rng = np.random.default_rng(0)
K, L, d = 40, 4, 6
items = rng.normal(size=(K, d)) / np.sqrt(d)
items[:, -1] = 1.0
items.shape"""),
    md("""\
## A hidden world to learn from

To measure regret we simulate the users: a true `theta` per slot (unknown to the
policy) and the neighbour weights `w` (known to RankTS, as in the paper; `GenRankUCB`
learns them). `w[0]` weighs the user's last item `v0` (zeros here). Slot 2 penalises
an item that resembles its predecessor (`w < 0`), slot 3 rewards it."""),
    code("""\
theta_true = 0.5 * rng.normal(size=(L, d))
w = np.array([0.0, -1.5, 1.0, -0.5])
env = br.RankingEnv(items=items, theta=theta_true, w=w, noise=br.noise.Gaussian(0.5))
best, best_value = env.best()
print(env)
print("best list:", best, "expected total reward:", float(best_value))"""),
    md("""\
Ranking each slot on its own (the classic ranked-bandits view, `w = 0`) picks a
different list, and loses reward on every page view:"""),
    code("""\
slotwise = br.RankingEnv(items=items, theta=theta_true, w=np.zeros(L)).best()[0]
print("best list ignoring neighbours:", slotwise)
print("its regret per page view:", float(env.regret(slotwise)))"""),
    md("""\
## The bandit loop

`RankTS` needs the items and the neighbour weights, never `theta`. Each round:
`select()` draws one `theta^l` per slot from the posterior and decodes the best list
for the draw exactly (a dynamic programme over the slots), `update()` folds the
rewards into the posterior. `env.sample` plays the user; `env.regret` is the
pseudo-regret (expected reward lost against the best list)."""),
    code("""\
policy = br.RankTS(model=br.GaussianLinear(), items=items, w=w, seed=0)
key = jax.random.key(42)
regret = np.zeros(T)
for t in range(T):
    shown = policy.select()  # (L,) item indices
    rewards = env.sample(jax.random.fold_in(key, t), shown)  # (L,) one per slot
    policy.update(shown, rewards)
    regret[t] = env.regret(shown)

print(policy)
print("last list shown:", shown, "| best:", best)
print(f"mean regret, first 20 rounds: {regret[:20].mean():.3f}, "
      f"last 50: {regret[-50:].mean():.3f}")"""),
    code("""\
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), constrained_layout=True)
win = 10
axes[0].plot(np.arange(1, T + 1), regret, color="0.8", lw=0.8, label="per round")
axes[0].plot(np.arange(win, T + 1), np.convolve(regret, np.ones(win) / win, "valid"),
             color=plots.color_for("RankTS"), label=f"moving average ({win})")
axes[0].set(xlabel="round", ylabel="pseudo-regret", title="RankTS, one run")
axes[0].legend(frameon=False)
axes[1].plot(np.arange(1, T + 1), regret.cumsum(), color=plots.color_for("RankTS"))
axes[1].set(xlabel="round", ylabel="cumulative pseudo-regret",
            title="regret grows sub-linearly")
plt.show()"""),
    md("""\
## Logged data: batch updates

`update` also takes a batch `(n, L)` of lists and rewards, e.g. to warm-start from
logs. The conjugate posterior does not care about the order: a fresh policy updated
with the whole history in one call has the same posterior as the one that learnt
online."""),
    code("""\
logged_items, logged_rewards = policy.history()  # (T, L) each
warm = br.RankTS(model=br.GaussianLinear(), items=items, w=w, seed=1)
warm.update(logged_items, logged_rewards)
print(logged_items.shape, "same posterior mean:",
      np.allclose(warm.posterior_mean(), policy.posterior_mean(), atol=1e-4))"""),
    md("""\
## Many runs at once: `br.simulate`

A policy is also a set of pure JAX functions, so `br.simulate` compiles a whole run
(`lax.scan` over rounds) and `vmap`s it over runs. Every policy sees the same noise
draws. We compare RankTS with the same sampler told that `w = 0` (it ranks each slot
on its own)."""),
    code("""\
policies = {
    "RankTS": lambda s: br.RankTS(items=items, w=w, seed=s),
    "RankTS (w=0)": lambda s: br.RankTS(items=items, L=L, seed=s),
}
ds = br.simulate(env, policies, T=T, runs=RUNS, seed=0, progress=False)
ds"""),
    code("""\
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), constrained_layout=True)
title = f"mean over {RUNS} runs, 10-90 % band"
plots.regret_curves(ds, ax=axes[0], window=10, title=title)
plots.regret_curves(ds, ax=axes[1], cumulative=True, title="cumulative")
plt.show()
print(ds["regret"].sum("round").mean("run").to_series().round(1))"""),
    md("""\
## What did it learn? The posterior, with ArviZ

`policy.posterior(l)` returns slot `l`'s posterior as an ArviZ `DataTree` (the
conjugate posterior summarised by exact i.i.d. draws), so every ArviZ function works
on it. Slot 1 (index 0):"""),
    code("""\
dt = policy.posterior(0)
summary = az.summary(dt)
summary["true"] = theta_true[0]
summary"""),
    md("""\
Posterior means with 2-sd bars for every slot, against the truth. Coordinates the
policy rarely needed to pin down (they do not change which list is best) stay
uncertain: Thompson sampling learns what matters for the decision."""),
    code("""\
fig, axes = plt.subplots(1, L, figsize=(12, 3), sharey=True, constrained_layout=True)
for l, ax in enumerate(axes):
    draws = policy.posterior(l, draws=250).posterior["theta"]
    mean = draws.mean(("chain", "draw")).values
    sd = draws.std(("chain", "draw")).values
    ax.errorbar(np.arange(d), mean, yerr=2 * sd, fmt="o",
                color=plots.color_for("RankTS"), label="posterior mean ± 2 sd")
    ax.plot(np.arange(d), theta_true[l], "kx", label="true")
    ax.set(title=f"slot {l + 1}", xlabel="coordinate")
axes[0].set_ylabel(r"$\\theta^l$")
axes[0].legend(frameon=False, fontsize=8)
plt.show()"""),
    md("""\
## Save and resume

`save` writes arrays and a JSON configuration into one `.npz` (no pickle); `load`
continues exactly where the policy stopped: the next list is the same."""),
    code("""\
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "rankts.npz"
    policy.save(path)
    resumed = br.RankTS.load(path)
same = np.array_equal(resumed.select(), policy.select())
print(resumed, "| next lists agree:", same)"""),
    md("""\
**Next:** `02_custom_numpyro_model.ipynb` swaps the conjugate posterior for your own
NumPyro model sampled by NUTS; `03_reproducing_the_paper.ipynb` runs the paper's
experiments."""),
]


# --------------------------------------------------------------------------- 02
CUSTOM = [
    md("""\
# 2. Your own NumPyro model: logistic clicks, a hierarchical prior, NUTS

Rewards are often **clicks** (0/1), not Gaussian ratings. The paper's GLM version puts
a link on each position: $P(\\text{click at } l) = \\sigma(\\langle \\theta^l, v_{a^l} +
w_l v_{a^{l-1}} \\rangle)$. There is no conjugate posterior any more, so bayesrank
samples it with **NUTS** (NumPyro), warm-started from round to round inside the
compiled policy: a few NUTS transitions per round, no recompilation as data arrive.

You can bring **your own NumPyro model** for a position. The contract
(`bayesrank.posteriors.models`):

* signature `model(x, y=None)`: `x` is `(n, p)` (the features of the super-arms shown at
  this position), `y` the `(n,)` rewards;
* a latent or deterministic site named `"theta"` of shape `(p,)`: the draw that
  ranks the items;
* observations inside `numpyro.plate("obs", n)` (bayesrank pads the data to a fixed
  size and masks the padding on the observed site only).

This notebook writes a **hierarchical prior within a position** (the coefficients
share a learned mean and scale), runs `RankTS` on it, and checks the posterior with
ArviZ: trace and forest plots, $\\hat R$, effective sample sizes, divergences."""),
    params("""\
# Parameters. QUICK = True: 200 rounds (about a minute with compilation).
QUICK = True"""),
    code("""\
T = 200 if QUICK else 1000  # rounds
CHAINS, DRAWS = (4, 300) if QUICK else (4, 1000)  # the fresh diagnostic NUTS run"""),
    code("""\
import arviz as az
import jax
import matplotlib.pyplot as plt
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd

import bayesrank as br
from bayesrank import plots"""),
    md("""\
## Clicks from the paper's generator

`link="logistic"` makes the environment's rewards Bernoulli clicks with
probability $\\sigma(\\cdot)$."""),
    code("""\
env = br.RankingEnv.paper(seed=3, K=20, L=3, d=4, w_max=1.0, link="logistic")
best, best_value = env.best()
print(env)
print("best list:", best)
print("click probabilities:", np.round(env.position_means(best), 3))"""),
    md("""\
## The model

Non-centred hierarchical prior: $\\mu \\sim N(0, 1)$,
$\\tau \\sim \\text{HalfNormal}(1)$, $z_j \\sim N(0, 1)$,
$\\theta = \\mu + \\tau z$ (a deterministic site). The non-centred form avoids the
funnel NUTS struggles with when there are few data. Every position gets its own
$\\mu, \\tau$ and its own chain."""),
    code("""\
def click_model(x, y=None):
    p = x.shape[-1]
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([p]).to_event(1))
    theta = numpyro.deterministic("theta", mu + tau * z)
    with numpyro.plate("obs", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ theta), obs=y)"""),
    md("""\
**Prior predictive check** before any data: the click probabilities this prior
implies for the super-arms of random lists. A prior that put everything near 0 or 1
would make the first rounds of Thompson sampling erratic."""),
    code("""\
rng = np.random.default_rng(0)
lists = rng.integers(0, env.K, size=(200, env.L))
x0 = np.asarray(env.features(lists))[:, 0, :]  # (200, d): position-1 features
prior = numpyro.infer.Predictive(click_model, num_samples=500)(jax.random.key(0), x0)
p_click = jax.nn.sigmoid(prior["theta"] @ x0.T)  # (500 prior draws, 200 lists)
fig, ax = plt.subplots(figsize=(5, 3), constrained_layout=True)
ax.hist(np.asarray(p_click).ravel(), bins=40, color="0.6")
ax.set(xlabel="click probability", ylabel="count", title="prior predictive, position 1")
plt.show()"""),
    md("""\
## RankTS driven by NUTS

`br.NumPyroModel(click_model, link="logistic", reward_support="binary", ...)` wraps the
model: `link` tells the policy how to score items from a draw of `theta`,
`reward_support` checks that rewards are 0/1, `n_max` sizes the per-position data
buffer, and `num_warmup` / `steps_per_round` set the sampler's work (warm-up re-runs
on a geometric schedule as data grow). The loop is the same as with the conjugate
model; the first `select()` compiles the sampler."""),
    code("""\
model = br.NumPyroModel(click_model, link="logistic", reward_support="binary",
                        n_max=T, num_warmup=100, steps_per_round=3)
policy = br.RankTS(model=model, items=env.items, w=env.w, seed=0)

key = jax.random.key(1)
regret, clicks = np.zeros(T), np.zeros(T)
for t in range(T):
    shown = policy.select()
    rewards = env.sample(jax.random.fold_in(key, t), shown)  # 0/1 per position
    policy.update(shown, rewards)
    regret[t], clicks[t] = env.regret(shown), rewards.sum()
print(policy, "| last list:", shown, "| best:", best)"""),
    code("""\
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5), constrained_layout=True)
win = 20
c = plots.color_for("RankTS-NUTS")
smooth = np.convolve(regret, np.ones(win) / win, "valid")
axes[0].plot(np.arange(win, T + 1), smooth, color=c)
axes[0].set(xlabel="round", ylabel=f"pseudo-regret ({win}-round average)",
            title="RankTS with the hierarchical model")
axes[1].plot(np.arange(1, T + 1), np.cumsum(clicks) / np.arange(1, T + 1), color=c,
             label="clicks per page view")
axes[1].axhline(float(best_value), color="k", ls="--", label="best list (expected)")
axes[1].set(xlabel="round", ylabel="running mean")
axes[1].legend(frameon=False)
plt.show()"""),
    md("""\
## Sampler health during the run

The in-loop chains keep running statistics: divergences, mean acceptance rate, leapfrog
steps per transition, the current step size, whether a chain is still adapting."""),
    code("""\
health = model.diagnostics(policy.state.model)  # {name: (L,) array}
pd.DataFrame({k: np.asarray(v) for k, v in health.items()},
             index=pd.Index(range(1, env.L + 1), name="position"))"""),
    md("""\
## The posterior, with ArviZ

`policy.posterior(l)` runs **fresh** NUTS chains on position `l`'s data and returns an
ArviZ `DataTree` (posterior, sample_stats, log_likelihood, log_prior, observed_data).
This is the check that the in-loop sampler's target is well behaved, with the
standard diagnostics."""),
    code("""\
dt = policy.posterior(0, chains=CHAINS, draws=DRAWS, warmup=DRAWS)
summary = az.summary(dt, var_names=["mu", "tau", "theta"])
summary"""),
    code("""\
rhat = az.rhat(dt, var_names=["mu", "tau", "theta"])
ess = az.ess(dt, var_names=["mu", "tau", "theta"], method="bulk")
divergences = int(dt["sample_stats"]["diverging"].sum())
print("max R-hat:", round(float(max(rhat[v].max() for v in rhat.data_vars)), 3))
print("min bulk ESS:", int(min(ess[v].min() for v in ess.data_vars)),
      f"of {CHAINS * DRAWS} draws")
print("divergent transitions:", divergences)"""),
    code("""\
pc = az.plot_trace_dist(dt, var_names=["mu", "tau", "theta"], backend="matplotlib")
plt.show()"""),
    md("""\
Forest plot of $\\theta^1$, one line per chain: chains that agree are what
$\\hat R$ checks. Below it, the posterior means beside the true values; the intercept
(the last coordinate, 1/2 in the generator) is the best determined, since every item
has it."""),
    code("""\
pc = az.plot_forest(dt, var_names=["theta"], backend="matplotlib")
plt.show()
rows = [f"theta[{j}]" for j in range(env.d)]
pd.DataFrame({"posterior mean": summary.loc[rows, "mean"].astype(float).values,
              "true": np.asarray(env.theta[0])}, index=rows).round(3)"""),
    md("""\
## Notes

* Swap in `br.BayesGLM(link="logistic")` (a plain Gaussian prior) or the ready-made
  examples in `bayesrank.posteriors.models` (`student_t_glm`, `hierarchical_glm`) to
  compare priors; `04_prior_sensitivity.ipynb` does that systematically.
* `br.simulate` runs NUTS policies too (run by run, each run one compiled scan).
* A policy with a user model can be saved (`policy.save`) when the model is a
  module-level function; pass `model=` to `RankTS.load` to supply it otherwise."""),
]


# --------------------------------------------------------------------------- 03
PAPER = [
    md("""\
# 3. Reproducing the paper at notebook scale

The paper (*Ranking In Generalized Linear Bandits*) compares four algorithms on
instances from its generator ($d = 10$, $L = 4$, $\\theta^l = (\\theta'_l/2, 1/2)$,
$v_i = (v'_i, 1)$ with unit-norm $\\theta', v'$, $w_l \\sim U(-w_{max}, w_{max})$):

* **RankTS** - Thompson sampling, conjugate Gaussian posterior per position,
* **RankUCB** - UCB with the known neighbour weights $w$,
* **GenRankUCB** - UCB that learns $w$ too (features $[v_j, v_i]$ in $2d$),
* **Baseline** - one linear UCB per position that ignores the previous item.

This notebook redoes **Figure 1** ($K = 100$, $\\max|w| = 0$ and $10$) and the
**average response time table** at a scale that runs in about a minute. The full
scale (T = 10,000 rounds, 100 runs, plus the appendix figures, the robustness
study and the bound-tightness plots) is one command:

```bash
bayesrank reproduce all              # full scale: PNGs, NetCDF and report.md
bayesrank reproduce figure1 --quick  # one part, small scale
```

or, from Python,
`bayesrank.experiments.reproduce.reproduce("all", out="bayesrank-reproduce")`.
Like the authors' experiments, the UCB policies here use the constant width
$\\alpha = 1 + \\sqrt{\\log(2/\\delta)/2}$; `alpha=None` gives Lemma 1's width."""),
    params("""\
# Parameters. QUICK = True: T = 300 rounds x 4 runs (about a minute on 2 CPU cores).
# QUICK = False: T = 2,000 x 20 runs; the paper used T = 10,000 x 100 runs.
QUICK = True"""),
    code("""\
T, RUNS = (300, 4) if QUICK else (2000, 20)
TIMING_ROUNDS = 30 if QUICK else 300
SEED = 0"""),
    code("""\
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import bayesrank as br
from bayesrank import plots
from bayesrank.experiments.demo import paper_policies, summary_rows
from bayesrank.experiments.reproduce import (
    PAPER_TIMING_MS,
    authors_alpha,
    response_times,
)

ALPHA = authors_alpha()  # 1 + sqrt(log(2 / 0.1) / 2)
print(f"alpha = {ALPHA:.3f}")"""),
    md("""\
## The four policies

`paper_policies(env, alpha=...)` returns the paper's four algorithms as
`{name: factory(seed)}`, the form `br.simulate` takes (each factory builds one run's
policy). Nothing else is needed: the policies are told the items, `w` where they use
it, and the user's last item `v0`."""),
    code("""\
env = br.RankingEnv.paper(seed=SEED, K=100, L=4, d=10, w_max=10.0)
for name, factory in paper_policies(env, alpha=ALPHA).items():
    print(f"{name:11s} -> {factory(0)!r}")"""),
    md("""\
## Figure 1

Per-round pseudo-regret (expected reward of the best list minus that of the played
list), mean over runs with a 10-90 % band. All runs of a policy are one compiled
`lax.scan`, `vmap`ped over runs."""),
    code("""\
results = {}
for w_max in (0.0, 10.0):
    env = br.RankingEnv.paper(seed=SEED, K=100, L=4, d=10, w_max=w_max)
    results[w_max] = br.simulate(env, paper_policies(env, alpha=ALPHA), T=T, runs=RUNS,
                                 seed=SEED, progress=False)

fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True, constrained_layout=True)
for ax, (w_max, ds) in zip(axes, results.items()):
    plots.regret_curves(ds, ax=ax, window=max(1, T // 50),
                        title=f"K = 100, max|w| = {w_max:g}  ({RUNS} runs)")
plt.show()"""),
    code("""\
tables = []
for w_max, ds in results.items():
    df = pd.DataFrame(summary_rows(ds)).set_index("policy")
    df.insert(0, "max|w|", w_max)
    tables.append(df)
pd.concat(tables).round(2)"""),
    md("""\
What the paper reports, and what to look for here:

* **max|w| = 0**: every algorithm converges. With $w = 0$ RankUCB and the baseline are
  the same algorithm, and their curves coincide exactly (common random numbers).
* **max|w| = 10**: the baseline, blind to the neighbour effect, settles on a wrong list
  and keeps a large regret per round; RankTS, RankUCB and GenRankUCB keep learning
  (GenRankUCB slowest: it also learns $w$, in twice the dimension).

At this scale the curves have not flattened yet; `QUICK = False` or
`bayesrank reproduce figure1` runs them longer."""),
    md("""\
## Average response time

The paper's table: milliseconds per round (select + update) for $d = 10$, $L = 4$,
measured on an AMD Ryzen 5 5600X. The authors build the layered graph and run a
shortest-path search every round, which grows steeply with $K$. bayesrank decodes
with an exact DP ($O(LK)$ for RankTS and the baseline, $O(LK^2)$ for the UCB bonuses).
`response_times` times the class API the way an application would call it, one
round at a time, after a warm-up. Timings depend on the machine (and on what else
runs on it)."""),
    code("""\
rows = []
for K in (10, 100):
    ours = response_times(K, rounds=TIMING_ROUNDS, seed=SEED)
    for name, ms in ours.items():
        paper = PAPER_TIMING_MS[(name, K)]
        rows.append({"algorithm": name, "K": K, "paper ART (ms)": paper,
                     "bayesrank ART (ms)": ms, "speed-up": paper / ms})
timing = pd.DataFrame(rows).set_index(["algorithm", "K"])
timing.round(2)"""),
    code("""\
fig, ax = plt.subplots(figsize=(8.5, 3.6), constrained_layout=True)
names = list(dict.fromkeys(timing.index.get_level_values("algorithm")))
x = np.arange(len(names))
for k, (K, hatch) in enumerate(((10, ""), (100, "//"))):
    sub = timing.xs(K, level="K").loc[names]
    ax.bar(x + (k - 0.5) * 0.4 - 0.1, sub["paper ART (ms)"], 0.2, color="0.7",
           hatch=hatch, label=f"paper, K={K}")
    ax.bar(x + (k - 0.5) * 0.4 + 0.1, sub["bayesrank ART (ms)"], 0.2,
           color=[plots.color_for(n) for n in names], hatch=hatch,
           label=f"bayesrank, K={K}")
ax.set_yscale("log")
ax.set_xticks(x, names)
ax.set_ylabel("ms per round (log)")
ax.set_title("Average response time: the paper's table and this machine")
ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
plt.show()"""),
    md("""\
## Vectorised experiments

The response time above is for one interactive round. In experiments, `br.simulate`
amortises everything: the time per round and run, compilation included, of the
Figure 1 simulations:"""),
    code("""\
for w_max, ds in results.items():
    per = 1e3 * ds["seconds"] / (T * RUNS)
    print(f"max|w| = {w_max:4g}:", {str(p): round(float(v), 3)
                                    for p, v in zip(ds["policy"].values, per.values)},
          "ms per round per run")"""),
    md("""\
## Full scale

```bash
bayesrank reproduce all --out bayesrank-reproduce   # T = 10,000, 100 runs
```

writes one PNG and one NetCDF file per panel (`xarray.open_dataset` reads them back),
`timing.md` and a `report.md` that sets each result beside the paper's. Parts can be
run alone: `figure1`, `appendix`, `robustness`, `nonlinear`, `timing`, `tightness`."""),
]


# --------------------------------------------------------------------------- 04
SENSITIVITY = [
    md("""\
# 4. How much does the prior matter? A prior-sensitivity study of RankTS

Thompson sampling acts on posterior draws, so the prior steers exploration, most of
all early on. The paper leaves prior sensitivity out of scope; `bayesrank.sensitivity`
measures it:

* a **grid of priors** (here: location shift x scale of a Gaussian prior on every
  $\\theta^l$; the paper's $\\theta$ lies in $[-1/2, 1/2]^d$ with last coordinate 1/2),
* RankTS plays every cell over several seeds with common random numbers,
* at checkpoints, the posterior is diagnosed with ArviZ, including **power-scaling
  sensitivity** (`arviz.psense`: how much the posterior moves when the prior or the
  likelihood is raised to a power near 1; above 0.05 is flagged).

The same sweep runs from the command line with a TOML file, locally or on a Dask
cluster, and resumes where it stopped:

```bash
bayesrank sweep examples/sweep.toml --quick          # conjugate priors, seconds
bayesrank sweep examples/sweep_nuts.toml --executor dask   # heavy-tailed priors, NUTS
```"""),
    params("""\
# Parameters. QUICK = True: 9 cells x 4 runs x 200 rounds (about 15 s).
QUICK = True"""),
    code("""\
T, RUNS = (200, 4) if QUICK else (1000, 8)
CHECKPOINTS = [50, T]"""),
    code("""\
import tempfile

import arviz as az
import jax
import matplotlib.pyplot as plt
import numpy as np

import bayesrank as br
from bayesrank import sensitivity as sens"""),
    md("""\
## The sweep

A configuration is a dict (or the same content as TOML): how to run, the environment
grid, and named prior blocks whose lists are grid axes. `parse_config` validates it and
expands the cells before anything runs."""),
    code("""\
config = {
    "sweep": {"name": "location x scale", "T": T, "runs": RUNS,
              "checkpoints": CHECKPOINTS, "draws": 250, "chains": 4},
    "env": {"K": 10, "L": 4, "d": 5, "w_max": 10.0, "noise_sd": 1.0, "seed": 0},
    "priors": {"shift": {"family": "gaussian",
                         "location": [-1.0, 0.0, 1.0],
                         "scale": [0.05, 1.0, 10.0]}},
}
spec = sens.parse_config(config)
for cell in spec.cells:
    print(cell.label)"""),
    code("""\
out = tempfile.TemporaryDirectory()  # cells are stored here (resumable)
ds = sens.run_sweep(spec, out.name, progress=False)
print({k: v for k, v in ds.sizes.items()})"""),
    md("""\
## Regret over the prior grid

Mean cumulative regret after T rounds per cell. A **confident** prior (scale 0.05)
that is **wrong** (location $\\pm 1$) is costly: RankTS keeps exploiting what it
believes. A vague prior costs little against the best one."""),
    code("""\
fig = sens.plot_regret_heatmap(ds, x="location", y="scale")
plt.show()"""),
    code("""\
fig = sens.plot_regret_curves(ds)
plt.show()"""),
    md("""\
## Posterior diagnostics and power-scaling sensitivity

One row per cell and checkpoint: the worst $\\hat R$, ESS and MCSE over positions and
coordinates (the conjugate posterior is summarised by exact draws, so these are
sanity checks here; they matter for NUTS cells), and the largest prior and likelihood
sensitivity with ArviZ's diagnosis."""),
    code("""\
table = sens.diagnostics_table(ds)
cols = ["label", "checkpoint", "rhat_max", "ess_bulk_min", "psense_prior_max",
        "psense_likelihood_max", "diagnosis"]
short = table["label"].str.replace(r"shift: gaussian\\(|, correlation.*", "", regex=True)
table[cols].assign(label=short).round(3)"""),
    code("""\
fig = sens.plot_psense(ds)
plt.show()"""),
    md("""\
Reading it: with a vague prior (scale 10) the prior sensitivity is near 0 - the
data decide. The confident priors (scale 0.05) are flagged as *potential prior-data
conflict* at every checkpoint, the centred one too: the true intercept is 1/2, ten
prior standard deviations from 0. Scale 1 sits near the 0.05 threshold. The
likelihood sensitivity stays above the threshold everywhere: after a few hundred
rounds the data still carry most of the information, as they should."""),
    md("""\
## psense on one policy

The sweep is a convenience; the same check works on any policy, since
`policy.posterior(l)` is an ArviZ `DataTree` with `log_prior` and `log_likelihood`
groups. Two RankTS policies learn from the same 100 logged impressions, one with a
vague prior and one confidently wrong:"""),
    code("""\
env = br.RankingEnv.paper(seed=0, K=10, L=4, d=5, w_max=10.0)
rng = np.random.default_rng(0)
logged = rng.integers(0, env.K, size=(100, env.L))  # (n, L) lists shown
rewards = np.asarray(env.sample(jax.random.key(0), logged))  # (n, L)

priors = {"vague": br.GaussianLinear(prior_scale=10.0),
          "confident, wrong": br.GaussianLinear(prior_mean=-1.0, prior_scale=0.05)}
for name, model in priors.items():
    policy = br.RankTS(model=model, items=env.items, w=env.w, seed=0)
    policy.update(logged, rewards)  # a batch update
    print(f"--- {name} prior, position 1")
    print(az.psense_summary(policy.posterior(0)))"""),
    code("""\
out.cleanup()"""),
    md("""\
The sweep's results are an `xarray.Dataset` (also written to `results.nc` in the
output folder) and `sens.write_report(ds, folder)` writes the figures and a markdown
report, as `bayesrank sweep` does."""),
]


# --------------------------------------------------------------------------- 05
GRAPH = [
    md("""\
# 5. The L-layered graph and the dynamic programme

The paper finds the best list as a longest path in an **L-layered graph**: a node per
*super-arm* `(i, j)` (item `j` in slot `l` right after item `i`), edges between
consecutive slots, edge weights (Eq. 2)

$$c_e = \\tfrac12\\big(a\\, s_l(i,j) + b\\, s_{l+1}(j,q)\\big),\\qquad
a = 2 \\text{ if } l = 1, \\; b = 2 \\text{ if } l + 1 = L, \\text{ else } 1,$$

so that the weight of a path is the total score of its list,
$s_1(a^1) + \\sum_{l \\ge 2} s_l(a^{l-1}, a^l)$. The graph has $K + (L-1)K^2$ nodes
and the authors search it with Dijkstra from every start node.

Because the path weight is a *sum over consecutive pairs*, the longest path is a
max-sum dynamic programme over a chain (Viterbi), $O(L K^2)$, and $O(L K)$ when the
scores separate. bayesrank keeps the explicit graph (`bayesrank.decoding.graph`, built with
networkx) as a teaching and testing tool. This notebook draws it for a tiny instance and
checks that the DP finds the same path."""),
    params("""\
# Parameters. QUICK = True: the timing comparison stops at K = 32.
QUICK = True"""),
    code("""\
import itertools
import timeit

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np

import bayesrank as br
from bayesrank.decoding import graph"""),
    md("""\
## A tiny instance: K = 3 items, L = 3 slots

The paper's generator with strong neighbour weights. `env.score_tables()` gives the
true scores in the decoder's layout: `first[j]` = $s_1(j)$ (it includes the user's last
item `v0`) and `pairs[l-2, i, j]` = $s_l(i, j)$."""),
    code("""\
env = br.RankingEnv.paper(seed=1, K=3, L=3, d=3, w_max=2.0)
first, pairs = (np.asarray(a, dtype=float) for a in env.score_tables())
print(env)
print("w =", np.round(np.asarray(env.w), 2))
print("s_1(j):", np.round(first, 2))
for l, p in enumerate(pairs, start=2):
    print(f"s_{l}(i, j):\\n", np.round(p, 2))"""),
    md("""\
## The graph

`graph.env_graph(env)` builds the paper's graph; nodes are `(l, i, j)`, plus a
`source` and a `sink`. We place slot `l` in column `l` and highlight the longest path
(networkx's `dag_longest_path`)."""),
    code("""\
G = graph.env_graph(env)
print(G.number_of_nodes(), "nodes,", G.number_of_edges(), "edges")
path = nx.dag_longest_path(G, weight=graph.SHIFTED)
graph_items = graph.path_items(path)
print("longest path:", path)
print("its list:", graph_items, "weight:", round(graph.path_weight(G, path), 4))"""),
    code("""\
def column(node):
    if node == graph.SOURCE:
        return 0
    if node == graph.SINK:
        return env.L + 1
    return node[0]


def order(node):  # items in order inside a slot
    if isinstance(node, str):
        return (0, 0)
    return (-1 if node[1] == "v0" else node[1], node[2])


# x: the slot (source at 0, sink at L + 1); y: super-arms in order, centred
columns = {}
for node in sorted(G.nodes, key=order):
    columns.setdefault(column(node), []).append(node)
pos = {n: (x, (len(col) - 1) / 2 - r)
       for x, col in columns.items() for r, n in enumerate(col)}


def label(n):
    if isinstance(n, str):
        return n
    return f"v0→{n[2]}" if n[0] == 1 else f"{n[1]}→{n[2]}"


labels = {n: label(n) for n in G.nodes}
on_path = set(zip(path, path[1:]))
edge_colors = ["#d62728" if e in on_path else "0.8" for e in G.edges]
edge_widths = [2.5 if e in on_path else 0.6 for e in G.edges]
node_colors = ["#d62728" if n in path else "#c6dbef" for n in G.nodes]

fig, ax = plt.subplots(figsize=(11, 6.5))
nx.draw_networkx_edges(G, pos, ax=ax, edge_color=edge_colors, width=edge_widths,
                       arrows=True, arrowsize=8, node_size=900)
nx.draw_networkx_nodes(G, pos, ax=ax, node_color=node_colors, node_size=900)
nx.draw_networkx_labels(G, pos, labels=labels, ax=ax, font_size=8)
path_edges = {e: f"{G.edges[e]['weight']:.2f}" for e in on_path}
nx.draw_networkx_edge_labels(G, pos, edge_labels=path_edges, ax=ax, font_size=8,
                             font_color="#d62728")
for l in range(1, env.L + 1):
    ax.text(l, -0.02, f"slot {l}", ha="center", va="top",
            transform=ax.get_xaxis_transform())
ax.set_title("The L-layered graph (K = 3, L = 3); red: the longest path")
ax.axis("off")
plt.show()"""),
    md("""\
Two things to notice. The list repeats item 2: the paper allows repeated items
(`distinct=True` forbids them, exactly). And it does not start with the best item for
slot 1 alone: the first item is chosen for what it does to slot 2."""),
    code("""\
print("best item for slot 1 alone:", int(first.argmax()), "| the path starts with",
      graph_items[0])"""),
    md("""\
## The dynamic programme finds the same list

Forward pass: $V_1(j) = s_1(j)$, $V_l(j) = \\max_i V_{l-1}(i) + s_l(i, j)$, keeping the
arg-max $i$ as a back-pointer; the best list is read backwards from
$\\arg\\max_j V_L(j)$. Written out in NumPy:"""),
    code("""\
V = [first]
back = []
for s in pairs:  # s[i, j] = s_l(i, j)
    total = V[-1][:, None] + s  # (previous i, next j)
    back.append(total.argmax(axis=0))
    V.append(total.max(axis=0))
dp_items = [int(np.argmax(V[-1]))]
for bp in reversed(back):
    dp_items.insert(0, int(bp[dp_items[0]]))
print("value table V_l(j) (rows: slots):\\n", np.round(np.array(V), 3))
print("DP list:", dp_items, "value:", round(float(V[-1].max()), 4))"""),
    md("""\
bayesrank's decoder (`br.best_list`, what `env.best()` and every policy use), the
graph's longest path, the hand-written DP and brute force over all $K^L = 27$ lists
agree:"""),
    code("""\
bl_items, bl_value = br.best_list(first, pairs)
lists = np.array(list(itertools.product(range(env.K), repeat=env.L)))
values = np.asarray(env.expected_reward(lists))
brute = lists[values.argmax()]
print("br.best_list:", np.asarray(bl_items), float(bl_value))
print("graph       :", graph_items)
print("hand DP     :", dp_items)
print("brute force :", brute, float(values.max()))
assert (np.asarray(bl_items) == graph_items).all() and (graph_items == brute).all()
assert list(brute) == dp_items"""),
    md("""\
The DP also makes the trellis view easy to draw: the value $V_l(j)$ of the best
prefix ending in item $j$ at slot $l$, with the back-pointers; the best list in
red."""),
    code("""\
fig, ax = plt.subplots(figsize=(6, 3.5))
Vs = np.array(V)
for l in range(1, env.L):
    for j in range(env.K):
        i = back[l - 1][j]
        ax.plot([l - 1, l], [i, j], color="0.75", lw=1)
ax.plot(range(env.L), dp_items, color="#d62728", lw=2.5, marker="o")
sc = ax.scatter(np.repeat(np.arange(env.L), env.K), np.tile(np.arange(env.K), env.L),
                c=Vs.ravel(), s=350, cmap="viridis", zorder=3)
fig.colorbar(sc, ax=ax, label=r"$V_l(j)$")
ax.set(xticks=range(env.L), xticklabels=[f"slot {l + 1}" for l in range(env.L)],
       yticks=range(env.K), ylabel="item j", title="DP trellis with back-pointers")
plt.show()"""),
    md("""\
## Why it matters: graph search against the DP

The graph grows like $K^3$ edges per layer; the DP does $K^2$ work per slot (and $K$
when the scores separate). Timing both on the paper's generator ($L = 4$):"""),
    code("""\
Ks = [4, 8, 16, 32] if QUICK else [4, 8, 16, 32, 48, 64]
t_graph, t_dp = [], []
for K in Ks:
    e = br.RankingEnv.paper(seed=0, K=K, L=4, d=5, w_max=2.0)
    f, p = (np.asarray(a, dtype=float) for a in e.score_tables())
    g_items, g_val = graph.longest_path(f, p)
    d_items, d_val = br.best_list(f, p)  # also compiles the DP for this shape
    assert np.isclose(g_val, float(d_val), rtol=1e-4)
    # best of 3 timings each
    t_graph.append(min(timeit.repeat(lambda: graph.longest_path(f, p), number=1,
                                     repeat=3)))
    t_dp.append(min(timeit.repeat(lambda: br.best_list(f, p), number=1, repeat=3)))

fig, ax = plt.subplots(figsize=(5.5, 3.5), constrained_layout=True)
ax.loglog(Ks, t_graph, "o-", label="explicit graph (networkx)")
ax.loglog(Ks, t_dp, "s-", label="DP (br.best_list)")
ax.set(xlabel="K items", ylabel="seconds per decode", title="L = 4")
ax.set_xticks(Ks, [str(K) for K in Ks], minor=False)
ax.xaxis.set_minor_locator(plt.NullLocator())
ax.legend(frameon=False)
plt.show()"""),
    md("""\
Every timed pair also returned the same value. The tests (`tests/test_graph.py`,
`tests/test_decode.py`) check the same agreement, with brute force, over many random
instances, masks and repeated-item constraints."""),
]

# --------------------------------------------------------------------------- 06
CALIBRATION = [
    md("""\
# 6. Are the posterior draws calibrated? Simulation-based calibration

**Question.** RankTS is only as good as its posterior draws. bayesrank checks each
posterior against references on a few fixed data sets, but that does not say whether
the draws are right *across the prior*, and it says nothing about the draws the bandit
loop really uses: inside `RankTS(model=BayesGLM(...))` each NUTS chain is warm-started,
advances a few transitions per round on data that keep growing, and re-adapts on a
schedule. Are those draws posterior draws?

**Method: simulation-based calibration** (SBC; Talts et al. 2018, Modrák et al. 2023).
If theta is drawn from the prior, data are simulated from the likelihood given theta,
and M draws are taken from the posterior given the data, then the rank of the true
theta among the M draws is uniform on {0, ..., M}, for every coordinate. Any
systematic error of the sampler (too narrow, too wide, shifted) bends the rank
distribution. We turn the ranks into PIT values u = (rank + U) / (M + 1) and test
uniformity with the **PIT-ECDF simultaneous band** (Säilynoja, Bürkner & Vehtari 2022;
the band ArviZ 1.x draws, checked against `arviz_stats.ecdf_utils` in the tests), one
test per coordinate, combined over the D coordinates of a model by **Bonferroni**:
one p-value per model, so a 1 % level is a 1 % family-wise false-alarm rate.

**The in-loop draws.** For RankTS's warm NUTS there is no "posterior given the data"
to draw from cheaply, so the reference changes: RankTS's own functional core runs a
bandit for T rounds (theta_true from the prior, rewards from the likelihood, lists
from RankTS's argmax decode), and the theta it drew at round t is ranked among draws
of a long **fresh** NUTS chain run on the same t - 1 impressions. If the in-loop draw
is a posterior draw, it is exchangeable with the reference draws and the rank is
uniform. (The fresh-chain sampler is itself calibrated by ordinary SBC below.)

Everything here is `bayesrank.calibration`; `bayesrank calibrate` runs the whole study
and writes NetCDF, figures and a markdown report. This notebook (1) shows the method
live on a small example and (2) reads the full run committed in `docs/calibration/`."""),
    params("""\
# Parameters. QUICK = True: a small live demo (well under a minute on 2 CPU cores).
# QUICK = False: the live demo at 1,000 simulations.
QUICK = True"""),
    code("""\
N_SIMS = 150 if QUICK else 1000  # SBC simulations of the live demo
DRAWS = 39 if QUICK else 99  # posterior draws per simulation (ranks in 0..DRAWS)
FULL_RUN = "../docs/calibration"  # the committed full run"""),
    code("""\
import json
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from IPython.display import Image, Markdown, display

from bayesrank.calibration import pit_from_ranks, run_sbc, uniformity_test
from bayesrank.calibration.generative import Design, gaussian_generative
from bayesrank.calibration.uniformity import band
from bayesrank.posteriors import GaussianLinear"""),
    md("""\
## The method on one model, live

The design: the items, neighbour weights and user vector of
`RankingEnv.paper(seed=0, K=20, L=2, d=5, w_max=1)`; each simulation shows 50 random
lists. `GaussianLinear` is the exact conjugate posterior, so its ranks must be uniform.
The **negative control** is the same model told half the true noise sd: its posterior
is too narrow, the truth falls in the tails too often, and the test must say so."""),
    code("""\
design = Design()
exact = run_sbc(jax.random.key(0), GaussianLinear(noise_scale=1.0), design=design,
                n_obs=50, n_sims=N_SIMS, draws=DRAWS)
control = run_sbc(jax.random.key(1), GaussianLinear(noise_scale=0.5),
                  generative=gaussian_generative(0.0, 1.0, 1.0), design=design,
                  n_obs=50, n_sims=N_SIMS, draws=DRAWS)
tests = {}
for name, res in [("exact", exact), ("told half the noise", control)]:
    tests[name] = uniformity_test(pit_from_ranks(res.ranks, res.M), n_null=2000)
    print(f"{name:22s} ranks {res.ranks.shape}, p = {tests[name].p_value:.3g}")"""),
    code("""\
fig, axes = plt.subplots(1, 2, figsize=(9, 3), sharey=True)
for ax, (name, res) in zip(axes, [("exact", exact), ("told half the noise", control)]):
    u = pit_from_ranks(res.ranks, res.M)
    N, D = u.shape
    z, lo, hi = band(N, 1 - 0.01 / D, n_null=2000)
    ax.fill_between(z, lo - z, hi - z, color="0.85", label="1 % band (Bonferroni)")
    grid = np.linspace(0, 1, 201)
    for j in range(D):
        ax.plot(grid, np.searchsorted(np.sort(u[:, j]), grid, side="right") / N - grid,
                lw=0.7)
    ax.set_title(f"{name}: p = {tests[name].p_value:.3g}")
    ax.set_xlabel("PIT value")
axes[0].set_ylabel("ECDF - uniform")
axes[0].legend(fontsize=7)
fig.tight_layout()"""),
    md("""\
The exact model's ECDF curves (one per coordinate: 2 positions x 5 features) stay
inside the band; the over-confident model's curves leave it (an S shape: too many PIT
values near 0 and 1). That is the whole test; the study below runs it on every
posterior in bayesrank."""),
    md("""\
## The full study

`bayesrank calibrate` (committed output in `docs/calibration/`) runs, per model:
the exact models `GaussianLinear` and `GaussianLinearUnknownNoise` (must pass);
`LaplaceGLM` with the logistic and exp links (an approximation: we report how far it
is, and how that changes with the number of impressions n); `BayesGLM-logistic` with
fresh NUTS chains (must pass within Monte Carlo error); RankTS's in-loop NUTS draws at
rounds 10, 100 and 1,000; and the negative control (must fail)."""),
    code("""\
dt = xr.open_datatree(Path(FULL_RUN) / "calibration.nc", engine="h5netcdf")
settings = json.loads(dt.attrs["settings"])
table = dt.to_dataset()[["kind", "n_simulations", "draws", "thinning", "p_value",
                         "passed"]].to_dataframe()
print(f"N = {settings['n_sims']} simulations (fresh NUTS: {settings['nuts_sims']}, "
      f"in-loop runs: {settings['inloop_runs']}), M = {settings['draws']} draws")
table"""),
    code("""\
display(Image(filename=str(Path(FULL_RUN) / "ecdf.png")))"""),
    md("""\
### How far is the Laplace approximation, by n?

For each n the SBC is rerun with n impressions per simulation; `cov90` is the share of
true thetas inside the central 90 % of the posterior draws (0.90 when calibrated)."""),
    code("""\
by_n = dt["by_n"].to_dataset()
for name in by_n["model_by_n"].values:
    row = by_n.sel(model_by_n=name)
    cells = ", ".join(f"n={int(n)}: p={p:.2g} cov90={c:.3f}" for n, p, c in zip(
        by_n["n_obs"].values, row["p_value_by_n"].values,
        row["coverage90_by_n"].values))
    print(f"{str(name):28s} {cells}")
display(Image(filename=str(Path(FULL_RUN) / "by_n.png")))"""),
    md("""\
### The draws RankTS uses"""),
    code("""\
inloop = [m for m in dt["model"].values if str(m).startswith("RankTS-NUTS-round-")]
for m in inloop:
    a = dt[f"models/{m}"].attrs
    p = float(dt["p_value"].sel(model=m))
    print(f"round {a['round']:5d}: p = {p:.3g}  ({'calibrated' if p >= 0.01 else 'NOT calibrated'} at 1 %), "
          f"chains adapting at the draw: {a['adapting_share']:.0%}")
pw = dt["power"].to_dataset()
print("\\npower of the test at these sizes (share of simulated studies rejected at 1 %):")
for mis, v in zip(pw["misfit"].values, pw["power"].values):
    print(f"  draws distributed as {str(mis):16s} -> {float(v):.2f}")"""),
    md("""\
## What passes, what does not, and why

*The exact models pass** (`GaussianLinear` p = 0.38, `GaussianLinearUnknownNoise`
  p = 0.58 at N = 1,000, M = 99), and the **negative control is flagged** at the
  smallest p-value the null simulation can resolve (0.001): the test has power, and it
  does not cry wolf on exact posteriors. The study runs in float64: in float32 the
  unknown-noise model once came out at p = 0.008 (one coordinate), which float64 runs
  with the same seeds do not reproduce.
* **Fresh-chain NUTS passes** (`BayesGLM-logistic`, 200 simulations, 300 warm-up and
  99 draws thinned by 3: p = 1), so it can serve as the reference for the in-loop draws.
* **The Laplace approximation is fine for clicks and not for small-n counts.** With the
  logistic link no n in {10, 30, 50, 100, 300} is flagged (p >= 0.14) and the coverage
  of central 90 % intervals stays at 0.89. With the exp link (Poisson counts, prior sd
  0.5) the ranks are *not* uniform for n <= 100 (p = 0.001, KS distance about 0.1)
  although the 90 % coverage is right (0.90): the central width is fine and the shape
  is not, consistent with a symmetric Gaussian placed at the mode of a skewed
  posterior (we did not separate shift from skew further). By n = 300 it is no longer
  detected (p = 0.05). Use it for counts with that in mind, or use `BayesGLM(link="exp")`.
* **RankTS's in-loop NUTS draws are calibrated at rounds 10, 100 and 1,000**
  (p = 0.78, 1.0, 0.93; 100 bandit runs, ranks among 99 thinned fresh-chain draws).
  At round 10 every chain is still in its (re-)warm-up, at 100 and 1,000 none is. What
  "calibrated" is worth at N = 100 runs: the same test rejects draws with half the
  posterior sd, 1.5 times the sd, or a mean off by half a posterior sd in 100 % of
  simulated studies, draws off by a quarter sd in 67 %, and draws with 0.75 times the sd
  in 45 %. So warm-started NUTS with the default schedule is fit for Thompson sampling
  up to errors of about a quarter of a posterior sd; smaller ones this study cannot see.
* **Left out:** in-loop draws for other links and for `NumPyroModel` user models, and
  rounds past 1,000 (the buffer then slides only with `overflow="window"`)."""),
]


# --------------------------------------------------------------------------- 07
REAL_ITEMS = [
    md("""\
# 7. Real items: the Open Bandit Dataset

Everything so far used the paper's generator: random unit vectors for items. Here the
items are real: the 80 fashion items of the **Open Bandit Dataset** (ZOZOTOWN; Saito et
al., *Open Bandit Dataset and Pipeline*, NeurIPS 2021 Datasets and Benchmarks), whose
small sample bayesrank vendors (Apache-2.0; see `bayesrank/datasets/data/obd/NOTICE`).
The clicks are simulated (**semi-synthetic**): a click model of Eq. 1 on the real item
features, calibrated to the click rates the dataset's uniform-random log shows.

1. the items and what the log can (and cannot) tell us,
2. the semi-synthetic environment and a check of its click rates,
3. the real-items study at a small scale (five policies, one w_max),
4. the committed full-scale study (`bayesrank study obd`) and how to read it."""),
    params("""\
# Parameters. QUICK = True: one w_max, 200 rounds, 2 runs (under a minute);
# QUICK = False: the full study (3 w_max, 1,500 rounds, 4 runs; about 15 minutes)
QUICK = True"""),
    code("""\
import tempfile
from pathlib import Path

import jax
import numpy as np
from IPython.display import Image, Markdown, display

import bayesrank as br
from bayesrank.studies import obd, obd_report

if QUICK:
    cfg = obd.StudyConfig(w_max=(5.0,), T=200, runs=2)
else:
    cfg = obd.FULL
cfg"""),
    md("""\
## The items

`br.datasets.obd_items(campaign)` returns one row per item: a one-hot block for each of
the three hashed categorical features, then the numeric feature standardised over the
items. `d=` reduces it by PCA (NumPy SVD). Row i is the item with id i."""),
    code("""\
for campaign in br.datasets.CAMPAIGNS:
    V = br.datasets.obd_items(campaign)
    print(f"{campaign:6s} {V.shape[0]:3d} items, {V.shape[1]} features")
V = br.datasets.obd_items("all")
names = br.datasets.obd_feature_names("all")
print(names[0][:40], "...", names[-1])
sv = np.linalg.svd(V - V.mean(0), compute_uv=False) ** 2
share = sv[: cfg.d].sum() / sv.sum()
print(f"first {cfg.d} principal components: {share:.0%} of the variance")"""),
    md("""\
## What the log supports

The uniform-random log has 10,000 rows, each **one (item, position) impression** with a
click indicator. bayesrank keeps only a summary of it (`scripts/obd_vendor.py` derives
it from the `obp` archive)."""),
    code("""\
chk = obd_report.log_checks("all")
for pos in range(3):
    lo, hi = chk["intervals"][pos]
    print(
        f"position {pos + 1}: {chk['clicks'][pos]:2d} clicks / "
        f"{chk['impressions'][pos]} = {chk['rates'][pos]:.2%}  (95% {lo:.2%}-{hi:.2%})"
    )
print("rows per timestamp -> number of timestamps:", chk["rows_per_timestamp"])
print(f"equal rates at the three positions? LR test p = {chk['p_value']:.2f}")"""),
    md("""\
No timestamp carries all three positions, so the shown lists (which item came before
which) cannot be rebuilt: **the neighbour weight w cannot be identified from this
sample**. What it can give is the per-position click rate of a uniformly random list
(and the w = 0 model, whose position rates it cannot even tell apart with 38 clicks).
Those rates are the targets of the simulation below; every w is an assumption."""),
    md("""\
## The semi-synthetic environment

`RankingEnv.semi_synthetic(items, w_max=..., campaign=...)` appends an intercept
column, draws `w_l ~ U(-w_max, w_max)` like the paper's generator and a random score
direction per position (item scores with sd `spread` on the logit scale), and solves
each position's intercept so that a uniformly random list clicks at the log's rates.
We check that by Monte Carlo: random lists, Bernoulli clicks."""),
    code("""\
env = obd.build_env(cfg, max(cfg.w_max))
print(env, "w =", np.round(np.asarray(env.w), 2))
n = 200_000
k1, k2 = jax.random.split(jax.random.key(0))
lists = jax.random.randint(k1, (n, env.L), 0, env.K)
clicks = np.asarray(env.sample(k2, lists))
print("random lists' click rates:", np.round(clicks.mean(0), 4))
print("targets (the log's rates): ", np.round(np.asarray(chk["rates"]), 4))
best, value = env.best()
print(f"best list {np.asarray(best)}: {float(value):.3f} expected clicks, "
      f"{float(value) / clicks.sum(1).mean():.0f}x a random list's")"""),
    md("""\
## The study at a small scale

`run_obd_study` plays every policy of the registry `obd.POLICIES` on the environment of
each `w_max`, with `br.simulate` (common random numbers: every policy sees the same
click noise), and writes the figure, the results (NetCDF) and a report:

* **RankTS-Laplace** and **RankTS-NUTS**: Thompson sampling with a logistic GLM per
  position, its posterior approximated by Laplace (`br.LaplaceGLM`: Newton MAP and
  the Hessian) or sampled by warm NUTS chains (`br.BayesGLM`);
* **RankUCB** (given w) and **GenRankUCB** (learns w): a ridge model of the 0/1
  clicks with a constant width. With a logistic `LaplaceGLM` (GLM-UCB) their width is
  divided by the link's smallest slope `c1`, which is tiny on these features: the
  report prints it, and `scripts/obd_pilot.py` compares the two;
* **Baseline**: ranked bandits, LinUCB per position, blind to the previous item."""),
    code("""\
out = Path(tempfile.mkdtemp())
res = obd.run_obd_study(out, cfg=cfg)
print("seconds per policy and w_max (compilation included):")
res["seconds"].to_pandas().round(1)"""),
    md("""\
## What it shows"""),
    code("""\
display(Image(filename=str(out / "regret.png")))
text = (out / "report.md").read_text()
display(Markdown(text.split("## What it shows")[1].split("## Reproduce")[0]))"""),
    md("""\
## The full study

The committed full-scale run (`bayesrank study obd`: w_max 0, 1 and 5, 4 runs of
1,500 rounds; its report is `docs/studies/obd/report.md`) is read back below: the
share of the best list's expected clicks that each policy's lists earn over the last
150 rounds."""),
    code("""\
full = Path("..") / "docs" / "studies" / "obd" / "results.nc"
if full.exists():
    import xarray as xr

    full_res = xr.load_dataset(full)
    end = obd_report.end_regret(full_res).mean("run")
    display((1 - end / full_res["best_value"]).to_pandas().round(2))
else:
    print("not found:", full)"""),
    md("""\
How to read it:

* **w_max = 5** (a strong neighbour effect): the best list's clicks come mostly from
  what is placed *before* positions 2 and 3. The baseline, which models each position
  on its own, stays far from it; the four policies that model the previous item get
  most of the way within a few hundred rounds.
* **w_max = 1**: the effect is smaller and so is the gap; GenRankUCB, which has to
  learn w from the clicks, is barely ahead of the baseline after 1,500 rounds.
* **w = 0** (the only model the log can speak to): the baseline is the right model
  and RankUCB coincides with it run for run. At click rates near 0.4 % there are few
  clicks to learn from, and no policy is near the best list after 1,500 rounds.
* RankTS-NUTS ends lowest in every panel; RankTS-Laplace, which approximates the same
  kind of posterior by a Gaussian at the MAP (and puts a tighter prior on the
  intercept), is behind it. RankUCB and GenRankUCB run a ridge model of the clicks:
  with a logistic model their width is divided by a near-zero `c1` (printed in the
  report) and they would keep exploring far past these horizons.

None of this tells whether ZOZOTOWN's users have a neighbour effect: the log cannot
identify w."""),
]


UNKNOWN_W = [
    md("""\
# 8. When w is unknown: learn it with the posterior

`RankTS(w=...)` in the paper needs the true dependency weights w, the strength with
which the item shown just before shapes the reward at each position. No real system
knows them. bayesrank treats w as what it is, an unknown with a prior, and learns it
jointly with theta:

```python
import numpyro.distributions as dist
policy = br.RankTS(items=V, L=4, w=dist.Normal(0.0, 5.0))   # a prior instead of an array
```

With the identity link and a conjugate model, theta integrates out in closed form, so
each round draws w_l from its exact one-dimensional marginal (a slice sampler on the
collapsed density) and then theta | w_l exactly. `policy.w_hat` is the posterior mean of
w (exact quadrature) and `policy.posterior(l)` holds a `w` variable for ArviZ.

This notebook learns w, watches its posterior settle, compares the regret with the
oracle that knows w and with GenRankTS (Thompson sampling over the paper's 2d
relaxation), runs ArviZ diagnostics and looks at the effect of the prior on w."""),
    params("""\
QUICK = False  # the test suite injects QUICK = True"""),
    code("""\
import jax
import matplotlib.pyplot as plt
import numpy as np
import numpyro.distributions as dist

import bayesrank as br

T = 100 if QUICK else 1500
RUNS = 2 if QUICK else 10
env = br.RankingEnv.paper(seed=3, K=50, L=4, d=6, w_max=6.0)
print("true w:", np.round(env.w, 2), "(w_1 multiplies v0 = 0: nothing can be learnt)")"""),
    md("""\
## Learn w, and watch its posterior

A plain `select()` / `update()` loop. At a few rounds we record the posterior mean of
every w_l and its 90 % interval (`LatentW.w_quantiles`)."""),
    code("""\
policy = br.RankTS(items=env.items, L=env.L, w=dist.Normal(0.0, 5.0), seed=0)
checkpoints = np.unique(np.geomspace(1, T, 12).astype(int))
track = []
for t in range(1, T + 1):
    items = policy.select()
    policy.update(items, env.sample(jax.random.key(t), items))
    if t in checkpoints:
        lo, hi = np.asarray(policy.model.w_quantiles(policy.state.model, (0.05, 0.95)))
        track.append((t, policy.w_hat, lo, hi))

fig, axes = plt.subplots(1, env.L, figsize=(13, 3), sharex=True)
for l, ax in enumerate(axes):
    ts = [c[0] for c in track]
    ax.fill_between(ts, [c[2][l] for c in track], [c[3][l] for c in track], alpha=0.3,
                    label="90 % interval")
    ax.plot(ts, [c[1][l] for c in track], label="posterior mean")
    ax.axhline(env.w[l], color="k", ls="--", label="true w")
    ax.set_xscale("log"); ax.set_title(f"w_{l + 1}"); ax.set_xlabel("round")
axes[0].legend(fontsize=8)
plt.tight_layout()
print("w_hat:", np.round(policy.w_hat, 2))"""),
    md("""\
## Regret: learning w against knowing it

`br.simulate` runs every policy on the same environment with common random numbers
(runs vmapped, rounds scanned). The oracle is given the true w."""),
    code("""\
ds = br.simulate(env, {
    "RankTS (known w)": lambda s: br.RankTS(items=env.items, w=env.w, seed=s),
    "RankTS (latent w)": lambda s: br.RankTS(items=env.items, L=env.L,
                                             w=dist.Normal(0.0, 5.0), seed=s),
    "GenRankTS": lambda s: br.GenRankTS(env.items, env.L, seed=s),
}, T=T, runs=RUNS, progress=False)
cum = ds["regret"].sum("round")
for name in ds["policy"].values:
    c = cum.sel(policy=name).values
    print(f"{name:20s} cumulative regret {c.mean():7.1f} +- {c.std(ddof=1) / np.sqrt(len(c)):.1f}")
from bayesrank import plots
plots.regret_curves(ds, window=max(1, T // 50));"""),
    md("""\
## Diagnostics with ArviZ

`posterior(l)` returns an `xarray.DataTree` with exact joint draws of (theta, w) at
position l: `arviz.summary` reports the posterior of w with its effective sample size
and R-hat (exact i.i.d. draws: R-hat is 1 and the ESS near the number of draws)."""),
    code("""\
import arviz as az

dt = policy.posterior(2, draws=500, chains=4)
print(az.summary(dt, var_names=["w"]))
w_draws = dt["posterior"]["w"].values.ravel()
plt.figure(figsize=(5, 3))
plt.hist(w_draws, bins=40, density=True, alpha=0.7)
plt.axvline(env.w[2], color="k", ls="--", label="true w_3")
plt.xlabel("w_3"); plt.legend();"""),
    md("""\
## The effect of the prior on w

Three priors on the same data: a tight Normal(0, 1) that pulls w towards 0, the
default Normal(0, 5), and a heavy-tailed Cauchy(0, 5). Early on the prior matters;
as rounds accumulate the posteriors agree wherever the lists shown identify w."""),
    code("""\
priors = {"Normal(0, 1)": dist.Normal(0.0, 1.0), "Normal(0, 5)": dist.Normal(0.0, 5.0),
          "Cauchy(0, 5)": dist.Cauchy(0.0, 5.0)}
items_log, rewards_log = policy.history()
early = 20
for name, prior in priors.items():
    p = br.RankTS(items=env.items, L=env.L, w=prior, seed=0)
    for upto in ((early,) if QUICK else (early, len(items_log))):
        start = 0 if upto == early else early
        p.update(items_log[start:upto], rewards_log[start:upto])  # warm start from the log
        sd = np.asarray(p.model.w_sd(p.state.model))
        print(f"{name:13s} after {upto:4d} rounds: w_hat {np.round(p.w_hat[1:], 2)}, "
              f"sd {np.round(sd[1:], 2)}")"""),
    md("""\
## Clicks: unknown w under a logistic link

With Bernoulli rewards the posterior over (theta, w) is not conjugate. Give RankTS a
`LaplaceGLM` and a prior on w and it builds a `LatentLaplace`: the Laplace
approximation of the likelihood in the paper's 2d relaxation phi = (theta, w theta),
where the log-likelihood is concave, then the same exact collapse of theta and draw of
w as above. (`BayesGLM` instead gives a joint NUTS posterior over (theta, w);
`bayesrank calibrate` checks the Laplace form against the alternative, a Gaussian at
the joint MAP, which it flags.)"""),
    code("""\
clicks = br.RankingEnv.paper(seed=3, K=50, L=4, d=6, w_max=6.0, link="logistic")
glm = br.RankTS(model=br.LaplaceGLM("logistic", n_max=T), items=clicks.items,
                L=clicks.L, w=dist.Normal(0.0, 5.0), seed=0)
for t in range(T):
    items = glm.select()
    glm.update(items, clicks.sample(jax.random.key(10_000 + t), items))
print(type(glm.model).__name__, "true w:", np.round(clicks.w, 2))
lo, hi = np.asarray(glm.model.w_quantiles(glm.state.model, (0.05, 0.95)), float)
for l in range(clicks.L):
    print(f"w_{l + 1}: posterior mean {glm.w_hat[l]:+.2f}, 90 % interval "
          f"[{lo[l]:+.2f}, {hi[l]:+.2f}], true {float(clicks.w[l]):+.2f}")"""),
    md("""\
Clicks carry less information than Gaussian rewards, so the intervals stay wide for
longer. Inside the bandit loop they can also miss more often than 1 time in 10: once
Thompson sampling settles on a few lists, the item before each position stops varying
(the study in `docs/unknown-w.md` measures this coverage over rounds)."""),
]


# --------------------------------------------------------------------------- 09
EVALUATE = [
    md("""\
# 9. Evaluate before you deploy: off-policy evaluation from a log

You run a ranking system now, and it logs what it shows: the lists, the reward at
every position, and the probability with which it chose each list. You have
candidates to replace it (here RankTS and RankUCB, fitted on that log). Before any
user sees them, **off-policy evaluation** (OPE) asks: what would each candidate have
earned on the requests in the log? It reweights the logged rewards by how much more
(or less) often the candidate would have shown what was shown.

This notebook works in a simulated world (`br.RankingEnv`), so every estimate can be
checked against the true value:

1. log the system you run now: an epsilon-greedy logger around a fixed list;
2. fit RankTS and RankUCB from the log with `policy.fit(log)`;
3. evaluate RankTS (frozen, its propensities estimated from posterior draws),
   RankUCB and the logger itself with every estimator in `br.ope.ESTIMATORS`,
   with intervals;
4. compare with the truth, see which estimators to trust for this reward model and
   why, and choose a policy with the intervals."""),
    params("""\
QUICK = False  # the test suite injects QUICK = True"""),
    code("""\
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

import bayesrank as br

N_FIT = 1000  # rounds of the log the candidates learn from
N = 20_000 if QUICK else 200_000  # rounds of the log that evaluates them
N_DRAWS = 500 if QUICK else 2000  # RankTS posterior draws per distinct v0
N_BOOT = 200 if QUICK else 1000  # bootstrap replicates
EPS = 0.25  # the share of rounds the current system explores
print("estimators:", list(br.ope.ESTIMATORS))"""),
    md("""\
## The world and the system you run now

Eight items, four positions, and a strong neighbour effect: the reward at position l
is $\\langle \\theta^l, v_{a^l} + w_l v_{a^{l-1}} \\rangle$ plus noise (Eq. 1 of the
paper). The current system ranks each position on its own, as if $w = 0$ (the
classic ranked-bandits view), and explores: with probability `EPS` it shows a
uniformly random list instead. `EpsilonGreedyLogger` knows its exact propensities
of every kind (the whole list, each position, each adjacent pair, each prefix), and
`br.ope.collect` writes them into the log.

Two logs of the same system: last week's (`N_FIT` rounds), which the candidates
learn from, and this week's (`N` rounds), which evaluates them. As in supervised
learning, a policy evaluated on the rounds it learned from has choices correlated
with those rounds' noise, which can flatter it."""),
    code("""\
env = br.RankingEnv.paper(seed=1, K=8, L=4, d=5, w_max=3.0)
K, L = env.K, env.L
best, best_value = env.best()
current = np.asarray(
    br.RankingEnv(items=env.items, theta=env.theta, w=np.zeros(L)).best()[0])
logger = br.ope.EpsilonGreedyLogger(lambda v0: current, K, L, epsilon=EPS)
train = br.ope.collect(env, logger, N_FIT, seed=0)
test = br.ope.collect(env, logger, N, seed=1)
print("true w:", np.round(env.w, 2))
print(f"best list {best}: {float(best_value):.3f} | the current system's list "
      f"{current}: {float(env.expected_reward(current)):.3f}")
test"""),
    md("""\
## Fit the candidates from the log

`policy.fit(log)` is a warm start: it equals replaying `update` row by row, in one
compiled scan. After a thousand rounds RankTS's posterior still spreads over several
lists, and RankUCB's list is the optimistic one of Lemma 1's width. These are the
lists the policies would show now, and what the evaluation judges: the candidates
are evaluated frozen, as they stand."""),
    code("""\
ts = br.RankTS(items=env.items, w=env.w, seed=0)
ucb = br.RankUCB(items=env.items, w=env.w)
ts.fit(train)
ucb.fit(train)
draws = ts.select_batch(n=N_DRAWS)
lists, counts = np.unique(draws, axis=0, return_counts=True)
print(f"RankTS: {len(lists)} distinct lists in {N_DRAWS} posterior draws, the most "
      f"frequent {lists[counts.argmax()]} ({counts.max() / N_DRAWS:.0%})")
ucb_list = ucb.select_batch(n=1)[0]  # deterministic: the list for every request
print("RankUCB's list:", ucb_list)"""),
    md("""\
## Evaluate offline

`br.ope.evaluate(log, target)` needs only `target.select_batch(v0=...)`. RankUCB is
deterministic: its probability of a logged list is 0 or 1. RankTS is random:
evaluate draws `n_draws` lists per distinct v0 from its posterior and uses their
frequencies as its propensities. `stderr` is the sampling error of the log (the
interval `ci_low`..`ci_high` is the estimate +- 1.96 `stderr`), `mc_stderr` the
Monte Carlo error of the draws. Where it is not small beside `stderr` (the logger's
widely spread lists, below), draw more or add the two, as the check of the truth
does.
The target is **frozen**: evaluate never calls `update` and restores its state and
round counter.

The logger can be evaluated too, through a small adapter: on its own log the answer
is known (the log's average total reward), a check of the machinery. Its lists are
random, so it gets more draws."""),
    code("""\
class LoggerAsTarget:
    \"\"\"The logger as a target: ``select_batch`` samples its lists.\"\"\"

    def __init__(self, logger, seed=0):
        self.logger, self.rng = logger, np.random.default_rng(seed)

    def select_batch(self, v0=None, *, n=None):
        return self.logger.sample(self.rng, v0)


targets = {"RankTS": ts, "RankUCB": ucb, "logger": LoggerAsTarget(logger)}
draws_of = {"RankTS": N_DRAWS, "RankUCB": N_DRAWS, "logger": 20 * N_DRAWS}


def evaluate_all(**kwargs):
    \"\"\"br.ope.evaluate for every target, stacked along a "policy" dimension.\"\"\"
    return xr.concat(
        [br.ope.evaluate(test, t, n_draws=draws_of[name], items=env.items, **kwargs)
         for name, t in targets.items()],
        dim=xr.DataArray(list(targets), dims="policy", name="policy"),
    )


t_before = ts.t
res = evaluate_all()
assert ts.t == t_before  # frozen
res.to_dataframe().round(3)"""),
    md("""\
## The truth

The simulator knows every policy's expected total reward per round. RankTS's is an
average over its posterior draws (`br.ope.true_value`), RankUCB's that of its one
list; the logger's is exact: its list with probability 1 - `EPS`, else the average
over all $K^L$ lists."""),
    code("""\
every = np.stack(np.meshgrid(*[np.arange(K)] * L, indexing="ij"), -1).reshape(-1, L)
uniform_value = float(np.mean(env.expected_reward(every)))
truth = xr.DataArray(
    [br.ope.true_value(env, ts, n_draws=N_DRAWS),
     br.ope.true_value(env, ucb, n_draws=N_DRAWS),
     (1 - EPS) * float(env.expected_reward(current)) + EPS * uniform_value],
    coords={"policy": list(targets)}, dims="policy",
)
on_policy = test["rewards"].sum("position")
print("true values:", truth.round(3).to_series().to_dict())
print(f"the log's own average total reward (on-policy): {float(on_policy.mean()):.3f} "
      f"+- {float(on_policy.std() / np.sqrt(on_policy.size)):.3f}")
# the error of an estimate: the log's sampling error and the draws' Monte Carlo error
z = (res["estimate"] - truth) / np.hypot(res["stderr"], res["mc_stderr"])
covers = abs(z) <= 1.96
print("\\ndoes estimate +- 1.96 error cover the true value? (z = (estimate - truth) / "
      "error)")
(covers.to_pandas().T.replace({True: "yes", False: "NO"}) + " (z = "
 + z.round(1).to_pandas().T.astype(str) + ")")"""),
    code("""\
def forest(ax, r, true, title, span=2.5):
    \"\"\"Estimates with 95 % intervals per estimator; the dashed line is the truth.\"\"\"
    names = list(r["estimator"].values)
    y = np.arange(len(names))[::-1]
    est, lo, hi = (r[v].values for v in ("estimate", "ci_low", "ci_high"))
    left, right = true - span, true + span
    ax.hlines(y, np.maximum(lo, left), np.minimum(hi, right), lw=2, color="C0")
    inside = (est >= left) & (est <= right)
    ax.plot(est[inside], y[inside], "o", color="C0")
    for yi, e in zip(y[~inside], est[~inside]):  # off the scale: print the value
        ax.annotate(f"{e:.1f} >" if e > right else f"< {e:.1f}",
                    (right if e > right else left, yi),
                    ha="right" if e > right else "left", va="bottom", fontsize=8)
    ax.axvline(true, color="k", ls="--", lw=1)
    ax.set(xlim=(left, right), title=title, xlabel="expected total reward per round")
    ax.set_yticks(y, names)


fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True, constrained_layout=True)
for ax, name in zip(axes, targets):
    true = float(truth.sel(policy=name))
    forest(ax, res.sel(policy=name), true, f"{name} (true {true:.2f})")
plt.show()"""),
    md("""\
## Which estimator to trust, and why

Each IPS estimator reweights the logged reward at position l by the ratio of the
target's to the logger's probability of some **event** of the logged list; it is
unbiased when the reward at l depends on nothing beyond that event (and the logger
gives the event a positive probability):

| estimator | event reweighted | largest weight | unbiased when r^l depends on |
|---|---|---|---|
| `position_ips` | the item at l | K / eps | a^l alone (w_l = 0) |
| `pair_ips` | the items at l-1 and l | K^2 / eps | (a^{l-1}, a^l): **Eq. 1** |
| `cascade_ips` | the prefix a^1..a^l | K^l / eps | the prefix |
| `list_ips` | the whole list | K^L / eps | anything in the list |

The paper's reward model is exactly pairwise: position l sees its own item and the
one before it. **The pair is the smallest event that makes IPS unbiased for this
model**, so pair IPS pays the smallest weights for it. Larger events (a prefix, the
whole list) are still unbiased but rarer: the target's whole list is almost never
among the logged ones, so `list_ips` rests on a handful of rounds with enormous
weights (or on none: then it reports 0 with a stderr of 0, a confidently wrong
answer). `cascade_ips` degrades position by position in the same way.

**Position IPS is biased** as soon as w_l is not 0 and the target puts a different
item before position l than the logger did: it credits the target's item at l with
the rewards that item earned after the *logger's* previous item. Here the logger
mostly shows its own list, so position IPS reports the value of the target's items
in the logger's neighbourhoods: far from the truth, with a small stderr, the worst
combination.

Two estimators model the reward. `dm` (the direct method) fits Eq. 1's pair
features on the log and averages its predictions over the target's lists; its
stderr ignores the model's own error, so it is only as good as the model (here the
model is right). `pair_dr` is pair IPS with that model as a control variate:
unbiased whatever the model's error (given exact propensities), with a smaller
variance when the model is good.

The weights behind these words, on the evaluation log for RankUCB's list:"""),
    code("""\
agree = test["lists"].values == ucb_list
events = {
    "position_ips": (agree, test["pscore_position"].values),
    "pair_ips": (np.c_[agree[:, :1], agree[:, 1:] & agree[:, :-1]],
                 test["pscore_pair"].values),
    "cascade_ips": (np.logical_and.accumulate(agree, axis=1),
                    test["pscore_cascade"].values),
    "list_ips": (agree.all(1, keepdims=True), test["pscore_list"].values[:, None]),
}
for name, (hit, p) in events.items():
    print(f"{name:13s} rounds with a nonzero weight per position: "
          f"{hit.sum(0)}, largest weight {(hit / p).max():,.0f}")"""),
    md("""\
### When position IPS is right

The same items and thetas without the neighbour effect (w = 0): the reward at l
depends on the item at l alone, position IPS is unbiased, and its weights are the
smallest of all. Pair IPS is still unbiased, with a wider interval."""),
    code("""\
env0 = br.RankingEnv(items=env.items, theta=env.theta, w=np.zeros(L))
log0 = br.ope.collect(env0, logger, N, seed=2)


class FixedList:
    \"\"\"A deterministic target that shows one list to every request.\"\"\"

    def __init__(self, lst):
        self.lst = np.asarray(lst)

    def select_batch(self, v0=None, *, n=None):
        return np.tile(self.lst, (np.shape(v0)[0], 1))


r0 = br.ope.evaluate(log0, FixedList(ucb_list),
                     estimators=("position_ips", "pair_ips", "list_ips"))
print(f"w = 0: true value of {ucb_list}: {float(env0.expected_reward(ucb_list)):.3f}")
r0[["estimate", "stderr", "ci_low", "ci_high"]].to_dataframe().round(3)"""),
    md("""\
## Choose a policy with the intervals

Compare the candidates with an estimator you trust, and decide on the ends of the
intervals: deploy a candidate only if its interval lies above the current system's.
We decide with `pair_dr` (pair IPS's guarantee, a narrower interval) and show pair
IPS beside it. The normal interval assumes a nearly Gaussian estimate; IPS estimates
that rest on rare, heavily weighted rounds are skewed, so we also ask for
percentile-bootstrap intervals (`ci="bootstrap"`: the evaluation rounds
resampled)."""),
    code("""\
shown = ("pair_ips", "pair_dr")
boot = evaluate_all(estimators=shown, ci="bootstrap", n_boot=N_BOOT, seed=0)
fig, ax = plt.subplots(figsize=(7, 3.2), constrained_layout=True)
rows = np.arange(len(targets))[::-1]
for k, (est, (r, how)) in enumerate(
        (e, x) for e in shown for x in ((res, "normal"), (boot, "bootstrap"))):
    rr = r.sel(estimator=est)
    ax.errorbar(rr["estimate"], rows + 0.15 * (k - 1.5),
                xerr=[rr["estimate"] - rr["ci_low"], rr["ci_high"] - rr["estimate"]],
                fmt="o", ms=4, capsize=2, color=f"C{k}", label=f"{est}, {how}")
ax.plot(truth, rows, "kx", ms=10, label="true value")
ax.set_yticks(rows, list(targets))
ax.set(xlabel="expected total reward per round",
       title="95 % intervals, normal and bootstrap")
ax.legend(fontsize=7, loc="lower right")
plt.show()

pick = res.sel(estimator="pair_dr")
lower = pick["ci_low"].drop_sel(policy="logger")
choice = str(lower.idxmax("policy").item())
bar = float(pick["ci_high"].sel(policy="logger"))
print(f"pair_dr: {choice} has the highest lower bound, "
      f"{float(lower.sel(policy=choice)):.3f}; the current system's upper bound is "
      f"{bar:.3f}")
print("deploy:", choice if float(lower.sel(policy=choice)) > bar
      else "nothing yet (the intervals overlap)")
print(f"true values: {choice} {float(truth.sel(policy=choice)):.3f}, current system "
      f"{float(truth.sel(policy='logger')):.3f}")"""),
    md("""\
What to take away:

* With a neighbour effect, only the estimators whose event covers the pair
  (a^{l-1}, a^l) are unbiased; of those, pair IPS has the smallest weights, and
  pair DR narrows its interval further. Position IPS gives tight intervals around
  the wrong number.
* `list_ips` is unbiased in theory and of little use in practice for lists of 4 out
  of 8 items: a log rarely holds the target's whole list.
* The intervals say whether the log can tell the candidates apart. Both candidates
  clear the current system; at the quick scale the intervals of RankTS and RankUCB
  overlap, and with the full log (`QUICK = False`, ten times the rounds) they
  separate. RankUCB trails because its list is an optimistic guess, not its best
  estimate.
* OPE needs the logger's propensities, and exploration: every pair a candidate
  might show must have a positive probability in the log. The exploration share
  `EPS` buys that, at the price of the rounds it explores.
* Before deploying, let the chosen policy learn from the evaluation log as well
  (`ts.fit(test)`)."""),
]

NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_custom_numpyro_model.ipynb": CUSTOM,
    "03_reproducing_the_paper.ipynb": PAPER,
    "04_prior_sensitivity.ipynb": SENSITIVITY,
    "05_layered_graph.ipynb": GRAPH,
    "06_calibration.ipynb": CALIBRATION,
    "07_real_items.ipynb": REAL_ITEMS,
    "08_unknown_w.ipynb": UNKNOWN_W,
    "09_evaluate_before_deploy.ipynb": EVALUATE,
}


def build(cells) -> nbformat.NotebookNode:
    nb = new_notebook(metadata=KERNEL)
    for kind, src in cells:
        if kind == "md":
            nb.cells.append(new_markdown_cell(src))
        else:
            cell = new_code_cell(src)
            if kind == "params":
                cell.metadata["tags"] = ["parameters"]
            nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    nbformat.validate(nb)
    return nb


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        nbformat.write(build(cells), HERE / name)
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
