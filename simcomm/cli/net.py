"""``simcomm net``: calibrate the network model (alpha, beta), compare it with a real MPI run, predict.

``simcomm net calibrate`` fits alpha and beta from MPI micro-benchmarks; ``simcomm net compare`` puts a
real MPI DSGD run's measured exchange times next to the model's; ``simcomm net predict`` says whether
compression pays on a given cluster (time per step, break-even step inflation, optionally measured).
"""

from __future__ import annotations

import json

import click

from simcomm.cli import cli


@cli.group()
def net():
    """Network model tools (alpha-beta calibration, model vs a real MPI run, does compression pay)."""


@net.command()
@click.option("--np", "np_", type=int, default=2, show_default=True, help="MPI ranks started on this machine (>= 2).")
@click.option("--sizes", default=None, metavar="B1,B2,...",
              help="Message sizes in bytes (default 8,1024,16384,131072,1048576,4194304).")
@click.option("--reps", type=int, default=10, show_default=True, help="Repetitions per size (the best counts).")
@click.option("--mpiexec", "mpiexec", default=None, help="Path of mpiexec (default: next to Python, then PATH).")
@click.option("-o", "--out", "out", default="network.toml", show_default=True, help="TOML file to write.")
@click.option("--json", "as_json", is_flag=True, help="Also print the result as one JSON object.")
def calibrate(np_, sizes, reps, mpiexec, out, as_json):
    """Fit alpha (s/message) and beta (s/byte) from an MPI ping-pong and an Allreduce on loopback.

    Starts mpiexec with --np local ranks, writes [network] alpha, beta (ping-pong fit) and the raw
    times to OUT; a spec or Network.from_toml reads it. Nothing is written if anything fails.

    \b
    Examples:
      simcomm net calibrate -o net.toml
      simcomm net calibrate --np 4 --sizes 8,65536,1048576 --reps 5 --json
    """
    from simcomm._errors import UserError
    from simcomm.network import DEFAULT_SIZES, calibration_toml
    from simcomm.network import calibrate as run_calibration
    from simcomm.results import atomic_write_text

    if sizes is None:
        size_list = list(DEFAULT_SIZES)
    else:
        try:
            size_list = [int(s) for s in sizes.split(",") if s.strip()]
        except ValueError:
            raise UserError(f"--sizes '{sizes}' is not a comma-separated list of byte counts, "
                            "e.g. 8,1024,65536") from None
    res = run_calibration(np_=np_, sizes=size_list, reps=reps, mpiexec=mpiexec)
    atomic_write_text(out, calibration_toml(res))
    if as_json:
        click.echo(json.dumps(dict(res, out=str(out))))
    else:
        click.echo(f"alpha = {res['alpha']:.3e} s/message, beta = {res['beta']:.3e} s/byte "
                   f"({1 / res['beta'] / 1e9 if res['beta'] > 0 else float('inf'):.2f} GB/s) -> {out}")


@net.command()
@click.argument("result", metavar="RESULT.npz", type=click.Path(dir_okay=False))
@click.option("--network", "network", required=True, metavar="FILE",
              help="TOML with [network] alpha, beta (e.g. written by 'simcomm net calibrate' on the same machine).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (per-step arrays included).")
def compare(result, network, as_json):
    """Measured per-step exchange time of an MPI DSGD run next to the network model's prediction.

    RESULT.npz is the --out file of 'python -m simcomm.mpi dsgd' (it records, per step, the slowest
    rank's exchange time); the model gets the same payloads (d float64 values per message) and the
    same topology, exchanged as the MPI run does (one phase per circulant offset).

    \b
    Examples:
      simcomm net calibrate --np 4 -o net.toml
      mpiexec -n 4 python -m simcomm.mpi dsgd --topology exponential --steps 100 --barrier --out r.npz
      simcomm net compare r.npz --network net.toml
    """
    from simcomm.network import Network, compare_dsgd_comm

    res = compare_dsgd_comm(result, Network.from_toml(network))
    if as_json:
        click.echo(json.dumps({k: v.tolist() if hasattr(v, "tolist") else v for k, v in res.items()}))
    else:
        click.echo(f"{res['topology']}, n = {res['n']}, d = {res['d']}: measured median {res['measured_median']:.3e} s "
                   f"per step, model {res['predicted_median']:.3e} s, ratio measured/model {res['ratio']:.3g}")


def _fmt_s(t: float) -> str:
    """Seconds with a unit a reader takes in at a glance (s, ms, us)."""
    if t >= 1 or t == 0:
        return f"{t:.3g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} us"


