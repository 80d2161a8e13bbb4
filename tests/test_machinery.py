"""Spec validation, runner (seeds, cache, resume, executors), claims judge, report: on a toy experiment."""

import json
import math

import numpy as np
import pandas as pd
import pytest

import tests._toy  # noqa: F401  (registers the toy experiment)
from simcomm import SpecError
from simcomm.claims import Verdict, judge, mean_ci
from simcomm.runner import cell_id, make_map, run, run_many
from simcomm.spec import ClaimSpec, loads

TOY = """
[claim]
id = "toy.mean"
paper = "expgraph"
class = "derived"
statement = "sample mean equals mu"
kind = "equal"
observable = "mean"
bound = "tests._toy:toy_mean"
margin_abs = 0.5

[experiment]
name = "toy_mean"
replicates = 20
seed = 7

[params]
mu = 2.0

[grid]
n = [10, 100, 1000]

[quick]
n = [10, 100]
replicates = 5
"""


def spec(text=TOY, **kw):
    return loads(text, name="toy", path="toy.toml", **kw)


def test_grid_quick_and_overrides():
    s = spec()
    assert [c["n"] for c in s.cells()] == [10, 100, 1000]
    assert s.cells()[0] == {"mu": 2.0, "n": 10, "shape": "normal", "delay": 0.0}  # defaults become explicit
    q = spec(quick=True)
    assert [c["n"] for c in q.cells()] == [10, 100] and q.replicates == 5
    o = spec(overrides=("n=[3]", "replicates=2", "mu=[1.0, 2.0]"))
    assert [(c["n"], c["mu"]) for c in o.cells()] == [(3, 1.0), (3, 2.0)] and o.replicates == 2
    assert s.hash != q.hash and s.hash == spec().hash


@pytest.mark.parametrize("text, message", [
    (TOY.replace("mu = 2.0", "muu = 2.0"), "unknown parameter 'muu' for experiment 'toy_mean' (did you mean 'mu'?)"),
    (TOY.replace("mu = 2.0", 'mu = "x"'), "'mu' = 'x' is not allowed; use a number"),
    (TOY.replace("n = [10, 100, 1000]", "n = [0]"), "'n' = 0 is not allowed; use an integer >= 1"),
    (TOY.replace("n = [10, 100, 1000]", "n = []"), "grid axis 'n' is empty"),
    (TOY.replace('kind = "equal"', 'kind = "equl"'), "kind 'equl' is unknown (did you mean 'equal'?)"),
    (TOY.replace("[plot]", "") + "\n[plto]\n", "unknown table [plto] (did you mean 'plot'?)"),
    (TOY.replace('name = "toy_mean"', 'name = "toy_men"'), "unknown experiment 'toy_men' (did you mean 'toy_mean'?)"),
    (TOY.replace("tests._toy:toy_mean", "tests._toy:nope"), "has no 'nope'"),
    (TOY.replace("seed = 7", "seed = -1"), "'seed' must be >= 0"),
    ("[claim\n", "not valid TOML"),
    (TOY.replace("replicates = 20", "replicates = 2.5"), "'replicates' must be an integer"),
])
def test_spec_errors_are_one_line(text, message):
    with pytest.raises(SpecError) as err:
        spec(text)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("toy.toml")


def test_override_errors():
    with pytest.raises(SpecError, match="unknown key 'nn'.*did you mean 'n'"):
        spec(overrides=("nn=3",))
    with pytest.raises(SpecError, match="expected key=value"):
        spec(overrides=("n",))


def test_seed_streams_independent_of_grid_and_order():
    full = run(spec()).table
    sub = run(spec(overrides=("n=[100]",))).table
    a = full[(full.n == 100) & (full.metric == "mean")]["value"].to_numpy()
    b = sub[sub.metric == "mean"]["value"].to_numpy()
    np.testing.assert_array_equal(a, b)
    assert cell_id({"n": 1}) != cell_id({"n": 2})


def test_cell_id_keys_renamed_parameters_by_their_former_name():
    # a rename must not move any cell to another random stream (results before it stay reproducible)
    from simcomm.experiments import Experiment, Param

    exp = Experiment("renamed", lambda p, rng, be: [], {"lr": Param("float", 0.1, former="gamma"),
                                                         "n": Param("int", 4)})
    assert cell_id({"lr": 0.1, "n": 4}, exp) == cell_id({"gamma": 0.1, "n": 4})
    assert cell_id({"lr": 0.1, "n": 4}, exp) != cell_id({"lr": 0.1, "n": 4})


