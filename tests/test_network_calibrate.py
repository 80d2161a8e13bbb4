"""``simcomm net calibrate`` (issue 18): a short MPI run writes a usable [network] file; bad input writes nothing."""

import json

import pytest

from simcomm.cli import main
from simcomm.network import Network
from simcomm.network._calibrate import fit_alpha_beta


def _run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["net", "calibrate", *args])
    return exc.value.code, capsys.readouterr()


def test_fit_recovers_alpha_beta():
    sizes = [8, 1024, 65536, 1048576]
    a, b = fit_alpha_beta(sizes, [2e-6 + 3e-10 * s for s in sizes])
    assert a == pytest.approx(2e-6, rel=1e-9) and b == pytest.approx(3e-10, rel=1e-9)
    # ring model: t = 2(n-1)(alpha + beta b/n)
    a, b = fit_alpha_beta(sizes, [6 * (2e-6 + 3e-10 * s / 4) for s in sizes], scale=6, per_byte=0.25)
    assert a == pytest.approx(2e-6, rel=1e-9) and b == pytest.approx(3e-10, rel=1e-9)


@pytest.mark.parametrize("args, msg", [
    (["--mpiexec", "/nonexistent/mpiexec"], "is not an executable file"),
    (["--np", "1"], "--np 1 is not allowed"),
    (["--sizes", "8,abc"], "is not a comma-separated list"),
    (["--sizes", "8"], "at least two message sizes"),
    (["--reps", "0"], "--reps 0 is not allowed"),
])
def test_bad_input_writes_nothing(args, msg, tmp_path, capsys):
    out = tmp_path / "net.toml"
    code, cap = _run([*args, "-o", str(out)], capsys)
    assert code == 2 and msg in cap.err and "Traceback" not in cap.err and cap.err.count("\n") == 1
    assert not out.exists()


