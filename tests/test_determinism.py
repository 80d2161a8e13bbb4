"""Same seed, same table: across runs, across --jobs 1 and --jobs 2, across executors."""

from pathlib import Path

import pandas as pd
import pytest

from simcomm.runner import make_map, run
from simcomm.spec import load

SIMS = Path(__file__).resolve().parents[1] / "sims"
SPECS = ["expgraph_noisy_consensus.toml", "rtopk_mse_exact.toml", "is_unbiased.toml", "urq_unbiased.toml"]


@pytest.mark.parametrize("name", [s for s in SPECS if (SIMS / s).is_file()])
def test_same_seed_same_table_serial_and_two_processes(name):
    spec = load(SIMS / name, quick=True)
    first = run(spec).table
    pd.testing.assert_frame_equal(first, run(spec).table)
    loky, _ = make_map(2)
    pd.testing.assert_frame_equal(first, run(spec, map=loky).table)


def test_numpy_and_numba_backends_agree_on_a_claim_table():
    spec = load(SIMS / "rtopk_mse_exact.toml", quick=True)
    a = run(spec, backend="numpy").table
    b = run(spec, backend="numba").table
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-9)