def _fmt_bytes(b: float) -> str:
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= f:
            return f"{b / f:.3g} {unit}"
    return f"{int(b)} B"


@net.command()
@click.option("-d", "--params", "d", type=float, required=True, metavar="D",
              help="Model size: parameters (float32 values), e.g. 25e6.")
@click.option("-n", "--nodes", "n", type=int, required=True, metavar="N", help="Nodes (workers), >= 2.")
@click.option("--alpha", default=None, metavar="TIME",
              help="Latency per message with its unit: 5us, 0.01ms, 1e-5 (a bare number is seconds).")
@click.option("--bandwidth", default=None, metavar="RATE",
              help="Link bandwidth with its unit: 10Gb/s, 10Gbit/s or 10Gbps (bits), 1.25GB/s (bytes), 100Mb/s, "
                   "25GiB/s. A bare number is read as GB/s (bytes), and the line says so.")
@click.option("--beta", type=float, default=None, metavar="S/B", help="Inverse bandwidth, seconds per byte "
              "(instead of --bandwidth).")
@click.option("--network", "network", default=None, metavar="FILE",
              help="TOML with [network] alpha, beta (written by 'simcomm net calibrate'), instead of "
                   "--alpha/--bandwidth.")
@click.option("--compute", type=float, default=0.0, show_default=True, metavar="S",
              help="Computation per step on one node, seconds.")
@click.option("--compute-scale", type=float, default=0.0, show_default=True, metavar="S",
              help="Mean of an exponential straggler tail per node and step (the step waits for the slowest).")
@click.option("-c", "--compressor", "compressors", multiple=True, metavar="LABEL",
              help="A registered compressor with its settings, e.g. 'top_k(k=1%)', 'qsgd(s=4)', "
                   "'rtop_k(k=0.1%, r=1%)' (X% = X percent of D); repeat for several. Default: "
                   "top_k 1%, rand_k 1%, qsgd(s=16), ternary, scaled_sign, fp16.")
@click.option("--simulate", is_flag=True,
              help="Also measure each compressor's step inflation on a stand-in problem (logistic regression "
                   "on digits, error feedback; k and r as fractions of D; about a second per compressor).")
@click.option("--steps", type=int, default=500, show_default=True, help="--simulate: horizon of each run.")
@click.option("--replicates", type=int, default=3, show_default=True, help="--simulate: independent replicates.")
@click.option("--seed", type=int, default=0, show_default=True, help="--simulate: root seed.")
@click.option("--local", "local", default=None, metavar="H1,H2,...",
              help="Local-update methods (DiLoCo): inner steps per round to compare, e.g. 1,4,16; the compressors "
                   "then act on the pseudo-gradients (default: none and the default list). With --simulate, inner "
                   "steps and time to the stand-in's target.")
@click.option("--target", type=float, default=1e-3, show_default=True,
              help="--local --simulate: the target, f - f* below this fraction of the start's.")
@click.option("--figure", "figure", default=None, metavar="PATH",
              help="--local --simulate: also draw time to target against H for each compressor: writes PATH.pdf "
                   "(vector) and PATH.png.")
