"""The API reference (docs/api, Sphinx with numpydoc) builds from the docstrings and lists the public names."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_api_reference_builds(tmp_path):
    pytest.importorskip("sphinx", reason="the API reference needs the test extra (sphinx, numpydoc)")
    pytest.importorskip("numpydoc", reason="the API reference needs the test extra (sphinx, numpydoc)")
    src = tmp_path / "api"
    shutil.copytree(ROOT / "docs" / "api", src, ignore=shutil.ignore_patterns("generated", "_build"))
    out = tmp_path / "html"
    res = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    errors = [line for line in res.stderr.splitlines() if "ERROR" in line]
    assert not errors, "\n".join(errors[:10])
    pages = {p.stem for p in (out / "generated").glob("*.html")}
    assert {"simcomm.compress", "simcomm.optim", "simcomm.topology", "theory"} <= pages
    optim = (out / "generated" / "simcomm.optim.html").read_text()
    for name in ("compressed_gd", "run", "build_method", "run_dsgd", "ef_sgd"):
        assert f"simcomm.optim.{name}" in optim, name
