"""Network time model (issue 18): patterns against phase-level simulation and theory, stragglers, async clocks."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from simcomm._errors import UserError
from simcomm.network import (
    Network,
    Straggler,
    add_time,
    allgather_time,
    async_delays,
    comm_time,
    gossip_time,
    phase_time,
    ps_time,
    ring_allreduce_time,
    sync_step_times,
)
from simcomm.topology import exponential, one_peer_exponential, ring
from theory import network as th

NET = Network(alpha=2e-5, beta=1e-9)


def _shift_phase(n, nbytes):
    """Every node sends nbytes[i] to its ring successor."""
    src = np.arange(n)
    return sp.coo_array((np.broadcast_to(nbytes, (n,)).astype(float), (src, (src + 1) % n)), shape=(n, n))


@pytest.mark.parametrize("n", [2, 5, 16])
def test_ring_patterns_equal_phase_simulation_and_theory(n):
    b = 8e5 * n  # divisible chunks
    sim = sum(phase_time(_shift_phase(n, b / n), NET) for _ in range(2 * (n - 1)))
    assert ring_allreduce_time(n, b, NET) == pytest.approx(sim, rel=1e-12)
    assert ring_allreduce_time(n, b, NET) == pytest.approx(th.ring_allreduce_time(n, b, NET.alpha, NET.beta))
    sizes = np.random.default_rng(n).integers(1000, 5000, size=n).astype(float)
    sim_ag = sum(phase_time(_shift_phase(n, np.roll(sizes, s)), NET) for s in range(n - 1))
    assert allgather_time(n, sizes, NET) == pytest.approx(sim_ag, rel=1e-12)
    assert allgather_time(n, 3e3, NET) == pytest.approx(th.allgather_time(n, 3e3, NET.alpha, NET.beta))


def test_gossip_sends_one_message_per_out_neighbour():
    n, b = 16, 1e6
    static, onepeer = exponential(n), one_peer_exponential(n)
    assert gossip_time(static, b, NET) == pytest.approx(th.gossip_step_time(4, b, NET.alpha, NET.beta))
    for k in range(onepeer.period):
        assert gossip_time(onepeer, b, NET, k) == pytest.approx(th.gossip_step_time(1, b, NET.alpha, NET.beta))
    assert gossip_time(ring(n), b, NET) == pytest.approx(th.gossip_step_time(2, b, NET.alpha, NET.beta))
    # without a NIC limit the messages go in parallel: one message's time
    assert gossip_time(static, b, Network(NET.alpha, NET.beta, nic_beta=0.0)) == pytest.approx(NET.alpha + NET.beta * b)


def test_parameter_server_incast_and_per_link_arrays():
    n, b = 8, 1e6
    assert ps_time(n, b, 0.0, NET) == pytest.approx(NET.alpha + n * NET.beta * b)
    S = sp.coo_array((np.full(n, b), (np.arange(n), np.full(n, n))), shape=(n + 1, n + 1))
    assert phase_time(S, NET) == pytest.approx(ps_time(n, b, 0.0, NET))
    # per-link arrays: one slow link sets the phase time
    beta = np.full((4, 4), 1e-9)
    beta[2, 3] = 1e-6
    net = Network(1e-5, beta, nic_beta=1e-9)
    assert phase_time(_shift_phase(4, 1e3), net) == pytest.approx(1e-5 + 1e-6 * 1e3)
    with pytest.raises(UserError, match="per-link"):
        ring_allreduce_time(4, 1e3, net)


@pytest.mark.parametrize("kw, msg", [
    (dict(alpha=-1.0, beta=1e-9), "alpha = -1.0 is not allowed"),
    (dict(alpha=1e-5, beta=math.inf), "beta = inf is not allowed"),
    (dict(alpha=math.nan, beta=1e-9), "alpha = nan is not allowed"),
    (dict(alpha=1e-5, beta=1e-9, nic_beta=-2.0), "nic_beta"),
])
def test_bad_network(kw, msg):
    with pytest.raises(UserError, match=msg):
        Network(**kw)


@pytest.mark.parametrize("kw, msg", [
    (dict(dist="pareto", shift=1.0), "unknown straggler distribution"),
    (dict(dist="shifted_exp", shift=1.0, scale=0.0), "needs scale > 0"),
    (dict(dist="shifted_exp", shift=-1.0, scale=1.0), "shift = -1.0"),
    (dict(dist="constant", shift=1.0, scale=2.0), "takes no scale"),
])
def test_bad_straggler(kw, msg):
    with pytest.raises(UserError, match=msg):
        Straggler(**kw)


def test_synchronous_steps_wait_for_the_slowest():
    n, steps = 16, 4000
    c = Straggler("shifted_exp", shift=1e-3, scale=2e-4).draw((steps, n), rng=1)
    t = sync_step_times(c, 5e-4)
    assert t.shape == (steps,)
    # E max = shift + scale H_n (theory); the max of exponentials has sd scale*sqrt(sum 1/i^2) < scale*1.3,
    # so the mean of 4000 steps is within 5 standard errors with overwhelming probability
    se = 2e-4 * math.sqrt(sum(1 / i**2 for i in range(1, n + 1))) / math.sqrt(steps)
    assert abs(t.mean() - 5e-4 - th.expected_max_compute(n, 1e-3, 2e-4)) < 5 * se


def _event_sim(c, up, down):
    """Reference: a priority queue of worker arrivals, applied one by one."""
    import heapq

    M, n = c.shape
    version, heap, out = 0, [], []
    nxt = [0] * n
    read_version = [0] * n
    for i in range(n):
        heapq.heappush(heap, (c[0, i] + up, i))
    while heap:
        t, i = heapq.heappop(heap)
        out.append((i, version - read_version[i]))
        version += 1
        nxt[i] += 1
        if nxt[i] < M:
            read_version[i] = version
            heapq.heappush(heap, (t + down + c[nxt[i], i] + up, i))
    return out


def test_async_delays_match_an_event_simulation():
    c = np.random.default_rng(4).exponential(1.0, size=(30, 5)) + 0.1
    w, tau, t = async_delays(c, up=0.05, down=0.02)
    ref = _event_sim(c, 0.05, 0.02)
    assert w.tolist() == [i for i, _ in ref]
    assert tau.tolist() == [d for _, d in ref]
    assert np.all(np.diff(t) >= 0)


def test_add_time_is_the_cumulative_step_time():
    table = pd.DataFrame({"step": [0, 5, 10], "loss": [1.0, 0.5, 0.2]})
    out = add_time(table, nbytes=4e6, pattern="ring_allreduce", net=NET, n=8,
                   straggler=Straggler("constant", shift=1e-3))
    per = 1e-3 + ring_allreduce_time(8, 4e6, NET)
    np.testing.assert_allclose(out["time"], [0.0, 5 * per, 10 * per])
    assert "time" not in table
    g = add_time({"step": np.array([0, 3])}, nbytes=1e6, pattern="gossip", topology="one_peer_exponential",
                 net=NET, n=16)
    assert g["time"][1] == pytest.approx(3 * (NET.alpha + NET.beta * 1e6))
    with pytest.raises(UserError, match="unknown pattern"):
        comm_time("tree", 4, 1e3, NET)


# ------------------------------------------------------------- [network] times every trace (issue 18)
def test_trace_time_equals_add_time_per_group():
    """Trace rows (cumulative bits of one node at recorded steps) get add_time's column, per method.

    The bytes between two recorded steps are spread evenly; with a constant message size that is
    exactly add_time of that size. Both groups share the straggler draws (same rng, same columns).
    """
    from simcomm.network import trace_time

    steps = [0, 3, 10, 20]
    rows = [dict(metric="loss", value=1.0, method=m, step=s, bits=8.0 * b * s, pattern=p)
            for m, b, p in (("sgd", 4e6, "ring_allreduce"), ("top_k", 2e4, "allgather")) for s in steps]
    rows.append(dict(metric="final", value=0.5))  # not trace rows: unchanged
    rows.append(dict(metric="comp_error", value=0.1, method="sgd", step=5, bits=float("nan")))
    net = {"alpha": 2e-5, "beta": 1e-9, "compute_shift": 1e-3, "compute_scale": 5e-4}
    out = trace_time(rows, net, {"n": 8}, rng=np.random.default_rng(3))
    assert out[-2:] == rows[-2:] and "time" not in rows[0]
    strag = Straggler("shifted_exp", 1e-3, 5e-4)
    for m, b, p in (("sgd", 4e6, "ring_allreduce"), ("top_k", 2e4, "allgather")):
        want = add_time({"step": np.array(steps)}, nbytes=b, pattern=p, net=NET, n=8, straggler=strag,
                        rng=np.random.default_rng(3))["time"]
        got = [r["time"] for r in out if r.get("method") == m and r["metric"] == "loss"]
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # default pattern (allgather) from the table, cell params win over the table
    plain = [dict(metric="loss", value=1.0, step=s, bits=800.0 * s) for s in (0, 4)]
    got = trace_time(plain, {"alpha": 1.0, "beta": 1.0}, {"n": 3, "alpha": 2e-5, "beta": 1e-9}, rng=0)
    assert got[1]["time"] == pytest.approx(4 * allgather_time(3, 100.0, NET))


def test_trace_time_bad_trace_is_one_line():
    from simcomm.network import trace_time

    rows = [dict(metric="loss", value=1.0, step=s, bits=b) for s, b in ((0, 0.0), (5, 80.0), (9, 40.0))]
    with pytest.raises(UserError, match="cumulative bits one node has sent"):
        trace_time(rows, {"alpha": 1e-5, "beta": 1e-9}, {"n": 4}, rng=0)


def test_network_table_times_the_compression_pays_traces():
    """sims/net_compression_pays.toml (quick grid, shortened): its [network] table adds `time` to the
    train_loss trace rows without being asked, and with constant compute times (no draws) the time at
    each method's hitting step is exactly the experiment's own time_to_target."""
    from simcomm.runner import run
    from simcomm.spec import load

    spec = load("sims/net_compression_pays.toml", quick=True,
                overrides=("beta=1e-6", "replicates=2", "compute_scale=0.0", "steps=120", "target_loss=0.3"))
    t = run(spec, backend="numpy").table
    t = t[t.replicate == 0]  # a claim's spec needs 2 replicates; one is enough here
    tl = t[t.metric == "train_loss"]
    assert set(tl.method) == {"sgd", "top_k"} and tl["time"].notna().all()
    assert t.loc[t.metric != "train_loss", "time"].isna().all()
    topk_first = bool(t.loc[t.metric == "topk_predicted_faster", "value"].iloc[0])
    label = {"top_k": "predicted_faster" if topk_first else "predicted_slower"}
    label["sgd"] = "predicted_slower" if topk_first else "predicted_faster"
    for method, lab in label.items():
        tt = t[(t.metric == "time_to_target") & (t.prediction == lab)]
        st = t[(t.metric == "steps_to_target") & (t.prediction == lab)]
        at = tl[(tl.method == method) & (tl.step == st["value"].iloc[0])]
        assert at["time"].iloc[0] == pytest.approx(tt["value"].iloc[0], rel=1e-12)
        assert np.all(np.diff(tl[tl.method == method].sort_values("step")["time"]) > 0)
    # the same spec without its [network] table: no time column
    text = Path("sims/net_compression_pays.toml").read_text()
    head, _, rest = text.partition("[network]")
    rest = rest[rest.index("[grid]"):]
    from simcomm.spec import loads

    bare = loads(head.replace("target_loss = 0.1", "target_loss = 0.3\nalpha = 1e-5\ncompute_shift = 1e-4\n"
                              "compute_scale = 0.0") + rest, quick=True, overrides=("beta=1e-6", "replicates=2",
                                                                                   "steps=120"))
    assert bare.network is None
    assert "time" not in run(bare, backend="numpy").table


def test_trace_figure_draws_time_on_x_and_names_a_missing_column(tmp_path, capsys):
    """A figure can use the simulated time as x: one line per method, at each step the replicate means."""
    from simcomm.cli import main
    from simcomm.plotting import trace_figure
    from simcomm.results import Results

    rows = [dict(metric="train_loss", value=1.0 / (1 + s + r), method=m, step=s, bits=8.0 * s,
                 time=(2.0 if m == "sgd" else 1.0) * s + 0.1 * r, replicate=r, beta=1e-9)
            for m in ("sgd", "top_k") for r in (0, 1) for s in range(0, 20, 5)]
    rows.append(dict(metric="time_to_target", value=3.0, replicate=0, beta=1e-9))
    table = pd.DataFrame(rows)
    fig = trace_figure(table, "train_loss", x="time")
    lines = fig.axes[0].get_lines()
    assert [ln.get_label() for ln in lines] == ["method = sgd", "method = top_k"]
    np.testing.assert_allclose(lines[0].get_xdata(), [0.05, 10.05, 20.05, 30.05])  # mean time per step
    np.testing.assert_allclose(lines[1].get_ydata()[1], (1 / 6 + 1 / 7) / 2)
    with pytest.raises(UserError, match="no 'time' column .*\\[network\\]"):
        trace_figure(table.drop(columns="time"), "train_loss", x="time")
    with pytest.raises(UserError, match="trace metrics here: train_loss"):
        trace_figure(table, "test_accuracy")
    folder = Results(table, {"spec": {"name": "t"}}).write(tmp_path / "res")
    with pytest.raises(SystemExit) as exc:
        main(["plot", str(folder), "--trace", "train_loss", "--x", "time", "--logx", "-o", str(tmp_path / "t.png")])
    assert exc.value.code == 0 and (tmp_path / "t.png").stat().st_size > 0