@click.option("--size", type=click.Choice(["single", "double"]), default="single", show_default=True,
              help="--figure: one column (3.5 in) or the page width (7.16 in).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def predict(d, n, alpha, bandwidth, beta, network, compute, compute_scale, compressors, simulate, steps,
            replicates, seed, local, target, figure, size, as_json):  # noqa: C901
    """Does compression pay on this cluster? Time per step of each compressor and its break-even step inflation.

    SGD (and the fp16/bf16 casts) run a ring allreduce; every other compressor's messages do not sum
    and go by ring allgather. BREAK-EVEN is rho* = step time of SGD / step time of the compressor:
    compression pays iff it needs fewer than rho* times SGD's steps to reach the target. With
    --simulate, MEASURED is that factor on a small stand-in problem, and the verdict compares the two.
    With --local H1,H2,... the rows are DiLoCo's (per inner step) for every H and compressor; --local
    --simulate adds inner steps and time to --target on a stand-in, and --figure PATH draws that time
    against H (PATH.pdf and PATH.png).
    The closed forms are theory.network's (ef_topk_time_ratio, ef_break_even_step_ratio,
    sparse_allgather_crossover_n); see docs/python.md.

    \b
    Examples:
      simcomm net predict -d 25e6 -n 64 --bandwidth 10Gb/s --alpha 5us --compute 0.05
      simcomm net predict -d 1e6 -n 8 --network net.toml -c 'top_k(k=0.1%)' -c 'qsgd(s=4)' --simulate
      simcomm net predict -d 1e8 -n 16 --bandwidth 1Gb/s --alpha 50us --compute 0.2 --local 1,4,16,64 --simulate
      simcomm net predict -d 1e8 -n 16 --bandwidth 1Gb/s --alpha 50us --local 1,4,16 --simulate --figure h
    """
    import math

    from simcomm._errors import UserError
    from simcomm.experiments.network import measure_step_inflation
    from simcomm.network import DEFAULT_COMPRESSORS, Network, predict_step_times

    if not math.isfinite(d) or d < 1 or d != int(d):
        raise UserError(f"--params {d:g} is not allowed; use an integer number of parameters >= 1, e.g. 25e6")
    if d > 1e13:
        raise UserError(f"--params {d:g} is larger than any model (> 1e13); pass the parameter count, e.g. 25e6")
    if figure is not None:
        figure = _figure_stem(figure, local is not None and simulate)
    if network is not None:
        if alpha is not None or bandwidth is not None or beta is not None:
            raise UserError("--network replaces --alpha/--bandwidth/--beta; pass one or the other")
        net_model = Network.from_toml(network)
    else:
        if bandwidth is not None and beta is not None:
            raise UserError("--bandwidth and --beta say the same thing; pass one")
        if bandwidth is not None:
            rate, bare = parse_bandwidth(bandwidth)
            beta = 1.0 / rate
            if bare:  # a bare number is ambiguous (bits or bytes: 8x apart): say how it was read
                click.echo(f"note: --bandwidth {bandwidth} read as {bandwidth} GB/s (bytes) = {rate * 8 / 1e9:.4g} "
                           f"Gbit/s; write the unit to be explicit, e.g. --bandwidth {rate * 8 / 1e9:.4g}Gb/s or "
                           f"{bandwidth}GB/s", err=True)
        if beta is None or alpha is None:
            raise UserError("the network is missing: pass --alpha and --bandwidth (or --beta), or --network FILE "
                            "from 'simcomm net calibrate'")
        net_model = Network(parse_duration(alpha), beta)
    labels = list(compressors) or list(DEFAULT_COMPRESSORS)
    if local is not None:
        src = click.get_current_context().get_parameter_source("steps")
        horizon = steps if src is not None and src.name != "DEFAULT" else 2000
        _predict_local(int(d), n, net_model, local, list(compressors) or ["none", *DEFAULT_COMPRESSORS], compute,
                       compute_scale, simulate, horizon, replicates, seed, target, as_json, figure, size)
        return
    rows = predict_step_times(int(d), n, net_model, labels, compute=compute, compute_scale=compute_scale)
    measured = {}
    if simulate:
        comps = [r["compressor"] for r in rows[1:]]
        for m in measure_step_inflation(comps, d=int(d), n=n, steps=steps, replicates=replicates, rng=seed):
            measured[m["compressor"]] = m
    for r in rows:
        m = measured.get(r["compressor"])
        if m is None:
            continue
        r["measured"] = m
        if m["censored"]:
            r["pays"] = False if m["censored"] == replicates or m["rho"] >= r["break_even"] else None
        else:
            r["pays"] = m["rho"] < r["break_even"]
    if as_json:
        click.echo(json.dumps(dict(d=int(d), n=n, alpha=float(net_model.alpha), beta=float(net_model.beta),
                                   compute=compute, compute_scale=compute_scale, rows=rows),
                              default=lambda o: None))
        return
    bw = 1.0 / float(net_model.beta) / 1e9 if float(net_model.beta) > 0 else math.inf
    click.echo(f"D = {int(d):,} parameters, n = {n}, alpha = {_fmt_s(float(net_model.alpha))}, "
               f"{bw:.3g} GB/s ({8 * bw:.3g} Gbit/s), compute {_fmt_s(compute)} per step"
               + (f" + Exp({_fmt_s(compute_scale)}) stragglers" if compute_scale else ""))
    head = f"{'compressor':<30} {'pattern':<14} {'message':>9} {'comm':>9} {'step':>9} {'break-even':>10}"
    if simulate:
        head += f" {'measured':>13}  verdict"
    click.echo(head)
    for r in rows:
        line = (f"{r['compressor'][:30]:<30} {r['pattern']:<14} {_fmt_bytes(r['bytes']):>9} {_fmt_s(r['comm_s']):>9} "
                f"{_fmt_s(r['step_s']):>9} {r['break_even']:>9.3g}x")
        if "measured" in r:
            m = r["measured"]
            if m["censored"] == replicates:
                meas = f"> {steps / m['sgd_steps']:.3g}x"
            elif m["censored"]:
                meas = f"{m['rho']:.3g}x ({m['censored']} cens.)"
            else:
                meas = f"{m['rho']:.3g}x"
            verdict = {True: "pays", False: "does not pay", None: "unclear (censored)"}[r["pays"]]
            line += f" {meas:>13}  {verdict}"
        click.echo(line)
    click.echo("break-even: compression pays iff it needs fewer than this many times SGD's steps"
               + ("; measured: steps to the stand-in's target / SGD's (mean of "
                  f"{replicates} replicates; the stand-in is a 650-parameter logistic regression, not your model)"
                  if simulate else "; add --simulate to measure it on a stand-in problem"))


