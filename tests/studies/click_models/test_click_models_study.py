"""The click-model study (``bayesrank study click-models``) at a tiny scale: its regret
curves equal a plain-NumPy replay of the lists shown (each list's value from the
catalogue's own parameters, the best list by brute force over every list), a policy
that cannot play an environment is skipped with its reason, the report's numbers and
winners are the data's, and bad arguments are refused."""

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from bayesrank.studies.click_models import click_cells, merge_cells, report, setup

TINY = {"K": 6, "d": 3, "L": 3, "T": 40, "runs": 2, "points": 4, "nuts_T": 10,
        "nuts_runs": 1}
NAMES = ["RankTS", "CascadeKLUCB", "PBMUCB"]
ENVS = ["Eq. 1", "cascade", "PBM", "DBN"]


@pytest.fixture(scope="module")
def cells():
    return click_cells(TINY, seed=3, names=NAMES, envs=ENVS, progress=False,
                       record_lists=True)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _values(name, lists, seed):
    """Plain NumPy: each list's expected reward, from the catalogue's parameters."""
    V, theta = setup.catalogue(TINY["K"], TINY["d"], seed)
    A = _sigmoid(V @ theta)
    L = lists.shape[-1]
    if name == "Eq. 1":
        w = np.asarray(setup.environments(TINY, seed)["Eq. 1"].w)
        prev = np.concatenate([np.zeros(lists.shape[:-1] + (1, V.shape[1])),
                               V[lists[..., :-1]]], axis=-2)
        return _sigmoid((V[lists] + w[:, None] * prev) @ theta).sum(-1)
    if name == "cascade":
        return 1.0 - np.prod(1.0 - A[lists], axis=-1)
    if name == "PBM":
        return (A[lists] / np.arange(1, L + 1)).sum(-1)
    if name == "DBN":
        env = setup.environments(TINY, seed)["DBN"]
        u = (A * np.asarray(env.satisfaction))[lists]
        g = float(env.gamma)
        total = np.zeros(lists.shape[:-1])
        reach = np.ones(lists.shape[:-1])
        for l in range(L):  # reached position l, then satisfied there
            total += reach * u[..., l]
            reach = reach * (1.0 - u[..., l]) * g
        return total
    raise AssertionError(name)


@pytest.mark.parametrize("env,policy", [("Eq. 1", "RankTS"), ("cascade", "CascadeKLUCB"),
                                        ("PBM", "PBMUCB"), ("DBN", "RankTS")])
def test_regret_curves_equal_a_numpy_replay_of_the_lists(cells, env, policy):
    lists = cells["lists"].sel(env=env, policy=policy).values  # (run, T, L)
    every = np.array(list(itertools.permutations(range(TINY["K"]), TINY["L"])))
    best = _values(env, every, 3).max()
    np.testing.assert_allclose(float(cells["best_value"].sel(env=env)), best, rtol=1e-5)
    cum = np.cumsum(best - _values(env, lists, 3), axis=-1)  # (run, T)
    want = cum[:, cells["round"].values - 1]
    got = cells["regret"].sel(env=env, policy=policy).values
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert np.all(np.diff(got, axis=-1) >= -1e-5)  # cumulative regret never falls


def test_runs_differ_and_every_policy_sees_the_same_runs(cells):
    # run r of every policy uses the same environment keys: the same policy alone
    # (another set of names) gives the same regret, cell for cell
    alone = click_cells(TINY, seed=3, names=["CascadeKLUCB"], envs=["cascade"],
                        progress=False)
    np.testing.assert_array_equal(
        alone["regret"].sel(env="cascade", policy="CascadeKLUCB").values,
        cells["regret"].sel(env="cascade", policy="CascadeKLUCB").values)
    r = cells["regret"].sel(env="cascade", policy="CascadeKLUCB").values
    assert not np.allclose(r[0], r[1])  # the runs are independent draws


def test_pieces_run_apart_merge_into_the_one_call_results(cells):
    """merge_cells over pieces split by environment and by policy (as
    run_click_models_study's Dask executor runs them, one task each) gives the one call's cells,
    coordinates in the study's order and the skipped reasons."""
    pieces = [click_cells(TINY, seed=3, names=names, envs=envs, progress=False)
              for envs, names in ((["DBN", "Eq. 1"], ["PBMUCB", "RankTS"]),
                                  (["PBM", "cascade"], ["RankTS"]),
                                  (["PBM", "cascade"], ["CascadeKLUCB", "PBMUCB"]),
                                  (["Eq. 1", "DBN"], ["CascadeKLUCB"]))]
    merged = merge_cells(pieces[::-1])
    assert list(merged["env"].values) == ["Eq. 1", "PBM", "cascade", "DBN"]  # study's
    assert list(merged["policy"].values) == NAMES
    one = cells.reindex(env=merged["env"].values)
    np.testing.assert_array_equal(merged["regret"].values, one["regret"].values)
    np.testing.assert_array_equal(merged["best_value"].values, one["best_value"].values)
    assert json.loads(merged.attrs["skipped"]) == json.loads(cells.attrs["skipped"])
    assert report.report(merged).split("Policies:")[0] == \
        report.report(one).split("Policies:")[0]
    other = click_cells({**TINY, "runs": 1}, seed=3, names=["RankTS"], envs=["PBM"],
                        progress=False)
    with pytest.raises(ValueError, match="pieces: expected one scale and seed"):
        merge_cells([pieces[0], other])
    with pytest.raises(ValueError, match="pieces: expected at least one"):
        merge_cells([])


