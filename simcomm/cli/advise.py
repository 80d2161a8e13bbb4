"""``simcomm advise``: rank compressors for a model from its recorded gradients and a network description."""

from __future__ import annotations

import json

import click

from simcomm.cli import cli


@cli.command()
@click.argument("gradients", metavar="GRADIENTS.npz", type=click.Path(dir_okay=True))
@click.option("-n", "--nodes", "n", type=int, required=True, metavar="N", help="Workers (nodes), >= 2.")
@click.option("--bandwidth", default=None, metavar="RATE",
              help="Link bandwidth with its unit: 10Gb/s, 10Gbit/s, 1.25GB/s, 100Mb/s (a bare number is GB/s).")
@click.option("--alpha", default=None, metavar="TIME", help="Latency per message with its unit: 5us, 0.01ms, 1e-5 (s).")
@click.option("--network", "network", default=None, metavar="FILE",
              help="TOML with [network] alpha, beta (from 'simcomm net calibrate'), instead of --alpha/--bandwidth.")
@click.option("--compute", default="0", show_default=True, metavar="TIME",
              help="Computation per step on one node, added to every predicted step time (e.g. 50ms).")
@click.option("-c", "--compressor", "candidates", multiple=True, metavar="LABEL[+ef]",
              help="A compressor setting, optionally with feedback: 'top_k(k=1%)+ef', 'qsgd(s=4)', "
                   "'top_k(k=0.1%)+ef21' (X% = X percent of D); repeat for several. Default: 14 settings of "
                   "top_k, rtop_k, rand_k, qsgd, ternary, natural, minmax_uint8, fp16, scaled_sign.")
@click.option("--steps-uncompressed", "steps_uncompressed", type=int, default=None, metavar="N",
              help="Iterations uncompressed SGD needs to reach your target accuracy: adds each row's predicted "
                   "time to that target (N times the row's iteration factor times its step time; a derived "
                   "approximation, see docs/torch.md). Not for candidates that are all biased without +ef.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the random compressors and of the fitted model's draws.")
@click.option("--figure", "figure", default=None, metavar="PATH",
              help="Also draw error against predicted step time: writes PATH.pdf (vector) and PATH.png.")