def _parse_H(text: str) -> list[int]:
    from simcomm._errors import UserError

    try:
        out = [int(t) for t in str(text).replace(" ", "").split(",") if t]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise UserError(f"--local {text!r} is not a list of inner steps per round; write e.g. --local 1,4,16")
    return sorted(set(out))


def _figure_stem(figure: str, drawable: bool) -> str:
    """``--figure PATH`` as the stem of PATH.pdf and PATH.png (a .pdf or .png suffix is dropped), checked writable."""
    from pathlib import Path

    from simcomm._errors import UserError
    from simcomm.cli._common import ensure_writable

    if not drawable:
        raise UserError("--figure draws time to target against H; add --local H1,H2,... --simulate")
    path = Path(figure)
    suffix = path.suffix.lower()
    if suffix in (".pdf", ".png"):
        path = path.with_suffix("")
    elif suffix in (".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".gif", ".pgf"):
        raise UserError(f"--figure {figure}: writes PATH.pdf and PATH.png; give PATH without a suffix or "
                        f"with .pdf, e.g. --figure {path.with_suffix('')}")
    if not path.name:
        raise UserError(f"--figure {figure!r} names no file; give a path such as figures/local_h")
    ensure_writable(path.parent, "--figure PATH")
    return str(path)


def _write_local_figure(result: dict, figure: str, size: str) -> None:
    from simcomm.cli._common import save_figure
    from simcomm.plotting import local_time_figure

    save_figure(lambda: local_time_figure(result, size=size), figure)


def _predict_local(d, n, net_model, local, labels, compute, compute_scale, simulate, steps, replicates, seed, target,
                   as_json, figure=None, size="single") -> None:
    """``simcomm net predict --local``: the table of local-update methods (and the stand-in's times to target)."""
    import math

    from simcomm._errors import UserError
    from simcomm.experiments.network import measure_local_steps_to_target
    from simcomm.network import predict_local_times

    if simulate and not (0.0 < target < 1.0):
        raise UserError(f"--target {target!r} is not allowed; use a fraction of the start's f - f* in (0, 1)")
    rows = predict_local_times(d, n, net_model, _parse_H(local), labels, compute=compute, compute_scale=compute_scale)
    if simulate:
        rows = measure_local_steps_to_target(rows, d=d, n=n, steps=steps, target=target, replicates=replicates,
                                             rng=seed)
        timed = [r for r in rows if r.get("time_to_target_s") is not None]
        if timed:
            min(timed, key=lambda r: r["time_to_target_s"])["fastest"] = True
    result = dict(d=d, n=n, alpha=float(net_model.alpha), beta=float(net_model.beta), compute=compute,
                  compute_scale=compute_scale, target=target if simulate else None,
                  horizon=steps if simulate else None, rows=rows)
    if figure is not None:
        _write_local_figure(result, figure, size)
    if as_json:
        click.echo(json.dumps(result, default=lambda o: None))
        return
    bw = 1.0 / float(net_model.beta) / 1e9 if float(net_model.beta) > 0 else math.inf
    click.echo(f"D = {d:,} parameters, n = {n}, alpha = {_fmt_s(float(net_model.alpha))}, {bw:.3g} GB/s "
               f"({8 * bw:.3g} Gbit/s), compute {_fmt_s(compute)} per inner step"
               + (f" + Exp({_fmt_s(compute_scale)}) stragglers" if compute_scale else ""))
    head = (f"{'method':<6} {'H':>4} {'compressor':<28} {'pattern':<14} {'message':>9} {'comm/round':>10} "
            f"{'step':>9} {'break-even':>10}")
    if simulate:
        head += f" {'steps':>8} {'to target':>10}"
    click.echo(head)
    for r in rows:
        line = (f"{r['method']:<6} {r['H']:>4} {r['compressor'][:28]:<28} {r['pattern']:<14} "
                f"{_fmt_bytes(r['bytes']):>9} {_fmt_s(r['comm_round_s']):>10} {_fmt_s(r['step_s']):>9} "
                f"{r['break_even']:>9.3g}x")
        if simulate:
            if r["steps"] is None:
                meas, when = f"> {steps}", "-"
            elif r["censored"]:
                meas, when = f"{r['steps']:.0f} ({r['censored']} c.)", "-"
            else:
                meas, when = f"{r['steps']:.0f}", _fmt_s(r["time_to_target_s"])
            line += f" {meas:>8} {when:>10}" + ("  *" if r.get("fastest") else "")
        click.echo(line)
    click.echo("step: time per inner step (a round's compute, waiting for the slowest node, and one exchange of the "
               "pseudo-gradients, over H); break-even: the method beats data-parallel SGD iff it needs fewer than "
               "this many times SGD's inner steps"
               + (f"; steps: inner steps to f - f* <= {target:g} of the start's on the stand-in (logistic regression "
                  f"on breast_cancer, D = 31, non-iid over min(n, 8) workers, mean of {replicates} replicates, "
                  f"horizon {steps}; not your model); to target: steps x step; *: fastest"
                  if simulate else "; add --simulate for inner steps and time to a target on a stand-in problem"))
    if figure is not None:
        click.echo(f"figure: {figure}.pdf, {figure}.png")


#: bandwidth units: the prefix's factor and whether the unit counts bits (b, bit, bps) or bytes (B)
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30,
           "Ti": 2.0**40}


