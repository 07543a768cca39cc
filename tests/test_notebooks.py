"""Every walkthrough in notebooks/ executes without error (so they never rot); each notebook
asserts on what it prints, so a notebook that prints garbage fails here. A notebook whose
metadata has ``"requires_shared_data": true`` is skipped, with the reason, when the shared data
directory (``$JAXCONTACT_SHARED/data``, default ``../shared/data``) is absent."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the slow tier (docs/testing.md)

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, shared_dir):
    nb = nbformat.read(path, as_version=4)
    if nb.metadata.get("requires_shared_data") and not (shared_dir / "data").is_dir():
        pytest.skip(f"{path.name} needs the shared data, {shared_dir / 'data'} is absent "
                    "(set JAXCONTACT_SHARED to the directory holding data/)")
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
