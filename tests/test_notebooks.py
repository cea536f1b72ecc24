"""Execute every tutorial notebook at its quick scale; any error fails the test.

Each notebook runs in a fresh kernel started with this interpreter (a kernel spec
written to a temporary folder points at ``sys.executable``, so the notebooks use the
same environment as the tests, whatever kernels the user has installed), from the
``notebooks`` folder, with the Agg backend. A cell ``QUICK = True`` is injected after
the cell tagged ``parameters``. The committed notebooks must carry no outputs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
KERNEL_NAME = "bayesrank-test"


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory) -> Path:
    """A folder holding one kernel spec that launches this interpreter."""
    root = tmp_path_factory.mktemp("kernels")
    spec = root / KERNEL_NAME
    spec.mkdir()
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [
                    sys.executable,
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                ],
                "display_name": "bayesrank test kernel",
                "language": "python",
                "env": {"MPLBACKEND": "Agg"},
            }
        )
    )
    return root


def _parameter_index(nb) -> int:
    tagged = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])
    ]
    assert len(tagged) == 1, "expected exactly one cell tagged 'parameters'"
    return tagged[0]


def test_notebooks_found():
    names = [p.name for p in NOTEBOOKS]
    assert names == [
        "01_quickstart.ipynb",
        "02_custom_numpyro_model.ipynb",
        "03_reproducing_the_paper.ipynb",
        "04_prior_sensitivity.ipynb",
        "05_layered_graph.ipynb",
        "06_calibration.ipynb",
        "07_real_items.ipynb",
        "08_unknown_w.ipynb",
        "09_evaluate_before_deploy.ipynb",
        "10_click_models.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: a code cell has stored outputs"
            assert cell.execution_count is None, f"{path.name}: stored execution count"
    src = nb.cells[_parameter_index(nb)].source
    assert "QUICK" in src, f"{path.name}: the parameters cell must set QUICK"


#: Notebooks whose quick scale takes 30-60 s on a cold cache: run with ``-m slow``
#: (CI keeps the default suite under 10 minutes). What they call is tested in the
#: default suite (the reproduce parts, NUTS, the sensitivity sweep, calibration and
#: the OBD study have their own tests); the quickstart and the layered graph stay.
SLOW_NOTEBOOKS = {"02_custom_numpyro_model", "03_reproducing_the_paper",
                  "04_prior_sensitivity", "06_calibration", "07_real_items",
                  "10_click_models"}


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW_NOTEBOOKS else p
     for p in NOTEBOOKS],
    ids=lambda p: p.stem,
)
def test_notebook_runs(path, kernel_dir):
    nb = nbformat.read(path, as_version=4)
    i = _parameter_index(nb)
    nb.cells.insert(
        i + 1, nbformat.v4.new_code_cell("QUICK = True  # injected by the test")
    )
    km = KernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)]),
    )
    assert km.kernel_spec.argv[0] == sys.executable
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=600,
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    before = set(os.listdir(NOTEBOOK_DIR))
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError on any error
    elapsed = time.perf_counter() - start
    print(f"{path.name}: {elapsed:.1f} s")
    executed = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in executed)
    assert set(os.listdir(NOTEBOOK_DIR)) == before, "the notebook left files behind"
    # progress=False means no bar and no tqdm warning (tqdm.auto warns on import in
    # a kernel without ipywidgets)
    streams = [
        o.get("text", "")
        for c in executed
        for o in c.outputs
        if o.get("output_type") == "stream"
    ]
    assert not any("IProgress not found" in t or "TqdmWarning" in t for t in streams)