def parse_bandwidth(text: str) -> tuple[float, bool]:
    """``(bytes per second, bare)`` of a bandwidth such as ``10Gb/s``, ``1.25GB/s``, ``100Mbit/s``, ``10Gbps``.

    ``b``, ``bit`` and ``bps`` count bits, ``B`` bytes; prefixes k, M, G, T are powers of 1000, Ki, Mi, Gi,
    Ti of 1024. A bare number is GB/s (``bare`` is then True, so the caller can say how it read it).

    Examples
    --------
    >>> parse_bandwidth("10Gb/s"), parse_bandwidth("1.25GB/s"), parse_bandwidth("100 Mbit/s")
    ((1250000000.0, False), (1250000000.0, False), (12500000.0, False))
    >>> parse_bandwidth("1.25")
    (1250000000.0, True)
    """
    import math
    import re

    from simcomm._errors import UserError

    raw = str(text).strip()
    m = re.fullmatch(r"([0-9.eE+-]+)\s*(?:(Ki|Mi|Gi|Ti|[kKMGT])?(bit/s|bits/s|bps|b/s|B/s|Bps))?", raw)
    hint = "write the rate with its unit, e.g. 10Gb/s, 10Gbit/s, 1.25GB/s or 100Mb/s"
    if m is None:
        raise UserError(f"--bandwidth {raw!r} is not a bandwidth; {hint}")
    try:
        value = float(m.group(1))
    except ValueError:
        raise UserError(f"--bandwidth {raw!r} is not a bandwidth; {hint}") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"--bandwidth {raw} is not allowed; use a rate > 0, {hint.removeprefix('write the rate ')}")
    if m.group(3) is None:
        if m.group(2):
            raise UserError(f"--bandwidth {raw!r} has a prefix but no unit; {hint}")
        return value * 1e9, True
    bits = m.group(3) in ("bit/s", "bits/s", "bps", "b/s")
    rate = value * _PREFIX[m.group(2) or ""]
    return (rate / 8.0 if bits else rate), False


#: time units: units per second (a division keeps 5us exactly 5e-06)
_PER_SECOND = {"s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "μs": 1e6, "ns": 1e9}


def parse_duration(text, option: str = "--alpha") -> float:
    """Seconds in a duration such as ``5us``, ``0.5 ms``, ``2e-6`` (a bare number is seconds).

    Examples
    --------
    >>> parse_duration("5us"), parse_duration("0.5ms"), parse_duration("2e-6"), parse_duration("1 s")
    (5e-06, 0.0005, 2e-06, 1.0)
    """
    import math
    import re

    from simcomm._errors import UserError

    raw = str(text).strip()
    m = re.fullmatch(r"([0-9.eE+-]+)\s*(s|ms|us|µs|μs|ns)?", raw)
    hint = "write a time with its unit, e.g. 5us, 0.2ms or 1e-5 (seconds)"
    try:
        value = float(m.group(1)) if m else math.nan
    except ValueError:
        value = math.nan
    if m is None or math.isnan(value):
        raise UserError(f"{option} {raw!r} is not a time; {hint}")
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{option} {raw} is not allowed; use a finite time >= 0, e.g. 5us")
    return value / _PER_SECOND[m.group(2) or "s"]
