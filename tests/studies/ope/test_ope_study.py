"""``bayesrank study ope``: the OPE validation study end to end (tiny scale) and its
numbers against independent references (enumeration, plain NumPy)."""

import itertools
import json

import numpy as np
import pytest
import xarray as xr

import bayesrank as br
from bayesrank.cli import build_parser, main
from bayesrank.studies.ope import config as ope_config
from bayesrank.studies.ope import obd as ope_obd
from bayesrank.studies.ope import report as ope_report
from bayesrank.studies.ope import study as ope_study

#: the module's run: one tiny catalogue, both w regimes and loggers, a few logs
TINY = ope_config.OPEStudyConfig(
    K=(4,),
    L=(2,),
    w_max=(
        0.0,
        10.0,
    ),  # at K = 4, L = 2, w_max = 10 the best list is not the greedy one
    n=(300, 1000),
    logs=6,
    model_max_n=300,
    ts_K=3,
    ts_L=2,
    ts_n=300,
    ts_logs=3,
    ts_fit_rounds=20,
    ts_draws=200,
    ts_truth_draws=4000,
    obd_campaigns=("all", "men"),
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """``bayesrank study ope --quick --out DIR`` through the CLI, at the TINY scale."""
    out = tmp_path_factory.mktemp("ope")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ope_study, "QUICK", TINY)
        assert main(["study", "ope", "--quick", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def res(run_dir):
    return xr.load_dataset(run_dir / "results.nc")


# ------------------------------------------------------------ independent references
def enumerate_values(env):
    """(lists (K^L, L), per-position means (K^L, L)) by enumeration, plain NumPy:
    mean_l = <theta_l, v_{a^l} + w_l v_{a^{l-1}}>, v_{a^0} = v0 (identity link)."""
    V, Th = np.asarray(env.items, float), np.asarray(env.theta, float)
    w, v0 = np.asarray(env.w, float), np.asarray(env.v0, float)
    K, L = V.shape[0], Th.shape[0]
    lists = np.array(list(itertools.product(range(K), repeat=L)))
    means = np.zeros(lists.shape)
    for i, a in enumerate(lists):
        prev = v0
        for l in range(L):
            means[i, l] = Th[l] @ (V[a[l]] + w[l] * prev)
            prev = V[a[l]]
    return lists, means


def list_probs(lists, logger_name, K, L, base=None, eps=None):
    """The logger's probability of every enumerated list, from its definition."""
    p = np.full(len(lists), float(K) ** -L)
    if logger_name == "epsilon_greedy":
        p = eps * p + (1 - eps) * (lists == base).all(axis=1)
    return p


def plain_ips(rewards, w, self_normalised):
    """sum_l mean_i w r, or sum_l (sum_i w r / sum_i w)."""
    if self_normalised:
        sw = w.sum(axis=0)
        return float(
            np.sum(np.where(sw > 0, (w * rewards).sum(0) / np.where(sw > 0, sw, 1), 0))
        )
    return float((w * rewards).sum(axis=1).mean())


# ------------------------------------------------------------------ end to end
def test_writes_report_plots_and_netcdf(run_dir, res):
    for name in ("rmse.png", "coverage.png"):
        png = (run_dir / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) < 600_000
    dims = ("K", "L", "w_max", "logger", "n", "log", "estimator")
    assert res["estimate"].dims == dims
    labels = [v.label for v in ope_config.estimator_variants()]
    assert list(res["estimator"].values) == labels
    for name in br.ope.ESTIMATORS:  # every registry entry is in the study
        assert name in labels
    assert res["estimate"].shape == (1, 1, 2, 2, 2, TINY.logs, len(labels))
    cfg = json.loads(res.attrs["config"])
    assert cfg["logs"] == TINY.logs and cfg["seed"] == 0
    text = (run_dir / "report.md").read_text()
    for label in labels:
        assert f"| {label} |" in text
    for part in (
        "## Findings",
        "## The Open Bandit Dataset sample",
        "cannot be estimated",
        "Thompson sampling",
        "## Open Bandit Pipeline",
        "rmse.png",
    ):
        assert part in text


def test_every_estimate_is_finite_where_it_was_run(res):
    v = {x.label: x for x in ope_config.estimator_variants()}
    for label in res["estimator"].values:
        for n in res["n"].values:
            x = res["estimate"].sel(estimator=label, n=n).values
            if v[str(label)].model and n > TINY.model_max_n:
                assert np.isnan(x).all(), label  # beyond model_max_n: not run
            else:
                assert np.isfinite(x).all(), label


def test_truth_and_target_equal_enumeration(res):
    for w_max in TINY.w_max:
        env = ope_config.build_env(TINY, 4, 2, w_max)
        lists, means = enumerate_values(env)
        best = int(np.argmax(means.sum(1)))
        c = {"K": 4, "L": 2, "w_max": w_max}
        np.testing.assert_array_equal(
            res["target_list"].sel(**c).values[:2], lists[best]
        )
        assert float(res["truth"].sel(**c)) == pytest.approx(
            means[best].sum(), rel=1e-6
        )
        if w_max == 0:
            np.testing.assert_array_equal(res["w"].sel(**c).values, 0.0)


@pytest.mark.parametrize("logger", ["uniform", "epsilon_greedy"])
def test_cell_bias_rmse_coverage_equal_independent_recomputation(res, run_dir, logger):
    c = {"K": 4, "L": 2, "w_max": 10.0, "logger": logger, "n": 300}
    env = ope_config.build_env(TINY, 4, 2, 10.0)
    _, means = enumerate_values(env)
    truth = means.sum(1).max()  # by enumeration, not from the results
    s = ope_report.summarise(res)
    text = (run_dir / "report.md").read_text()
    section = text.split("### K = 4, L = 2, w_max = 10, " + logger)[1].split("###")[0]
    for label in res["estimator"].values:
        est = res["estimate"].sel(**c, estimator=label).values
        lo = res["ci_low"].sel(**c, estimator=label).values
        hi = res["ci_high"].sel(**c, estimator=label).values
        if np.isnan(est).all():
            continue
        bias = est.mean() - truth
        rmse = np.sqrt(np.mean((est - truth) ** 2))
        cover = np.mean((lo <= truth) & (truth <= hi))
        x = s.sel(**c, estimator=label)
        assert float(x["bias"]) == pytest.approx(bias, rel=1e-6, abs=1e-9)
        assert float(x["rmse"]) == pytest.approx(rmse, rel=1e-6)
        assert float(x["coverage"]) == pytest.approx(cover)
        assert float(x["bias_se"]) == pytest.approx(est.std(ddof=1) / np.sqrt(len(est)))
        row = next(r for r in section.splitlines() if r.startswith(f"| {label} |"))
        assert (
            f"{ope_report.fmt(bias)} (" in row and f"| {ope_report.fmt(rmse)} |" in row
        )


def test_ts_section_summary_equals_recomputation(res):
    t = ope_report.ts_summarise(res)
    for w in res["ts_w_max"].values:
        truth = float(res["ts_truth"].sel(ts_w_max=w))
        assert float(res["ts_truth_mc_se"].sel(ts_w_max=w)) < 0.05
        assert float(res["ts_distinct_lists"].sel(ts_w_max=w)) > 1  # a random target
        for g in res["ts_logger"].values:
            est = res["ts_estimate"].sel(ts_w_max=w, ts_logger=g).values  # (log, est)
            assert np.isfinite(est).all()
            np.testing.assert_allclose(
                t["rmse"].sel(ts_w_max=w, ts_logger=g).values,
                np.sqrt(((est - truth) ** 2).mean(axis=0)),
                rtol=1e-9,
            )


# ------------------------------------------------------- the pieces, by reference
@pytest.mark.parametrize("logger", ["uniform", "epsilon_greedy"])
@pytest.mark.parametrize("w_max", [0.0, 4.0])
def test_position_ips_limit_and_unbiased_estimators_by_enumeration(logger, w_max):
    """E[estimator] over every list the logger can show, weighted by its exact
    probability: position IPS's equals position_ips_limit (and the truth iff w = 0);
    list, cascade and pair IPS's equal the truth."""
    cfg = TINY
    K, L = 3, 3
    env = ope_config.build_env(cfg, K, L, w_max)
    lists, means = enumerate_values(env)
    target = lists[np.argmax(means.sum(1))]
    base = ope_config.greedy_list(env)
    p = list_probs(lists, logger, K, L, base, cfg.epsilon)
    assert p.sum() == pytest.approx(1.0)
    lg = ope_config.build_logger(logger, env, cfg)
    ps = lg.propensities(lists, np.zeros((len(lists), env.d)))
    pi = ope_study.target_event_probs(lists, target)
    truth = means[np.argmax(means.sum(1))].sum()
    expect = {
        e: float(p @ (pi[e] / ps[f"pscore_{e}"] * means).sum(1))
        for e in ("position", "pair", "cascade")
    }
    expect["list"] = float(p @ (pi["list"] / ps["pscore_list"] * means.sum(1)))
    limit = ope_study.position_ips_limit(env, lg, target)
    assert expect["position"] == pytest.approx(limit, rel=1e-6)
    for e in ("pair", "cascade", "list"):
        assert expect[e] == pytest.approx(truth, rel=1e-6), e
    if w_max == 0:
        assert limit == pytest.approx(truth, rel=1e-6)
    elif logger == "uniform":
        assert abs(limit - truth) > 0.05  # this instance: position IPS is biased


def test_target_event_probs_match_brute_force():
    rng = np.random.default_rng(1)
    lists = rng.integers(0, 3, (200, 4))
    target = np.array([1, 0, 2, 1])
    got = ope_study.target_event_probs(lists, target)
    for i, a in enumerate(lists):
        for l in range(4):
            assert got["position"][i, l] == float(a[l] == target[l])
            pair = a[l] == target[l] and (l == 0 or a[l - 1] == target[l - 1])
            assert got["pair"][i, l] == float(pair)
            assert got["cascade"][i, l] == float(all(a[: l + 1] == target[: l + 1]))
        assert got["list"][i] == float((a == target).all())


def test_log_estimates_equal_plain_numpy_and_evaluate():
    env = ope_config.build_env(TINY, 4, 3, 4.0)
    target = np.asarray(env.best()[0])
    lg = ope_config.build_logger("epsilon_greedy", env, TINY)
    ((lists, rewards, ps),) = ope_study.simulate_logs(env, lg, 1500, 1, 5)
    variants = ope_config.estimator_variants()
    kw = {"K": 4, "v0": np.asarray(env.v0), "items": np.asarray(env.items)}
    got = ope_study.log_estimates(lists, rewards, ps, target, variants, **kw)
    # the IPS family by the textbook formulas, with per-row probabilities by brute force
    match = lists == target
    pi = {
        "position": match,
        "pair": match & np.c_[np.ones(len(lists), bool), match[:, :-1]],
        "cascade": np.logical_and.accumulate(match, axis=1),
    }
    pi["list"] = np.repeat(pi["cascade"][:, -1:], 3, axis=1)
    pscore = dict(ps)
    pscore["pscore_list"] = np.repeat(ps["pscore_list"][:, None], 3, axis=1)
    checked = 0
    events = {"list": "list", "position": "position", "prefix": "cascade", "pair": "pair"}
    for i, v in enumerate(variants):
        est = br.ope.ESTIMATORS[v.name]
        if not est.needs_reward_model:
            event = events[est.needs[0]]
            w = pi[event] / pscore[f"pscore_{event}"]
            assert got[i, 0] == pytest.approx(plain_ips(rewards, w, v.self_normalised))
            checked += 1
    assert checked >= 8
    # every estimator equals the library's own evaluate()
    log = br.ope.as_log(lists, rewards, kw["v0"], **ps, K=4)
    for i, v in enumerate(variants):
        ds = br.ope.evaluate(log, ope_study.FixedListTarget(target), [v.name],
                             self_normalised=v.self_normalised, deterministic=True,
                             items=kw["items"])
        ref = [float(ds[s].sel(estimator=v.name)) for s in ope_study.STATS]
        np.testing.assert_allclose(got[i], ref, rtol=1e-9, atol=1e-12, err_msg=v.label)


def test_simulate_logs_exact_propensities_and_independent_logs():
    env = ope_config.build_env(TINY, 3, 2, 4.0)
    lg = ope_config.build_logger("epsilon_greedy", env, TINY)
    logs = list(ope_study.simulate_logs(env, lg, 4000, 3, 0, chunk=5000))
    assert len(logs) == 3
    base, eps = ope_config.greedy_list(env), TINY.epsilon
    for lists, rewards, ps in logs:
        same = (lists == base).all(1)
        np.testing.assert_allclose(ps["pscore_list"], (1 - eps) * same + eps / 9)
        assert abs(same.mean() - (1 - eps + eps / 9)) < 0.03  # 1 - eps + eps / K^L
        # rewards: the enumerated means plus unit-variance noise
        _, means = enumerate_values(env)
        idx = lists[:, 0] * 3 + lists[:, 1]
        resid = rewards - means[idx]
        assert abs(resid.mean()) < 4 / np.sqrt(resid.size) and 0.9 < resid.std() < 1.1
    assert not np.array_equal(logs[0][1], logs[1][1])


def test_estimator_variants_follow_the_protocol_attributes():
    class Plain(br.ope.Estimator):
        name, needs = "a", ("pair",)

    class Normalisable(br.ope.Estimator):
        name, needs, self_normalisable = "b", ("pair",), True

    class Model(br.ope.Estimator):
        name, needs_reward_model = "c", True

    reg = {"a": Plain(), "b": Normalisable(), "c": Model()}
    got = [(v.label, v.model, v.estimator.name)
           for v in ope_config.estimator_variants(reg)]
    assert got == [("a", False, "a"), ("b", False, "b"), ("b_sn", False, "b"),
                   ("c", True, "c")]
    labels = [v.label for v in ope_config.estimator_variants()]
    assert labels == ["dm", "list_ips", "list_ips_sn", "position_ips", "position_ips_sn",
                      "cascade_ips", "cascade_ips_sn", "pair_ips", "pair_ips_sn",
                      "pair_dr", "pair_dr_sn", "cascade_dr"]


def test_obd_section_against_hand_computation():
    sec = ope_obd.obd_section(("all",))["all"]
    n, k = np.array([3322, 3412, 3266]), np.array([13, 14, 11])
    p = k / n
    assert sec["position_ips"]["estimate"] == pytest.approx(p.sum())
    assert sec["position_ips_sn"]["estimate"] == pytest.approx(p.sum())
    # sd(ddof=1) of a 0/1 sample with k ones over sqrt(n), combined over positions
    se = np.sqrt(np.sum(k * (n - k) / (n * (n - 1)) / n))
    assert sec["position_ips"]["stderr"] == pytest.approx(se)
    assert sec["relative_stderr_item_target"] == pytest.approx(np.sqrt(80 / k))
    assert sec["full_lists"] == 0 and sec["shared_timestamps"] == 9 and sec["K"] == 80


# ------------------------------------------------------------------ CLI and inputs
def test_cli_parses_study_ope(tmp_path):
    args = build_parser().parse_args(
        ["study", "ope", "--quick", "--out", str(tmp_path)]
    )
    assert (args.command, args.name, args.quick, args.out) == (
        "study",
        "ope",
        True,
        tmp_path,
    )
    args = build_parser().parse_args(["study", "ope", "--seed", "3"])
    assert args.seed == 3 and not args.quick and args.out is None


@pytest.mark.parametrize(
    "field, value",
    [
        ("K", ()),
        ("K", (0,)),
        ("K", (3, 3)),
        ("K", (2.5,)),
        ("L", (True,)),
        ("n", (1,)),
        ("n", [100]),
        ("w_max", (-1.0,)),
        ("w_max", (np.inf,)),
        ("w_max", (np.nan,)),
        ("logs", 1),
        ("logs", 2.0),
        ("loggers", ("softmax",)),
        ("loggers", ()),
        ("epsilon", 0.0),
        ("epsilon", 1.5),
        ("epsilon", np.nan),
        ("d", 1),
        ("model_max_n", -1),
        ("ts_n", 1),
        ("ts_draws", 0),
        ("obd_campaigns", ("kids",)),
    ],
)
def test_bad_config_values_name_the_field(field, value, tmp_path):
    cfg = TINY._replace(**{field: value})
    with pytest.raises((TypeError, ValueError), match=rf"^cfg\.{field}:"):
        ope_config.refuse_bad_cfg(cfg)
    out = tmp_path / "never"
    with pytest.raises((TypeError, ValueError), match=rf"^cfg\.{field}:"):
        ope_study.run_ope_study(out, cfg=cfg, progress=False)
    assert not out.exists()  # nothing written


def test_wrong_config_type_and_unknown_logger():
    with pytest.raises(TypeError, match="^cfg:"):
        ope_config.refuse_bad_cfg({"K": (3,)})
    env = ope_config.build_env(TINY, 3, 2, 0.0)
    with pytest.raises(ValueError, match="^logger:"):
        ope_config.build_logger("softmax", env, TINY)
    with pytest.raises(ValueError, match="^campaigns:"):
        ope_obd.obd_section(("kids",))


@pytest.mark.parametrize(
    "argv", [["study", "ope", "--seed", "x"], ["study", "ope", "--bogus"]]
)
def test_bad_flags_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
