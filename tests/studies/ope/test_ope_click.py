"""``bayesrank study ope --click-models``: the estimators' bias under click models.

The truths and the estimators' exact limits are checked against a brute force in
plain NumPy that walks the user's story outcome by outcome (every combination of
the per-position coin flips, with its probability), against the environments' own
samplers, and against the library's estimators run on every list."""

import itertools
import json

import numpy as np
import pytest
import xarray as xr

import bayesrank as br
from bayesrank.cli import main
from bayesrank.studies.ope import click
from bayesrank.studies.ope import click_report
from bayesrank.studies.ope import config as ope_config
from bayesrank.studies.ope.study import cell_seed, simulate_logs

#: tiny: K^L = 64 lists, a few short logs
TINY = click.ClickStudyConfig(K=4, L=3, n=(200, 400), logs=3, model_max_n=200)


# ------------------------------------------------------------ independent reference
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def params(name, cfg):
    """The model's parameters recomputed in plain NumPy from the config."""
    base = br.RankingEnv.paper(seed=cfg.env_seed, K=cfg.K, L=cfg.L, d=cfg.d,
                               w_max=cfg.w_max)
    V = np.asarray(base.items, float)
    th = cfg.scale * np.asarray(base.theta, float)[0]
    th[-1] += cfg.offset
    return {"A": _sigmoid(V @ th), "V": V, "theta": th, "w": np.asarray(base.w, float),
            "s": np.random.default_rng([cfg.env_seed, 1]).uniform(0.2, 0.9, cfg.K)}


def brute(name, cfg, lst):
    """(expected observed clicks per position (L,), value) of one list, by walking
    every outcome of the user's coin flips. Per position three flips: click (or
    attractive), and two for what happens next (DCM: go on after a click; DBN:
    satisfied, go on; PBM: examined)."""
    P, L = params(name, cfg), len(lst)
    if name.startswith("eq1"):
        prev, p = np.zeros(P["V"].shape[1]), np.zeros(L)
        for l, a in enumerate(lst):
            p[l] = _sigmoid(P["theta"] @ (P["V"][a] + P["w"][l] * prev))
            prev = P["V"][a]
    else:
        p = P["A"][list(lst)]
    clicks, value = np.zeros(L), 0.0
    for flips in itertools.product((0, 1), repeat=3 * L):
        f = np.reshape(flips, (L, 3))
        prob, seen, satisfied, stopped = 1.0, np.zeros(L), 0.0, False
        for l, a in enumerate(lst):
            c, x, y = f[l]
            q = {  # P(second flip), P(third flip) at this position
                "eq1": (1, 1), "eq1_cascade": (1, 1), "cascade": (1, 1),
                "pbm": (1.0 / (l + 1), 1),
                "dcm": (cfg.continuation, 1),
                "dbn": (P["s"][a], cfg.gamma)}[name]
            prob *= (p[l] if c else 1 - p[l]) * (q[0] if x else 1 - q[0]) * (
                q[1] if y else 1 - q[1])
            if stopped:
                continue
            if name == "pbm":
                seen[l] = c * x  # examined (x) and attracted (c)
            else:
                seen[l] = c
            if name in ("eq1_cascade", "cascade") and c:
                stopped = True
            elif name == "dcm" and c and not x:
                stopped, satisfied = True, 1.0
            elif name == "dbn":
                if c and x:
                    stopped, satisfied = True, 1.0
                elif not y:
                    stopped = True
        clicks += prob * seen
        if name in ("dcm", "dbn"):
            value += prob * satisfied
    if name not in ("dcm", "dbn"):
        value = clicks.sum() if name in ("eq1", "pbm") else 1 - np.prod(1 - p)
    return clicks, value


def plain_list_probs(logger, lists, cfg):
    K, L = cfg.K, cfg.L
    p = np.full(len(lists), float(K) ** -L)
    if logger == "epsilon_greedy":
        base = np.argsort(-params("pbm", cfg)["A"], kind="stable")[:L]
        p = cfg.epsilon * p + (1 - cfg.epsilon) * (lists == base).all(axis=1)
    return p