@click.option("--size", type=click.Choice(["single", "double"]), default="single", show_default=True,
              help="--figure: one column (3.5 in) or the page width (7.16 in).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def advise(gradients, n, bandwidth, alpha, network, compute, candidates, steps_uncompressed, seed, figure, size,
           as_json):
    """Which compressor for my model? Error on your recorded gradients against predicted time per step.

    GRADIENTS.npz is written by simcomm.torch.GradientRecorder(...).save(path) during a few training
    steps. Each row is a compressor setting with a feedback variant: ERROR is ||g - u||^2/||g||^2 on
    your gradients (u what the server adds; with +ef the running sum's error), mean and 95% interval
    over the recorded steps; BITS one node's message per step; STEP the alpha-beta model's time per
    step (ring allreduce for dense summable messages, allgather otherwise) plus --compute. Rows are
    ranked by Pareto front (F1: no other row has both lower error and lower time), then by time.
    MODEL is the error the fitted sparse skewed model predicts; '!' marks where it misses.

    With --steps-uncompressed N (the iterations uncompressed SGD needs to reach your target), TO TARGET is
    the predicted time to that target: N x the row's iteration factor x STEP. The factor comes from the
    compressor's own error e on your gradients (a derived approximation, the pessimistic end): 1/(1 - e)
    with error feedback (a delta-contraction needs about 1/delta times the iterations), 1 + e/n for an
    unbiased compressor without feedback, none ('-') for a biased one without feedback.

    \b
    Examples:
      simcomm advise grads.npz -n 16 --bandwidth 10Gb/s --alpha 5us --compute 50ms
      simcomm advise grads.npz -n 8 --network net.toml -c 'top_k(k=1%)+ef' -c 'qsgd(s=4)' --json
      simcomm advise grads.npz -n 16 --bandwidth 25Gb/s --alpha 2us --figure advice
      simcomm advise grads.npz -n 16 --bandwidth 1Gb/s --alpha 5us --steps-uncompressed 5000
    """
    from simcomm._errors import UserError
    from simcomm.cli.net import _fmt_s, parse_bandwidth, parse_duration
    from simcomm.models import load_gradients
    from simcomm.network import Network
    from simcomm.network import advise as run_advise

    if network is not None:
        if alpha is not None or bandwidth is not None:
            raise UserError("--network replaces --alpha/--bandwidth; pass one or the other")
        net_model = Network.from_toml(network)
    else:
        if alpha is None or bandwidth is None:
            raise UserError("the network is missing: pass --alpha and --bandwidth (e.g. --alpha 5us --bandwidth "
                            "10Gb/s), or --network FILE from 'simcomm net calibrate'")
        rate, bare = parse_bandwidth(bandwidth)
        if bare:
            click.echo(f"note: --bandwidth {bandwidth} read as {bandwidth} GB/s (bytes); write the unit to be "
                       f"explicit, e.g. {bandwidth}GB/s or {rate * 8 / 1e9:.4g}Gb/s", err=True)
        net_model = Network(parse_duration(alpha), 1.0 / rate)
    compute_s = parse_duration(compute, "--compute")
    if figure is not None:
        from pathlib import Path

        from simcomm.cli._common import ensure_writable

        ensure_writable(Path(figure).parent, "--figure PATH")
    if steps_uncompressed is not None and steps_uncompressed < 1:
        raise UserError(f"--steps-uncompressed {steps_uncompressed} is out of range; give the iterations "
                        "uncompressed SGD needs to reach your target, an integer >= 1")
    G, _ = load_gradients(gradients)
    adv = run_advise(G, net_model, n, candidates=list(candidates) or None, compute=compute_s, rng=seed,
                     steps_uncompressed=steps_uncompressed)
    if figure is not None:
        _write_figure(adv, figure, size)
    if as_json:
        click.echo(json.dumps(adv.to_dict()))
        return
    bw = 1.0 / adv.beta if adv.beta > 0 else float("inf")
    click.echo(f"{adv.steps} recorded steps of D = {adv.d:,} parameters; n = {adv.n}, alpha = {_fmt_s(adv.alpha)}, "
               f"{bw / 1e9:.3g} GB/s ({8 * bw / 1e9:.3g} Gbit/s), compute {_fmt_s(adv.compute)} per step")
    target = adv.steps_uncompressed is not None
    if target:
        click.echo(f"time to target: uncompressed SGD needs {adv.steps_uncompressed:,} steps of "
                   f"{_fmt_s(adv.baseline_step_s)} = {_fmt_s(adv.steps_uncompressed * adv.baseline_step_s)}; "
                   "a row needs that many steps times its iteration factor (derived approximation)")
    click.echo(f"{'#':>2} {'F':>2}  {'compressor':<13} {'setting':<18} {'fb':<5} {'error [95% interval]':<30} "
               f"{'model':>8} {'bits/step':>10} {'step':>9}" + (f" {'x iters':>7} {'to target':>10}" if target else ""))
    for r in adv.rows:
        m, lo, hi = r["error_mean"], r["error_lo"], r["error_hi"]
        err = f"{m:.3g}" + (f" [{lo:.3g}, {hi:.3g}]" if lo == lo else "")
        me = r["model_error"]
        model = "" if me != me else f"{me:.3g}" + ("!" if r["disagrees"] else "")
        tail = ""
        if target:
            f, tt = r["iteration_factor"], r["time_to_target_s"]
            tail = f" {('-' if f != f else f'{f:.3g}'):>7} {('-' if tt != tt else _fmt_s(tt)):>10}"
        click.echo(f"{r['rank']:>2} {r['front']:>2}  {r['compressor'][:13]:<13} {r['setting'][:18]:<18} "
                   f"{r['feedback']:<5} {err:<30} {model:>8} {r['bits']:>10.4g} {_fmt_s(r['step_s']):>9}{tail}")
    if adv.model is not None:
        click.echo(f"fitted sparse skewed model: nnz = {adv.model.nnz:,} of {adv.d:,}, tail index {adv.model.alpha:.3g}"
                   + (f"; it misses {len(adv.disagreements)} of {len(adv.rows)} rows:" if adv.disagreements
                      else "; it agrees with every measured error"))
        for line in adv.disagreements:
            click.echo(f"  {line}")
    elif adv.model_note:
        click.echo(adv.model_note)
    if figure is not None:
        click.echo(f"figure: {figure}.pdf, {figure}.png")


def _write_figure(adv, figure: str, size: str) -> None:
    from simcomm.cli._common import save_figure
    from simcomm.plotting import advice_figure

    save_figure(lambda: advice_figure(adv, size=size), figure)
