"""The log format: a catalogue of bad inputs, each named in the message, and a NetCDF
round trip."""

import numpy as np
import pytest
import xarray as xr

from bayesrank.ope import as_log, check_log

N, L, D, K = 4, 3, 2, 5


def good(**over):
    rng = np.random.default_rng(0)
    kw = {
        "lists": rng.integers(0, K, (N, L)),
        "rewards": rng.normal(size=(N, L)),
        "v0": rng.normal(size=(N, D)),
        "pscore_list": np.full(N, K**-3.0),
        "pscore_position": np.full((N, L), 1 / K),
        "pscore_pair": np.full((N, L), 1 / K**2),
        "pscore_cascade": np.full((N, L), 1 / K),
        "items": rng.normal(size=(K, D)),
    }
    kw.update(over)
    return kw


def test_a_valid_log_has_the_documented_layout():
    kw = good()
    kw["rewards"][1, 2] = np.nan  # not observed: allowed
    ds = as_log(**kw, K=K)
    assert ds["lists"].dims == ("round", "position")
    assert ds["v0"].dims == ("round", "dim")
    assert ds["pscore_list"].dims == ("round",)
    assert dict(ds.sizes) == {"round": N, "position": L, "dim": D, "item": K}
    assert ds["items"].dims == ("item", "dim")
    np.testing.assert_array_equal(ds["items"].values, kw["items"])
    np.testing.assert_array_equal(ds["lists"].values, kw["lists"])
    assert np.isnan(ds["rewards"].values[1, 2])


def test_a_shared_v0_is_broadcast():
    ds = as_log(**good(v0=np.array([1.0, 2.0])))
    np.testing.assert_array_equal(ds["v0"].values, np.tile([1.0, 2.0], (N, 1)))


def test_pscores_are_optional():
    kw = good()
    ds = as_log(kw["lists"], kw["rewards"], kw["v0"])  # no pscores, no items
    assert set(ds.data_vars) == {"lists", "rewards", "v0"}


BAD = [
    ("lists", {"lists": np.zeros(N, int)}, ValueError),
    ("lists", {"lists": np.zeros((N, L)) + 0.5}, TypeError),
    ("lists", {"lists": np.full((N, L), K)}, ValueError),  # >= K
    ("lists", {"lists": np.full((N, L), -1)}, ValueError),
    ("rewards", {"rewards": np.zeros((N, L + 1))}, ValueError),
    ("rewards", {"rewards": np.full((N, L), np.inf)}, ValueError),
    ("rewards", {"rewards": np.full((N, L), "a")}, TypeError),
    ("v0", {"v0": np.zeros((N + 1, D))}, ValueError),
    ("v0", {"v0": np.full((N, D), np.nan)}, ValueError),
    ("v0", {"v0": np.full((N, D), np.inf)}, ValueError),
    ("pscore_list", {"pscore_list": np.zeros(N)}, ValueError),
    ("pscore_list", {"pscore_list": np.full(N, 1.5)}, ValueError),
    ("pscore_list", {"pscore_list": np.full((N, L), 0.5)}, ValueError),
    ("pscore_position", {"pscore_position": np.full((N, L), np.nan)}, ValueError),
    ("pscore_pair", {"pscore_pair": np.full((N, L), -0.1)}, ValueError),
    ("pscore_cascade", {"pscore_cascade": np.full((N, L - 1), 0.5)}, ValueError),
    ("items", {"items": np.zeros((K, D + 1))}, ValueError),  # d differs from v0's
    ("items", {"items": np.zeros((K - 1, D))}, ValueError),  # rows differ from K
    ("items", {"items": np.full((K, D), np.nan)}, ValueError),
    ("items", {"items": np.full((K, D), np.inf)}, ValueError),
    ("items", {"items": np.zeros(K)}, ValueError),
    ("items", {"items": np.full((K, D), "a")}, TypeError),
]


@pytest.mark.parametrize("name, over, exc", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_inputs_name_the_variable(name, over, exc):
    with pytest.raises(exc, match=f"^{name}:"):
        as_log(**good(**over), K=K)


def test_indices_above_K_pass_when_K_is_unknown():
    kw = good(lists=np.full((N, L), K + 3))
    del kw["items"]
    as_log(**kw)


def test_items_set_K_and_must_cover_the_lists():
    assert as_log(**good()).attrs["K"] == K
    with pytest.raises(ValueError, match="^items:"):
        as_log(**good(lists=np.full((N, L), K)))  # K rows, item index K used


# the bad values a Dataset can hold under the log's dims (same shape, numeric)
BAD_DS = [b for b in BAD if np.shape(next(iter(b[1].values()))) == np.shape(good()[b[0]])
          and np.asarray(next(iter(b[1].values()))).dtype.kind != "U"]


@pytest.mark.parametrize("name, over, exc", BAD_DS,
                         ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_DS)])
def test_check_log_catches_the_same_errors(name, over, exc):
    ds = as_log(**good(), K=K)
    arr = np.asarray(good(**over)[name])
    bad = ds.copy()
    bad[name] = (ds[name].dims, arr)
    with pytest.raises(exc, match=f"^{name}:"):
        check_log(bad, K=K)


def test_check_log_rejects_a_missing_variable_and_wrong_dims():
    ds = as_log(**good())
    with pytest.raises(ValueError, match="^rewards:"):
        check_log(ds.drop_vars("rewards"))
    with pytest.raises(ValueError, match="^pscore_position:"):
        check_log(ds.assign(pscore_position=ds["pscore_position"].transpose()))
    with pytest.raises(TypeError, match="^log:"):
        check_log({"lists": 1})


def test_a_log_round_trips_through_netcdf(tmp_path):
    kw = good()
    kw["rewards"][0, 1] = np.nan
    ds = as_log(**kw, K=K)
    ds.to_netcdf(tmp_path / "l.nc")
    back = xr.open_dataset(tmp_path / "l.nc").load()
    assert check_log(back) is back
    assert int(back.attrs["K"]) == K
    for name in ds.data_vars:
        np.testing.assert_array_equal(back[name].values, ds[name].values)
    # the stored K is enforced when reading back
    back["lists"] = (("round", "position"), np.full((N, L), K))
    with pytest.raises(ValueError, match="^lists:"):
        check_log(back)
