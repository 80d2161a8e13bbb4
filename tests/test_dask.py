"""Dask executor: same tables as the default executor; a killed worker loses nothing."""

import os
import signal
import threading
import time

import pandas as pd
import pytest

import tests._toy  # noqa: F401
from simcomm.runner import make_map, run
from simcomm.spec import loads

distributed = pytest.importorskip("dask.distributed", reason="the dist extra (dask[distributed]) is not installed")

SPEC = """
[experiment]
name = "toy_mean"
replicates = 3
seed = 11

[grid]
n = [5, 10, 20, 40, 80, 160]
mu = [0.5, 1.5]
"""


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as c:
        yield c


def test_dask_local_cluster_matches_default(cluster):
    spec = loads(SPEC, name="toy", path="toy.toml")
    serial = run(spec).table
    dask_map, _ = make_map(scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(serial, run(spec, map=dask_map).table)


def test_scheduler_local_starts_its_own_cluster():
    spec = loads(SPEC, name="toy", path="toy.toml", overrides=("n=[5, 10]",))
    local, desc = make_map(scheduler="local")
    assert desc == "dask (local)"
    pd.testing.assert_frame_equal(run(spec).table, run(spec, map=local).table)


def test_killed_worker_then_rerun_completes_without_duplicates(cluster, tmp_path):
    spec = loads(SPEC, name="toy", path="toy.toml", overrides=("delay=0.05",))
    expected = run(spec).table
    client = distributed.Client(cluster)
    pids = list(client.run(os.getpid).values())
    client.close()
    dask_map, _ = make_map(scheduler=cluster.scheduler_address)

    def kill_one():
        time.sleep(0.5)  # a few cells are done and cached by then
        os.kill(pids[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_one)
    killer.start()
    try:
        run(spec, map=dask_map, cache_dir=tmp_path)
    except Exception:  # noqa: BLE001 - the sweep may fail when its worker dies; the re-run must recover
        pass
    killer.join()
    cached_before = len(list(tmp_path.rglob("*.json")))
    table = run(spec, map=dask_map, cache_dir=tmp_path).table
    assert 0 < cached_before <= 12
    assert not table.duplicated(subset=["n", "mu", "replicate", "metric", "method"]).any()
    pd.testing.assert_frame_equal(expected, table)
