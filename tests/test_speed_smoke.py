"""The speed smoke (benchmarks/speed_smoke.py) runs and prints every row; it asserts no time."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "speed_smoke.py"


def test_speed_smoke_runs_on_small_sizes(capsys):
    spec = importlib.util.spec_from_file_location("speed_smoke", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--small", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    for row in ("top-k indices", "dense top_k", "QSGD", "ternary", "fp16", "min-max uint8", "DmSGD step"):
        assert row in out, row
    assert "load average" in out