def test_cell_id_leaves_a_later_parameter_out_at_its_default():
    # a negative-control switch added to an experiment must not move the streams of existing cells
    from simcomm.experiments import Experiment, Param

    exp = Experiment("added", lambda p, rng, be: [], {"n": Param("int", 4),
                                                      "flip": Param("bool", False, keyed_at_default=False)})
    assert cell_id({"n": 4, "flip": False}, exp) == cell_id({"n": 4})
    assert cell_id({"n": 4, "flip": True}, exp) != cell_id({"n": 4})


def test_cache_resume_and_identical_tables(tmp_path):
    s = spec()
    calls = []
    first = run(s, cache_dir=tmp_path, progress=lambda d, t: calls.append((d, t))).table
    assert calls[-1] == (3, 3)
    # A re-run computes nothing: every cell comes from the cache.
    def no_compute(func, items):
        assert list(items) == []
        return iter(())
    again = run(s, cache_dir=tmp_path, map=no_compute).table
    pd.testing.assert_frame_equal(first, again)
    # Losing one cell's cache entry recomputes exactly that cell.
    victims = sorted(tmp_path.rglob("*.json"))
    victims[0].unlink()
    seen = []
    def counting(func, items):
        items = list(items)
        seen.extend(items)
        return map(func, items)
    resumed = run(s, cache_dir=tmp_path, map=counting).table
    assert len(seen) == 1
    pd.testing.assert_frame_equal(first, resumed)


def test_loky_matches_serial():
    s = spec(quick=True)
    serial = run(s).table
    loky, _ = make_map(2)
    parallel = run(s, map=loky).table
    pd.testing.assert_frame_equal(serial, parallel)


def test_run_many_pools_specs():
    a, b = run_many([spec(quick=True), spec(overrides=("n=[5]",))])
    assert set(a.table.n) == {10, 100} and set(b.table.n) == {5}
    assert a.meta["spec_hash"] != b.meta["spec_hash"]
    assert json.dumps(a.meta, default=str)


def test_mean_ci_matches_t_interval():
    v = np.array([1.0, 2.0, 3.0, 4.0])
    m, lo, hi = mean_ci(v, 0.95)
    # t_{0.975, 3} = 3.182446305284263 (scipy reference value), sd = sqrt(5/3)
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2
    assert m == 2.5 and lo == pytest.approx(2.5 - half) and hi == pytest.approx(2.5 + half)


def table(values_by_n, metric="m", column="n"):
    rows = [{column: n, "replicate": r, "metric": metric, "value": v}
            for n, vals in values_by_n.items() for r, v in enumerate(vals)]
    return pd.DataFrame(rows)


def claim(**kw):
    base = dict(id="t", paper="expgraph", statement="s", observable="m", kind="upper", bound="tests._toy:toy_sqrt")
    return ClaimSpec(**{**base, **kw})


def test_upper_lower_equal_verdicts():
    t = table({4: [1.90, 1.91, 1.92], 9: [2.0, 2.5, 2.9]})  # sqrt(4)=2 (99% CI high 1.97), sqrt(9)=3
    j = judge(claim(kind="upper"), t)
    assert j.verdict is Verdict.INCONCLUSIVE  # cell n=9: CI [1.2, 3.8] straddles 3
    assert list(j.cells.verdict) == ["holds", "inconclusive"]
    above = table({4: [2.5, 2.6, 2.7]})
    assert judge(claim(kind="upper"), above).verdict is Verdict.VIOLATED
    assert judge(claim(kind="lower"), above).verdict is Verdict.HOLDS
    straddle = table({4: [1.0, 3.0, 2.0]})
    assert judge(claim(kind="upper"), straddle).verdict is Verdict.INCONCLUSIVE
    exact = table({4: [2.0]})
    assert judge(claim(kind="equal", margin_abs=1e-12), exact).verdict is Verdict.HOLDS
    assert judge(claim(kind="equal", margin_abs=1e-12), table({4: [2.0 + 1e-9]})).verdict is Verdict.VIOLATED
    # strict: equality is not strictly below
    assert judge(claim(kind="upper", strict=True, atol=1e-12), exact).verdict is Verdict.VIOLATED
    assert judge(claim(kind="upper", strict=True, atol=1e-12), table({4: [1.9]})).verdict is Verdict.HOLDS
    nan = table({4: [float("nan")]})
    assert judge(claim(kind="upper"), nan).verdict is Verdict.VIOLATED