# ----------------------------------------------------------------- the truths
@pytest.mark.parametrize("name", list(click.CLICK_ENVS))
def test_observed_click_means_and_value_equal_brute_force(name):
    env = click.build_click_env(name, TINY)
    rng = np.random.default_rng(1)
    lists = np.vstack([rng.integers(0, TINY.K, (6, TINY.L)),
                       np.asarray(env.best(distinct=True)[0])])
    got = click.observed_click_means(env, lists)
    for lst, row in zip(lists, got):
        clicks, value = brute(name, TINY, lst)
        np.testing.assert_allclose(row, clicks, rtol=2e-6, atol=1e-7)
        assert float(env.expected_reward(lst)) == pytest.approx(value, rel=2e-6)
        if name not in ("dcm", "dbn"):  # value = expected clicks
            assert row.sum() == pytest.approx(value, rel=2e-6)


@pytest.mark.parametrize("name", list(click.CLICK_ENVS))
def test_observed_click_means_equal_the_samplers_average(name):
    """The truth is what env.sample's clicks average to (NaN counted as 0)."""
    import jax

    env = click.build_click_env(name, TINY)
    lst = np.array([2, 0, 1])
    m = 20_000
    draws = np.nan_to_num(np.asarray(env.sample(jax.random.key(3),
                                                np.tile(lst, (m, 1))), float))
    mean, se = draws.mean(0), draws.std(0, ddof=1) / np.sqrt(m)
    expect = click.observed_click_means(env, lst)
    assert np.all(np.abs(mean - expect) <= 4.5 * se + 1e-9), (mean, expect, se)


@pytest.mark.parametrize("logger", list(click.CLICK_LOGGERS))
@pytest.mark.parametrize("name", list(click.CLICK_ENVS))
def test_ips_limits_equal_plain_enumeration(name, logger):
    env = click.build_click_env(name, TINY)
    lg = click.build_click_logger(logger, TINY)
    target = np.asarray(env.best(distinct=True)[0])
    lists = np.array(list(itertools.product(range(TINY.K), repeat=TINY.L)))
    p = plain_list_probs(logger, lists, TINY)
    assert p.sum() == pytest.approx(1.0)
    m = np.array([brute(name, TINY, a)[0] for a in lists])
    same = lists == target
    events = {"position": same, "pair": same & np.c_[np.ones(len(lists), bool),
                                                      same[:, :-1]],
              "cascade": np.logical_and.accumulate(same, axis=1)}
    # the logger's event probabilities, by summing p over the enumerated lists
    expect = {}
    for ev, hit in events.items():
        w = np.zeros(lists.shape)
        for l in range(TINY.L):
            key = lists[:, : l + 1] if ev == "cascade" else (
                lists[:, l:l + 1] if ev == "position" or l == 0 else lists[:, l - 1:l + 1])
            _, inv = np.unique(key, axis=0, return_inverse=True)
            marg = np.bincount(inv.ravel(), weights=p)[inv.ravel()]
            w[:, l] = hit[:, l] / marg
        expect[f"{ev}_ips"] = float(p @ (w * m).sum(1))
    full = same.all(1)
    expect["list_ips"] = float(p[full] @ (m[full].sum(1) / p[full]))
    got = click.ips_limits(env, lg, target)
    truth = brute(name, TINY, target)[0].sum()
    for k in click.IPS:
        assert got[k] == pytest.approx(expect[k], rel=1e-5, abs=1e-7), k
    for k in ("list_ips", "cascade_ips"):  # unbiased under every model here
        assert got[k] == pytest.approx(truth, rel=1e-5), k
    if name in ("eq1", "pbm"):  # pairwise rewards: pair IPS unbiased
        assert got["pair_ips"] == pytest.approx(truth, rel=1e-5)
    if name == "cascade" and logger == "uniform":  # the headline, on this instance
        assert got["pair_ips"] > truth * 1.01


