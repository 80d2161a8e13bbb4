"""The DiLoCo example of docs/torch.md runs as written and trains; its factory passes simcomm conform --kind outer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the example needs the torch extra (pip install torch==2.13.0)")

DOC = Path(__file__).resolve().parents[1] / "docs" / "torch.md"


def _blocks():
    text = DOC.read_text()
    section = text.split("## Local updates (DiLoCo)", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_example_runs_and_trains(capsys):
    example = _blocks()[0]
    ns: dict = {}
    exec(compile(example, str(DOC), "exec"), ns)  # noqa: S102 - the documented example itself
    assert "'rounds': 20" in capsys.readouterr().out
    model, data = ns["model"], ns["data"]
    torch.manual_seed(0)
    start = torch.nn.Linear(8, 1)  # the example's initial model (its first draw after the same seed)
    with torch.no_grad():
        loss = lambda m: sum(float(torch.nn.functional.mse_loss(m(X), y)) for X, y in data)  # noqa: E731
        # it trains: the pilot run ends at 0.0063 of the start's loss (2e-5 uncompressed); 0.05 is far from both
        assert loss(model) < 0.05 * loss(start), (loss(model), loss(start))
    assert float(ns["outer"].residuals().abs().sum()) > 0  # top-3 of 9 left something for later


def test_documented_factory_conforms():
    from simcomm.conform import conform

    example, factory = _blocks()
    ns: dict = {}
    exec(compile("from simcomm.compress import TopK\nfrom simcomm.torch import OuterStep\n" + factory, str(DOC),
                 "exec"), ns)  # noqa: S102
    r = conform(ns["make_outer"], "outer")
    assert set(r.verdicts().values()) == {"holds"}, r.text()
