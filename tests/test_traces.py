"""Experiments that evolve over steps record a trace (rows with a step) that a figure draws against steps."""

import numpy as np

from simcomm import runner, spec
from simcomm.experiments import get_experiment

_NOISY = """
[experiment]
name = "noisy_consensus"
replicates = 2
[params]
n = 8
d = 4
burn_in = 20
steps = 40
{extra}
[grid]
topology = ["ring", "one_peer_exponential"]
"""


def test_noisy_consensus_traces_a_time_varying_topology_and_keeps_its_end_state():
    exp = get_experiment("noisy_consensus")
    base = dict(topology="one_peer_exponential", n=8, d=4, lr=0.1, sigma=1.0, burn_in=20, steps=40, lazy=False)
    plain = exp.func(dict(base, record_every=0), np.random.default_rng(3), None)
    traced = exp.func(dict(base, record_every=10), np.random.default_rng(3), None)
    assert plain == traced[:1]  # the end state is the same number, trace or not
    trace = traced[1:]
    assert [r["step"] for r in trace] == [0, 10, 20, 30, 40, 50, 60]
    assert all(r["metric"] == "consensus" for r in trace) and trace[0]["value"] == 0.0
    # the time average of the trace's stationary part is of the order of the averaged end state
    assert all(r["value"] > 0 for r in trace[1:])


def test_a_trace_switch_at_its_default_leaves_the_table_unchanged_and_on_adds_step_rows():
    off = runner.run(spec.loads(_NOISY.format(extra=""), name="nc"), backend="numpy")
    assert "record_every" not in off.table.columns and "step" not in off.table.columns
    on = runner.run(spec.loads(_NOISY.format(extra="record_every = 20"), name="nc"), backend="numpy")
    ends = on.table[on.table["step"].isna()]
    assert ends["value"].tolist() == off.table["value"].tolist()  # same streams: same end states
    steps = on.table[on.table["metric"] == "consensus"]
    assert sorted(steps["step"].unique().tolist()) == [0, 20, 40, 60]
    assert set(steps["topology"]) == {"ring", "one_peer_exponential"}


def test_the_trace_draws_against_steps():
    import matplotlib

    matplotlib.use("Agg")
    from simcomm.plotting import trace_figure

    res = runner.run(spec.loads(_NOISY.format(extra="record_every = 10"), name="nc"), backend="numpy")
    fig = trace_figure(res.table, "consensus")
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2 and ax.get_xlabel() == "step"
    assert ax.get_lines()[0].get_xdata().tolist() == [0, 10, 20, 30, 40, 50, 60]


def test_dsgd_run_traces_every_record_and_keeps_its_end_rows():
    exp = get_experiment("dsgd_run")
    p = dict(n=4, d=3, problem="diagonal", topology="one_peer_exponential", steps=6, lr=0.1, beta=0.0, sigma=1.0,
             b=1.0, record_every=2, noise="stream")
    plain = exp.func(dict(p, trace=False), np.random.default_rng(0), "numpy")
    traced = exp.func(dict(p, trace=True), np.random.default_rng(0), "numpy")
    ends = [r for r in traced if "step" not in r]
    assert [(r["metric"], r["value"]) for r in ends if "seconds" not in r["metric"]] == \
           [(r["metric"], r["value"]) for r in plain if "seconds" not in r["metric"]]
    for m in ("consensus", "subopt", "node_grad_norm_sq"):
        rows = [r for r in traced if r["metric"] == m and "step" in r]
        assert [r["step"] for r in rows] == [0, 2, 4, 6]
        assert rows[-1]["value"] == next(r["value"] for r in ends if r["metric"] == m)  # the curve ends at T