def test_ips_limit_equals_the_library_estimator_on_every_list():
    """Under the uniform logger every list is equally likely, so E[estimator] is the
    library's estimator run on a log holding every list once, with its expected
    clicks as rewards."""
    env = click.build_click_env("cascade", TINY)
    lg = click.build_click_logger("uniform", TINY)
    target = np.asarray(env.best(distinct=True)[0])
    lists = click.every_list(TINY.K, TINY.L)
    m = click.observed_click_means(env, lists)
    ps = lg.propensities(lists, np.zeros((len(lists), 1)))
    same = (lists == target).astype(float)
    pair = same.copy()
    pair[:, 1:] *= same[:, :-1]
    lim = click.ips_limits(env, lg, target)
    assert float(br.ope.pair_ips(m, pair, ps["pscore_pair"]).estimate) == (
        pytest.approx(lim["pair_ips"], rel=1e-9))
    assert float(br.ope.position_ips(m, same, ps["pscore_position"]).estimate) == (
        pytest.approx(lim["position_ips"], rel=1e-9))


# ---------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """``bayesrank study ope --click-models --quick`` through the CLI, TINY scale."""
    out = tmp_path_factory.mktemp("ope-click")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(click, "CLICK_QUICK", TINY)
        assert main(["study", "ope", "--click-models", "--quick", "--out",
                     str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def res(run_dir):
    return xr.load_dataset(run_dir / "results.nc")


def test_study_writes_its_outputs_with_brute_force_truths(run_dir, res):
    png = (run_dir / "bias.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    labels = [v.label for v in ope_config.estimator_variants()]
    assert res["estimate"].dims == ("env", "logger", "n", "log", "estimator")
    assert res["estimate"].shape == (6, 2, 2, TINY.logs, len(labels))
    for name in click.CLICK_ENVS:
        target = res["target_list"].sel(env=name).values
        clicks, value = brute(name, TINY, target)
        assert float(res["click_truth"].sel(env=name)) == pytest.approx(
            clicks.sum(), rel=2e-6)
        assert float(res["value"].sel(env=name)) == pytest.approx(value, rel=2e-6)
    v = {x.label: x for x in ope_config.estimator_variants()}
    for lab in labels:
        x = res["estimate"].sel(estimator=lab)
        ran = x.sel(n=200) if v[lab].model else x
        assert np.isfinite(ran.values).all(), lab
        if v[lab].model:
            assert np.isnan(x.sel(n=400).values).all(), lab  # beyond model_max_n
    text = (run_dir / "report.md").read_text()
    for part in ("## Findings", "### uniform logger", "### epsilon_greedy logger",
                 "bias.png", "| pair_ips |", "**Pair IPS, uniform logger**"):
        assert part in text
    assert json.loads(res.attrs["config"])["K"] == TINY.K


def test_summary_equals_recomputation_against_brute_force_truth(res, run_dir):
    s = click_report.summarise(res)
    p = click_report.at_largest_n(s)
    text = (run_dir / "report.md").read_text()
    for name in ("cascade", "dbn"):
        truth = brute(name, TINY, res["target_list"].sel(env=name).values)[0].sum()
        for lab in ("pair_ips", "dm"):
            n = 400 if lab == "pair_ips" else 200
            est = res["estimate"].sel(env=name, logger="uniform", n=n,
                                      estimator=lab).values
            lo = res["ci_low"].sel(env=name, logger="uniform", n=n, estimator=lab)
            hi = res["ci_high"].sel(env=name, logger="uniform", n=n, estimator=lab)
            x = p.sel(env=name, logger="uniform", estimator=lab)
            assert int(x["n_used"]) == n
            assert float(x["bias"]) == pytest.approx(est.mean() - truth, abs=1e-6)
            assert float(x["rel_bias"]) == pytest.approx((est.mean() - truth) / truth, abs=1e-5)
            assert float(x["rmse"]) == pytest.approx(
                np.sqrt(np.mean((est - truth) ** 2)))
            assert float(x["coverage"]) == pytest.approx(
                np.mean((lo.values <= truth) & (truth <= hi.values)))
    section = text.split("### uniform logger")[1].split("###")[0]
    lim = res["ips_limit"].sel(env="cascade", logger="uniform", ips="pair_ips")
    truth = float(res["click_truth"].sel(env="cascade"))
    assert click_report.pct(float((lim - truth) / truth)) in section


def test_examination_estimates_and_the_which_estimator_table(res, run_dir):
    """The position-bias columns: PBMEnv's examination / its first (written out),
    ones for Eq. 1, NaN (not estimated) for the cascade family; the EM estimate on the
    first PBM log equals position_bias on that log rebuilt here. The which-estimator
    rows recomputed from the summary by hand."""
    L = TINY.L
    exam = 1.0 / np.arange(1, L + 1)
    assert res["exam_true"].sel(env="pbm").values == pytest.approx(exam / exam[0])
    assert (res["exam_true"].sel(env="eq1").values == 1).all()
    for name in ("cascade", "dcm", "dbn", "eq1_cascade"):
        assert np.isnan(res["exam_true"].sel(env=name).values).all()
        assert np.isnan(res["exam_estimate"].sel(env=name).values).all()
    env = click.build_click_env("pbm", TINY)
    n = int(res["n"].values[-1])
    cfg = json.loads(res.attrs["config"])
    lists, rewards, _ = next(simulate_logs(
        env, click.build_click_logger("uniform", TINY), n, TINY.logs,
        cell_seed(cfg["seed"], TINY.K, L, "uniform", n)))
    log = br.ope.as_log(lists, rewards, np.zeros(1), K=TINY.K, feedback="pbm")
    want = br.ope.position_bias(log, n_boot=100,
                                seed=cell_seed(cfg["seed"], TINY.K, L, "uniform", n))
    got = res.sel(env="pbm", logger="uniform", n=n)
    assert got["exam_estimate"].values == pytest.approx(want["examination"].values)
    assert got["exam_low"].values == pytest.approx(want["ci_low"].values)
    s = click_report.summarise(res)
    common = click_report.common_n(s)
    assert common == 200  # the model estimators stop at model_max_n
    for fb, group, ok in click_report.which_estimator(res, s):
        assert group == [e for e in click.CLICK_ENVS if click_report.FEEDBACK_OF[e] == fb]
        for lab in map(str, s["estimator"].values):
            cells = s.sel(n=common, estimator=lab, env=group)
            rel = np.abs(cells["rel_bias"].values)
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.abs(cells["bias"].values) / cells["bias_se"].values
            unbiased = bool(np.all((rel <= 0.02) | (z <= 3)))
            assert (lab in dict(ok)) == unbiased, (fb, lab)
        rmses = [r for _, r in ok]
        assert rmses == sorted(rmses)
    text = (run_dir / "report.md").read_text()
    assert "## Which estimator under which feedback" in text
    assert "## Position bias estimated from the logs" in text


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("field, value", [
    ("envs", ()), ("envs", ("tandem",)), ("envs", ("pbm", "pbm")), ("envs", ["pbm"]),
    ("loggers", ("softmax",)), ("K", 1), ("L", 0), ("L", 5), ("d", 1), ("n", ()),
    ("n", (1,)), ("n", (10, 10)), ("logs", 1), ("model_max_n", -1),
    ("epsilon", 0.0), ("w_max", -1.0), ("continuation", 1.5), ("gamma", np.nan),
    ("scale", np.inf),
])
def test_bad_config_values_name_the_field(field, value, tmp_path):
    cfg = TINY._replace(**{field: value})
    out = tmp_path / "never"
    with pytest.raises((TypeError, ValueError), match=rf"^cfg\.{field}:"):
        click.run_click_study(out, cfg=cfg, progress=False)
    assert not out.exists()


def test_bad_names_and_flags(tmp_path):
    with pytest.raises(TypeError, match="^cfg:"):
        click.check_click_cfg({"K": 4})
    with pytest.raises(ValueError, match="^name:"):
        click.build_click_env("tandem", TINY)
    with pytest.raises(ValueError, match="^name:"):
        click.build_click_logger("softmax", TINY)
    with pytest.raises(TypeError, match="^env:"):
        click.observed_click_means(object(), np.array([0, 1, 2]))
    with pytest.raises(SystemExit) as exc:  # --click-models belongs to ope only
        main(["study", "obd", "--click-models", "--out", str(tmp_path / "x")])
    assert exc.value.code == 2
    assert not (tmp_path / "x").exists()