def test_missing_mpiexec_is_one_line(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    out = tmp_path / "net.toml"
    code, cap = _run(["-o", str(out)], capsys)
    assert code == 2 and "mpiexec not found" in cap.err and not out.exists()


@pytest.mark.mpi
def test_calibrate_on_loopback(tmp_path, capsys):
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (the mpi extra)")
    from simcomm._errors import UserError
    from simcomm.network._calibrate import find_mpiexec

    try:
        find_mpiexec()
    except UserError:
        pytest.skip("mpiexec not found (the mpi extra)")
    out = tmp_path / "net.toml"
    code, cap = _run(["--sizes", "8,65536,1048576", "--reps", "3", "-o", str(out), "--json"], capsys)
    assert code == 0, cap.err
    res = json.loads(cap.out)
    assert res["n"] == 2 and len(res["pingpong"]) == 3
    net = Network.from_toml(out)
    assert net.alpha == res["alpha"] and net.beta == res["beta"]
    assert net.alpha >= 0 and net.beta >= 0


SPEC = """
[experiment]
name = "allgather_crossover"
[params]
n = 8
d = 1000
[network]
{net}
"""


def test_spec_network_table_sets_alpha_beta(tmp_path, monkeypatch):
    from simcomm.spec import load

    monkeypatch.chdir(tmp_path)  # a calibration file is found relative to where simcomm runs
    (tmp_path / "net.toml").write_text("[network]\nalpha = 2e-6\nbeta = 3e-10\n")
    for net, want in (("alpha = 1e-5\nbeta = 1e-9", (1e-5, 1e-9)), ('file = "net.toml"', (2e-6, 3e-10)),
                      ('file = "net.toml"\nbeta = 5e-9', (2e-6, 5e-9))):
        (tmp_path / "s.toml").write_text(SPEC.format(net=net))
        spec = load(tmp_path / "s.toml")
        assert (spec.params["alpha"], spec.params["beta"]) == want


@pytest.mark.parametrize("net, msg", [
    ("alpha = -1.0\nbeta = 1e-9", "'alpha' = -1.0 is not allowed"),
    ("alpha = 1e-6\nbeta = inf", "'beta' = inf is not allowed"),
    ("alpha = 1e-6", "needs alpha and beta"),
    ('file = "missing.toml"', "cannot read network file"),
    ("alpha = 1e-6\nbeta = 1e-9\nlatency = 3", "unknown key 'latency'"),
])
def test_spec_network_table_bad_input(net, msg, tmp_path):
    from simcomm._errors import SpecError
    from simcomm.spec import load

    (tmp_path / "s.toml").write_text(SPEC.format(net=net))
    with pytest.raises(SpecError, match=msg):
        load(tmp_path / "s.toml")


@pytest.mark.mpi
def test_model_vs_mpi_rows():
    # skipped only where mpiexec is missing: with mpiexec present, a missing mpi4py is a broken mpi
    # extra and the measurement's note below fails the test
    import numpy as np

    from simcomm._errors import UserError
    from simcomm.experiments import get_experiment
    from simcomm.network._calibrate import find_mpiexec

    try:
        find_mpiexec()
    except UserError:
        pytest.skip("mpiexec not found (the mpi extra)")
    e = get_experiment("model_vs_mpi")
    rows = e.func(e.validate({"n": 2, "nbytes": 65536, "reps": 2}, "test"), np.random.default_rng(0), "numpy")
    assert "note" not in rows[0], rows[0]["note"]  # with mpiexec present a failed measurement is a failure
    ar = rows[0]
    assert ar["metric"] == "allreduce_time" and ar["value"] > 0 and ar["alpha"] >= 0 and ar["beta"] >= 0


def test_model_vs_mpi_without_mpiexec_is_a_noted_nan(monkeypatch, tmp_path):
    import sys

    import numpy as np

    from simcomm.experiments import get_experiment

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    e = get_experiment("model_vs_mpi")
    (row,) = e.func(e.validate({"n": 2}, "test"), np.random.default_rng(0), "numpy")
    assert np.isnan(row["value"]) and "mpiexec not found" in row["note"]


# ------------------------------------------------------- MPI DSGD exchange time vs the model (issue 18)
NET = Network(alpha=5e-6, beta=2e-10)


def test_dsgd_comm_prediction_follows_the_mpi_exchange():
    """Circulant layers: one Sendrecv phase per nonzero offset (static exponential n = 8: offsets 1, 2, 4);
    one-peer: one message per step; parallel: a ring allreduce; a sparse graph: one gossip phase."""
    from simcomm.network import dsgd_comm_prediction, gossip_time, ring_allreduce_time
    from simcomm.topology import build

    d = 1000
    msg = NET.alpha + NET.beta * 8 * d
    assert dsgd_comm_prediction("exponential", 8, d, NET, 5) == pytest.approx([3 * msg] * 5, rel=1e-12)
    assert dsgd_comm_prediction("one_peer_exponential", 8, d, NET, 6) == pytest.approx([msg] * 6, rel=1e-12)
    assert dsgd_comm_prediction("ring", 8, d, NET, 2) == pytest.approx([2 * msg] * 2, rel=1e-12)
    assert dsgd_comm_prediction("parallel", 8, d, NET, 3) == pytest.approx([ring_allreduce_time(8, 8 * d, NET)] * 3)
    star = build("star", 6)
    got = dsgd_comm_prediction("star", 6, d, NET, 2)
    assert got == pytest.approx([gossip_time(star, 8 * d, NET)] * 2)
    assert got[0] == pytest.approx(NET.alpha + 5 * NET.beta * 8 * d)  # the hub's NIC carries 5 messages


def test_net_compare_reads_a_result_and_bad_input_is_one_line(tmp_path, capsys):
    import numpy as np

    from simcomm.network import compare_dsgd_comm

    measured = np.array([1.0, 2e-4, 3e-4, 4e-4])  # a slow first step (connection setup): the median ignores it
    np.savez(tmp_path / "r.npz", x=np.zeros((4, 100)), comm_time=measured, topology=np.str_("ring"))
    (tmp_path / "net.toml").write_text("[network]\nalpha = 5e-6\nbeta = 2e-10\n")
    res = compare_dsgd_comm(tmp_path / "r.npz", NET)
    pred = 2 * (NET.alpha + NET.beta * 800)
    assert res["predicted"] == pytest.approx([pred] * 4) and res["ratio"] == pytest.approx(3.5e-4 / pred)
    with pytest.raises(SystemExit) as exc:
        main(["net", "compare", str(tmp_path / "r.npz"), "--network", str(tmp_path / "net.toml"), "--json"])
    assert exc.value.code == 0
    assert json.loads(capsys.readouterr().out)["ratio"] == pytest.approx(res["ratio"])
    np.savez(tmp_path / "old.npz", x=np.zeros((4, 100)))
    for path, msg in ((tmp_path / "missing.npz", "cannot read the MPI DSGD result"),
                      (tmp_path / "old.npz", "has no 'comm_time'")):
        with pytest.raises(SystemExit) as exc:
            main(["net", "compare", str(path), "--network", str(tmp_path / "net.toml")])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and msg in err and "Traceback" not in err