def test_ratio_is_tightest():
    t = table({4: [1.0], 9: [2.7]})
    j = judge(claim(kind="upper"), t)
    assert j.ratio == pytest.approx(0.9)


def test_slope_verdicts():
    ns = [4, 16, 64, 256]
    t = table({n: [math.sqrt(n)] for n in ns})
    c = claim(kind="slope", bound="tests._toy:toy_sqrt_slope", slope_in="n", slope_tol=0.05)
    assert judge(c, t).verdict is Verdict.HOLDS
    t2 = table({n: [float(n)] for n in ns})
    assert judge(c, t2).verdict is Verdict.VIOLATED
    # Replicated noisy data: the CI of per-replicate slopes decides.
    rng = np.random.default_rng(3)
    t3 = table({n: list(math.sqrt(n) * np.exp(rng.normal(0, 0.5, 4))) for n in ns})
    assert judge(c, t3).verdict is Verdict.INCONCLUSIVE  # slope CI much wider than +-0.05 around 0.5
    # A replicate with a non-positive value has no log-log slope: the cell is ill-posed, with a reason.
    t4 = table({n: [math.sqrt(n), -1.0 if n == 16 else math.sqrt(n)] for n in ns})
    j4 = judge(c, t4)
    assert j4.verdict is Verdict.ILL_POSED and "no slope" in j4.cells.reason[0]


def test_order_verdicts():
    rows = []
    for r in range(6):
        rows += [{"n": 1, "replicate": r, "metric": "m", "method": "a", "value": 1.0 + 0.01 * r},
                 {"n": 1, "replicate": r, "metric": "m", "method": "b", "value": 2.0 + 0.01 * r}]
    t = pd.DataFrame(rows)
    c = ClaimSpec(id="o", paper="rtopk", statement="a<b", kind="order", observable="m", compare="method",
                  lower="a", higher=("b",), provenance="N")
    j = judge(c, t)
    assert j.verdict is Verdict.HOLDS and j.ratio == pytest.approx(1.025 / 2.025)
    c2 = ClaimSpec(**{**vars(c), "lower": "b", "higher": ("a",)})
    assert judge(c2, t).verdict is Verdict.VIOLATED
    with pytest.raises(SpecError, match="does not occur"):
        judge(ClaimSpec(**{**vars(c), "higher": ("zz",)}), t)


def test_toy_claim_end_to_end_holds():
    s = spec()
    j = judge(s.claim, run(s).table)
    # The CI of a sample mean covers mu with probability 0.99 per cell (3 cells): a failure here
    # would be a bug, and the seed is fixed, so the outcome is deterministic.
    assert j.verdict is Verdict.HOLDS
    assert j.summary()["n_cells"] == 3 and j.summary()["verdict"] == "holds"


def test_order_paired_when_methods_share_a_cell():
    # b = a + 0.1 + small noise per replicate, with a large spread between replicates: the paired
    # interval sees the constant shift, Welch's does not.
    rng = np.random.default_rng(5)
    base = rng.normal(0, 1.0, 8)
    rows = []
    for r in range(8):
        rows += [{"replicate": r, "metric": "m", "method": "a", "value": base[r]},
                 {"replicate": r, "metric": "m", "method": "b", "value": base[r] + 0.1 + 0.001 * rng.normal()}]
    t = pd.DataFrame(rows)
    c = ClaimSpec(id="o", paper="rtopk", statement="a<b", kind="order", observable="m", compare="method",
                  lower="a", higher=("b",), provenance="N")
    assert judge(c, t).verdict is Verdict.HOLDS  # 'method' is not a spec parameter: paired
    assert judge(c, t, cell_params={"method"}).verdict is Verdict.INCONCLUSIVE  # independent cells: Welch


def test_cell_table_keeps_a_parameter_called_n():
    # Regression: the per-cell replicate count once overwrote a grid parameter named 'n'.
    j = judge(claim(kind="upper"), table({4: [1.0, 1.1], 9: [2.0, 2.1]}))
    assert sorted(j.cells["n"]) == [4, 9] and list(j.cells["n_rep"]) == [2, 2]


def test_code_version_ignores_other_experiment_modules_and_tracks_user_modules():
    from simcomm.runner import code_version

    # different experiment modules get different versions; a module outside simcomm is hashed too
    assert code_version("simcomm.experiments.expgraph") != code_version("simcomm.experiments.rtopk")
    assert code_version("tests._toy") != code_version(None)


