"""JAX's persistent compilation cache, on by default for bayesrank.

Every policy of one configuration shares its compiled programs within a process
(:mod:`bayesrank.policies.runtime.program`). Across processes, XLA's compiled programs are kept
on disk, so a new Python process (a script, a notebook kernel, ``bayesrank demo``)
running a configuration seen before skips XLA's compilation (tracing still runs).

Where the cache lives, first match wins:

1. :func:`compilation_cache` called by the user (a path, or ``False`` for off);
2. the environment variable ``BAYESRANK_CACHE_DIR`` (empty: off);
3. JAX's own setting, if the user made one (``JAX_COMPILATION_CACHE_DIR`` or
   ``jax.config.update("jax_compilation_cache_dir", ...)``): left alone;
4. ``$XDG_CACHE_HOME/bayesrank/jax`` (``~/.cache/bayesrank/jax`` when unset).

Clearing it is ``bayesrank cache --clear`` (or deleting that folder;
``bayesrank.compilation_cache()`` returns it); it holds only XLA executables, which JAX
re-creates when missing or stale (the key includes the jax and jaxlib versions and the
device). ``bayesrank cache`` says where it is and how many programs it holds.
Every program is written, however quick its compilation: a first round at
K = 10,000 compiles several programs that are each quick to compile but add up
(figures: docs/performance.md, "Why the code is written this way"). The cache is bounded
(:data:`MAX_BYTES`, least recently used programs go first), which also makes JAX lock
each read and write, so processes sharing it (pytest-xdist workers, Dask workers)
never read a half-written program. The price: before each write JAX reads the size
and access time of every entry, so a cache of many programs slows every program
compiled for the first time (measured in docs/performance.md, "What a full cache
costs"). Clearing it now and then keeps that small.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

__all__ = ["MAX_BYTES", "MIN_COMPILE_SECONDS", "clear", "compilation_cache",
           "configured_dir", "contents", "default_cache_dir"]

#: The cache's size bound (bytes). A bound makes JAX evict the least recently used
#: programs *and* lock each read and write (the filelock package): without it, a
#: process can read a program another is still writing, and crash.
MAX_BYTES = 2 << 30

#: Programs that compile faster than this are not written (0: every program).
MIN_COMPILE_SECONDS = 0.0


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/bayesrank/jax``, or ``~/.cache/bayesrank/jax``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "bayesrank" / "jax"


def configured_dir() -> Path | None:
    """The folder this process's environment points the cache at (rules 2-4), or None
    when it is off; reads only environment variables (no JAX import)."""
    env = os.environ.get("BAYESRANK_CACHE_DIR")
    if env is not None:
        return Path(env).expanduser() if env else None
    if os.environ.get("JAX_ENABLE_COMPILATION_CACHE", "").strip().lower() in ("false", "0"):
        return None
    jax_dir = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    return Path(jax_dir).expanduser() if jax_dir else default_cache_dir()


#: JAX's layout: a program under ``<name>-<sha256 hex>-cache`` and, in a bounded cache,
#: its last use under ``...-atime``. Only such files are counted and cleared.
_ENTRY = re.compile(r".+-[0-9a-f]{64}-(cache|atime)")


def _entries(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [f for f in folder.iterdir()
            if _ENTRY.fullmatch(f.name) and f.is_file() and not f.is_symlink()]


def contents(folder: str | os.PathLike) -> tuple[int, int]:
    """The number of compiled programs in ``folder`` and the bytes their files take
    (0, 0 when the folder does not exist)."""
    programs = size = 0
    for f in _entries(Path(folder)):
        try:
            size += f.stat().st_size
        except FileNotFoundError:  # evicted by another process meanwhile
            continue
        programs += f.name.endswith("-cache")
    return programs, size


def clear(folder: str | os.PathLike) -> tuple[int, int]:
    """Delete the compiled programs in ``folder`` (JAX's files only: anything else
    there, and the folder itself, stay). Returns what was removed, as :func:`contents`.
    """
    programs = size = 0
    for f in _entries(Path(folder)):
        try:
            nbytes = f.stat().st_size
            f.unlink()
        except FileNotFoundError:  # evicted by another process meanwhile
            continue
        size += nbytes
        programs += f.name.endswith("-cache")
    return programs, size


def _apply(path: Path | None) -> Path | None:
    import jax
    from jax.experimental.compilation_cache import compilation_cache as cc

    if path is None:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    if jax.config.jax_persistent_cache_min_compile_time_secs > MIN_COMPILE_SECONDS:
        jax.config.update(
            "jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS
        )
    cc.reset_cache()  # re-read the directory on the next compilation
    return path


def compilation_cache(path: str | os.PathLike | bool | None = None) -> Path | None:
    """Turn the persistent compilation cache on (at ``path``) or off, or ask where it is.

    Args:
        path: a directory to keep compiled programs in; ``True``: the default
            directory; ``False``: off (this process); ``None``: change nothing.

    Returns:
        The directory in use, or None when the cache is off.

    Example:
        >>> import bayesrank as br
        >>> where = br.compilation_cache()              # where it is now (or None)
        >>> br.compilation_cache(False) is None         # off for this process
        True
        >>> _ = br.compilation_cache(where if where is not None else False)
    """
    import jax

    if path is None:
        if not jax.config.jax_enable_compilation_cache:
            return None
        where = jax.config.jax_compilation_cache_dir
        return Path(where) if where else None
    if path is False:
        return _apply(None)
    if path is True:
        return _apply(default_cache_dir())
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"path: expected a directory (str or os.PathLike), True, False or None, "
            f"got {type(path).__name__}"
        )
    if str(path) == "":
        raise ValueError("path: expected a directory, got an empty string (False: off)")
    return _apply(Path(path).expanduser())


def configure_default() -> None:
    """What ``import bayesrank`` does (see the module docstring, rules 2-4).

    Imports nothing heavy: before JAX is imported it sets JAX's own environment
    variables (``JAX_COMPILATION_CACHE_DIR``, ``JAX_ENABLE_COMPILATION_CACHE``,
    ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``), which JAX reads when it is
    imported (and subprocesses inherit); afterwards it updates ``jax.config``.
    """
    env = os.environ.get("BAYESRANK_CACHE_DIR")
    if env is None and os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return  # the user's own JAX setting
    path = default_cache_dir() if env is None else (Path(env).expanduser() if env else None)
    if "jax" in sys.modules:
        import jax

        if env is None and jax.config.jax_compilation_cache_dir:
            return
        _apply(path)
        return
    if path is None:
        os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
        return
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(path)
    os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"] = str(MAX_BYTES)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                          str(MIN_COMPILE_SECONDS))
