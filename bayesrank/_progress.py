"""Progress bars for long work, one way everywhere.

:func:`progress` gives:

* in a Jupyter kernel (with ipywidgets), tqdm's widget bar;
* on a terminal, tqdm's text bar (redrawn in place);
* when the stream is not a terminal (a log file, a CI job, ``2> run.log``), plain lines:
  one when the work starts, one at most every :data:`LINE_EVERY` seconds or each tenth
  of the total, and one at the end, so a file holds a readable record instead of
  thousands of ``\\r`` redraws;
* with ``enabled=False``, an object that does nothing.

tqdm is imported only when a bar is drawn.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> with progress(4, "demo", unit="run", file=out) as bar:
    ...     for _ in range(4):
    ...         bar.update(1)
    >>> print(out.getvalue().splitlines()[-1].split(" (")[0])
    demo: 4/4 run
    >>> "\\r" in out.getvalue()
    False
"""

from __future__ import annotations

import importlib.util
import sys
import time

__all__ = ["LINE_EVERY", "progress"]

#: Seconds between two lines when progress goes to a file.
LINE_EVERY = 30.0


class _Off:
    def update(self, n: int = 1) -> None:
        pass

    def set_description(self, desc: str, refresh: bool = True) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Lines(_Off):
    """Progress as whole lines (for streams that are not terminals)."""

    def __init__(self, total, desc: str, unit: str, file):
        self.total, self.desc, self.unit, self.file = total, desc, unit, file
        self.n, self.postfix, self.closed = 0, "", False
        self.start = self.last = time.monotonic()
        self._step = max(1, (total or 0) // 10)
        self._next = self._step
        self._line()

    def _line(self) -> None:
        of = f"/{self.total}" if self.total else ""
        tail = f", {self.postfix}" if self.postfix else ""
        took = time.monotonic() - self.start
        print(f"{self.desc}: {self.n}{of} {self.unit} ({took:.0f} s{tail})",
              file=self.file, flush=True)
        self.last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.n >= self._next or time.monotonic() - self.last >= LINE_EVERY:
            while self._next <= self.n:
                self._next += self._step
            if not (self.total and self.n >= self.total):  # the end gets its own line
                self._line()

    def set_description(self, desc: str, refresh: bool = True) -> None:
        self.desc = desc

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._line()


def _in_notebook() -> bool:
    """A Jupyter kernel is running this code (not merely ipykernel imported)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def progress(total, desc: str, *, unit: str = "it", enabled: bool = True, file=None,
             **kwargs):
    """A progress bar for ``total`` steps (see the module docstring); extra keyword
    arguments go to tqdm (terminal and notebook bars only)."""
    if not enabled:
        return _Off()
    file = sys.stderr if file is None else file
    if _in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=False, **kwargs)
    if hasattr(file, "isatty") and file.isatty():
        from tqdm.std import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=False, file=file, **kwargs)
    return _Lines(total, desc, unit, file)