def test_equal_with_a_band_needs_the_interval_inside_it():
    c = claim(kind="equal", margin_rel=0.1)  # band sqrt(4) +- 0.2 = [1.8, 2.2]
    assert judge(c, table({4: [1.99, 2.0, 2.01]})).verdict is Verdict.HOLDS
    j = judge(c, table({4: [1.0, 2.0, 3.0]}))
    assert j.verdict is Verdict.INCONCLUSIVE and j.cells.reason[0].startswith("underpowered")  # noise is not agreement
    assert judge(c, table({4: [2.5, 2.51, 2.52]})).verdict is Verdict.VIOLATED
    # a tiny margin is not agreement either: an interval covering the value but wider than the margin
    assert judge(claim(kind="equal", margin_abs=1e-9), table({4: [1.9, 2.0, 2.1]})).verdict is Verdict.INCONCLUSIVE
    assert judge(claim(kind="equal", margin_abs=1e-9), table({4: [2.0 + 2e-9]})).verdict is Verdict.VIOLATED


def test_bound_errors_are_one_line_spec_errors(monkeypatch):
    import tests._toy as toy
    from theory import bound

    @bound(kind="upper", provenance="N", paper="expgraph", statement="fails outside its domain")
    def bad_bound(n):
        """A bound defined only for even n (raises ValueError otherwise), for this test."""
        raise ValueError("n must be even")

    monkeypatch.setattr(toy, "bad_bound", bad_bound, raising=False)
    with pytest.raises(SpecError, match="cannot be evaluated at {'n': 4}: n must be even"):
        judge(claim(bound="tests._toy:bad_bound"), table({4: [1.0]}))


@pytest.mark.parametrize("extra, message", [
    ('bound_args = {muu = 1.0}', "bound_args key 'muu' is not an argument"),
    ('provenance = "P"', "provenance 'P' contradicts the bound's tag 'N'"),
])
def test_claim_keys_checked_against_the_bound(extra, message):
    with pytest.raises(SpecError, match=message):
        spec(TOY.replace('bound = "tests._toy:toy_mean"', 'bound = "tests._toy:toy_mean"\n' + extra))


def test_slope_in_must_be_a_grid_axis():
    text = TOY.replace('kind = "equal"', 'kind = "slope"\nslope_in = "nn"\nslope_tol = 0.1')
    with pytest.raises(SpecError, match="slope_in 'nn' is not a grid axis .did you mean 'n'"):
        spec(text)


def test_report_states_the_scope_of_a_where_filter():
    from simcomm.report import verdict_rows

    t = table({4: [1.0], 9: [2.0], 16: [100.0]})
    j = judge(claim(kind="upper", where={"n": [4, 9]}), t)
    assert j.verdict is Verdict.HOLDS and j.excluded == 1
    assert "(judged where n in [4, 9]; 1 measured cells outside it are not judged)" in verdict_rows([j])[0][2]


def test_wall_clock_metrics_go_to_the_metadata_and_a_resumed_table_is_identical(tmp_path):
    import time

    from simcomm.experiments import Param, experiment

    @experiment("toy_timed", wall_clock=("solver_seconds",), params={"n": Param("int", low=1)})
    def toy_timed(params, rng, backend):
        t0 = time.perf_counter()
        value = float(rng.normal())
        return [dict(metric="mean", value=value), dict(metric="solver_seconds", value=time.perf_counter() - t0)]

    spec = loads('[experiment]\nname = "toy_timed"\nreplicates = 2\n[grid]\nn = [1, 2]\n', name="timed")
    first = run(spec, cache_dir=tmp_path)
    assert set(first.table["metric"]) == {"mean"}
    assert len(first.meta["wall_clock"]) == 4 and {r["metric"] for r in first.meta["wall_clock"]} == {"solver_seconds"}
    # half of the cells recomputed (one cache entry removed): the judged table is the same byte for byte
    next(iter(tmp_path.rglob("*.json"))).unlink()
    again = run(spec, cache_dir=tmp_path)
    assert again.table.to_csv(index=False) == first.table.to_csv(index=False)


def test_no_claim_reads_a_wall_clock_metric():
    from simcomm.experiments import get_experiment
    from simcomm.spec import find_specs, load, sims_dir

    for path in find_specs(sims_dir()):
        spec = load(path, quick=True)
        timed = get_experiment(spec.experiment).wall_clock
        if spec.claim is not None:
            assert spec.claim.observable not in timed, f"{path.name} judges a wall-clock metric"