def test_a_policy_that_cannot_play_is_skipped_with_its_reason(cells):
    skipped = json.loads(cells.attrs["skipped"])
    assert set(skipped) == set(ENVS)
    for env in ENVS:
        pbm = cells["regret"].sel(env=env, policy="PBMUCB").values
        if env == "PBM":
            assert skipped[env] == {} and np.isfinite(pbm).all()
        else:
            assert "examination" in skipped[env]["PBMUCB"] and np.isnan(pbm).all()
    text = report.report(cells)
    assert "* PBMUCB on Eq. 1, cascade, DBN: PBM-UCB needs the examination" in text


def test_report_numbers_and_winners_are_the_data(cells, tmp_path):
    text = report.report(cells)
    T = TINY["T"]
    for env in ENVS:
        r = cells["regret"].sel(env=env, round=T).values  # (policy, run)
        means = {p: r[i].mean() for i, p in enumerate(NAMES) if np.isfinite(r[i]).all()}
        best = min(means, key=means.get)
        assert f"* {env}: **{best}**" in text
    vals = cells["regret"].sel(env="cascade", policy="CascadeKLUCB", round=T).values
    m, h = vals.mean(), 12.706 * vals.std(ddof=1) / np.sqrt(2)  # t(0.975, 1 df)
    row = next(line for line in text.splitlines() if line.startswith("| CascadeKLUCB |"))
    assert row.split(" | ")[2] == f"{m:.1f} [{m - h:.1f}, {m + h:.1f}]"
    report.figure(cells, tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 10_000


@pytest.mark.parametrize("kwargs,match", [
    ({"names": ["RankTS", "Nope"]}, "names: unknown policy 'Nope'"),
    ({"envs": ["PBM", "ECM"]}, "envs: unknown environment 'ECM'"),
    ({"scale": "medium"}, "scale: expected one of"),
    ({"scale": {"L": 13}}, "scale: expected L <= K"),
    ({"scale": {"T": 0}}, r"scale\['T'\]"),
    ({"seed": -1}, "seed"),
])
def test_bad_arguments_are_refused(kwargs, match):
    kw = {"scale": TINY, "names": ["CascadeKLUCB"], "envs": ["cascade"],
          "progress": False, **kwargs}
    with pytest.raises(ValueError, match=match):
        click_cells(kw.pop("scale"), **kw)


@pytest.mark.heavy  # the quick scale end to end: every policy on every environment
@pytest.mark.slow  # 388 s under load: the longest study end to end (run by hand)
def test_cli_quick_writes_the_report_figure_and_results(tmp_path):
    import xarray as xr

    out = tmp_path / "click"
    subprocess.run([sys.executable, "-m", "bayesrank", "study", "click-models", "--quick",
                    "--out", str(out)], check=True, capture_output=True, timeout=900)
    with xr.open_dataset(out / "results.nc") as ds:
        assert list(ds["env"].values) == ["Eq. 1", "Eq. 1 cascade", "PBM", "cascade",
                                          "DCM", "DBN"]
        assert list(ds["policy"].values) == list(setup.POLICIES)
        finite = np.isfinite(ds["regret"].values).any(axis=(2, 3))
    skipped = json.loads(ds.attrs["skipped"])
    for i, env in enumerate(ds["env"].values):
        for j, pol in enumerate(ds["policy"].values):
            assert finite[i, j] == (pol not in skipped[env]), (env, pol)
    text = (out / "report.md").read_text()
    assert text.count("| RankTS |") == 2  # the table at T and the one at NUTS's T
    assert (out / "regret.png").stat().st_size > 20_000


def test_every_study_name_dispatches_to_a_runner_taking_out_quick_and_seed():
    import importlib
    import inspect

    from bayesrank.studies import cli

    assert set(cli.RUNNERS) == set(cli.STUDIES) | {"ope-click"}  # ope --click-models
    for name, (module, function) in cli.RUNNERS.items():
        params = inspect.signature(getattr(importlib.import_module(module), function)
                                   ).parameters
        assert {"quick", "seed"} <= set(params), name
        assert next(iter(params)) == "out", name
