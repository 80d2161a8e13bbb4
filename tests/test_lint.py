"""The repository stays ruff-clean under its own configuration ([tool.ruff] in pyproject.toml)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean():
    # The test extra installs ruff, so CI always runs this; skip only where ruff is truly absent.
    pytest.importorskip("ruff", reason="ruff is not installed; install the test extra: pip install -e '.[test]'")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", str(ROOT)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, f"ruff check reports problems (fix them, or see its output):\n{r.stdout}{r.stderr}"
