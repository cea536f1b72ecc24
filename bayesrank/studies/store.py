"""What every study writes, written one way: NetCDF results (an ``xarray.Dataset`` or
``DataTree``) and text reports, each atomically (a temporary file beside the target,
then a rename), so an interrupted study never leaves a half-written file where a
finished one is expected, and a resumed sweep can trust every file it finds.

Example:
    >>> import tempfile, pathlib, xarray as xr
    >>> from bayesrank.studies import store
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> path = store.save_netcdf(xr.Dataset({"regret": ("round", [1.0, 0.5])}),
    ...                          folder / "results.nc")
    >>> float(store.load_netcdf(path)["regret"][1])
    0.5
    >>> sorted(p.name for p in folder.iterdir())
    ['results.nc']
"""

from __future__ import annotations

import os
from pathlib import Path

import xarray as xr

__all__ = ["load_netcdf", "save_netcdf", "write_text"]


def _atomic(path, write) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def save_netcdf(obj, path, **kwargs) -> Path:
    """Write a Dataset or DataTree to ``path`` atomically; ``kwargs`` go to
    ``to_netcdf`` (e.g. ``engine="h5netcdf"``). Returns the path."""
    return _atomic(path, lambda tmp: obj.to_netcdf(tmp, **kwargs))


def load_netcdf(path) -> xr.Dataset:
    """A Dataset read from ``path`` into memory (the file is closed on return)."""
    with xr.open_dataset(path) as ds:
        return ds.load()


def write_text(path, text: str) -> Path:
    """Write a report (UTF-8) to ``path`` atomically. Returns the path."""
    return _atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
