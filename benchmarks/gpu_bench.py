"""Side-by-side benchmark of the numba (CPU) and cupy (GPU) backends, in one run on one machine.

The device check of issue 19 (``benchmarks/gpu_check.sh`` runs it): for every kernel and every size
``n * d`` in 10^6, 10^7, 10^8 (float32, n = 64 rows), the best-of-N time of the numba kernel on all CPU
cores and of the cupy kernel on device-resident arrays, their ratio, and the cupy time as a multiple of
the copy floor (the bytes the kernel must move, at the bandwidth of a device-to-device copy measured in
the same run).
Then the end-to-end ``simcomm run`` of ``sims/extra/dsgd_large.toml`` with each backend.

Writes ``gpu_bench.csv``, ``gpu_bench.png`` and ``gpu_bench.json`` to ``--out``. Timing is
measurement, not a test: nothing here asserts a time; the targets are printed beside the numbers.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SIZES = (10**6, 10**7, 10**8)
ROWS = 64
#: kernels whose speed is bounded by memory traffic (judged against the copy floor)
BANDWIDTH_BOUND = ("qsgd", "ternary", "ring_gossip", "exp_gossip", "ef_send")
# The copy floor of a kernel: the bytes it must read and write (the third entry of each kernel in
# kernels(), e.g. 3 passes over x for a quantizer: the norm pass, then x in and Q(x) out) at the
# bandwidth of a device-to-device copy measured in the same run.


def best_cpu(fn, reps: int) -> float:
    """Best wall time of ``fn()`` in seconds over ``reps`` calls after one warm-up call."""
    fn()  # warm-up (compiles on first use)
    out = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def best_gpu(fn, reps: int) -> float:
    """Best device time of ``fn()`` in seconds (CUDA events around the call) after one warm-up call."""
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    out = math.inf
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        out = min(out, cp.cuda.get_elapsed_time(start, end) / 1e3)
    return out


def kernels(n: int, d: int, rng):
    """``name -> (numba thunk, cupy thunk)`` on the same data (host copies for numba, device for cupy)."""
    import cupy as cp

    from simcomm.backends import get_backend
    from simcomm.topology import exponential

    nb, cu = get_backend("numba"), get_backend("cupy")
    x = rng.standard_normal((n, d)).astype(np.float32)
    xd = cp.asarray(x)
    k = max(1, d // 100)
    r = min(d, 4 * k)
    u = rng.random((n, k))
    key = 0x5EED
    out_h, out_d = np.empty_like(x), cp.empty_like(xd)
    ring = (np.array([0, 1, n - 1]), np.full(3, 1 / 3))
    topo = exponential(n)
    expo = (np.ascontiguousarray(topo.offsets[:, 0]), np.asarray(topo.weights))
    one_peer = (np.array([0, 1]), np.array([0.5, 0.5]))
    M, G = rng.standard_normal((2, n, d)).astype(np.float32)
    Md, Gd = cp.asarray(M), cp.asarray(G)
    theta = rng.standard_normal(d).astype(np.float32)
    thd = cp.asarray(theta)

    def qsgd(be, a, o):
        return lambda: be.qsgd_quantize(a, be.row_norms(a), 4, key, o)

    def ternary(be, a, o):
        return lambda: be.ternary_quantize(a, be.row_absmax(a), key, o)

    def ef_step(be, g, m, th):
        def step():
            P, top, _ = be.ef_accumulate_topr(g, m, k, out=m)
            be.ef_send(P, top, th, 0.01)
        return step

    idx_h = nb.topk_indices(M, k)
    idx_d = cp.asarray(idx_h)
    P_h, P_d = M.copy(), Md.copy()
    N, e = n * d, 4
    # bytes each kernel must move at least (reads + writes; a scattered access moves a 32-byte sector)
    send_bytes = n * k * (8 + e + 2 * 32) + d * (e + 8 + 8)
    return {
        "top_k": (lambda: nb.topk_indices(x, k), lambda: cu.topk_indices(xd, k), e * N),
        "rtop_k": (lambda: nb.rtopk_indices(x, k, r, u), lambda: cu.rtopk_indices(xd, k, r, key), e * N),
        "qsgd": (qsgd(nb, x, out_h), qsgd(cu, xd, out_d), 3 * e * N),  # norm pass + quantize pass
        "ternary": (ternary(nb, x, out_h), ternary(cu, xd, out_d), 3 * e * N),
        "ring_gossip": (lambda: nb.shift_mix(x, *ring), lambda: cu.shift_mix(xd, *ring), 2 * e * N),
        "exp_gossip": (lambda: nb.shift_mix(x, *expo), lambda: cu.shift_mix(xd, *expo), 2 * e * N),
        "dmsgd_step": (lambda: nb.atc_shift_step(x, M, G, 0.01, 0.9, *one_peer, out_h),
                       lambda: cu.atc_shift_step(xd, Md, Gd, 0.01, 0.9, *one_peer, out_d), 5 * e * N),
        "ef_send": (lambda: nb.ef_send(P_h, idx_h, theta, 0.01), lambda: cu.ef_send(P_d, idx_d, thd, 0.01),
                    send_bytes),
        "ef_sgd_step": (ef_step(nb, G, M, theta), ef_step(cu, Gd, Md, thd), 4 * e * N + send_bytes),
    }, (xd, cp.empty_like(xd))


def copy_floor(src, dst) -> float:
    """Best time of a device-to-device copy of ``src`` (read once, written once): the bandwidth floor."""
    import cupy as cp

    return best_gpu(lambda: cp.copyto(dst, src), 7)


def end_to_end(out: Path, spec: str, timeout: float, overrides: list[str]) -> dict:
    """Wall time of ``simcomm run SPEC`` with each backend (fresh output folders: no cached cells).

    Also reads the run's own ``setup_seconds`` and ``run_seconds`` rows and checks that the two backends
    computed the same run (same counter noise: the final measurements agree to rounding).
    """
    import csv as _csv

    res = {}
    for backend in ("cupy", "numba"):
        folder = out / f"e2e_{backend}"
        cmd = [sys.executable, "-m", "simcomm", "run", spec, "--backend", backend, "--out", str(folder), "--yes"]
        for o in overrides:
            cmd += ["--set", o]
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            ok = p.returncode == 0
            tail = (p.stdout + p.stderr).strip().splitlines()[-3:]
        except subprocess.TimeoutExpired:
            ok, tail = False, [f"timed out after {timeout:.0f} s"]
        rec = {"seconds": time.perf_counter() - t0, "ok": ok, "tail": tail}
        for table in folder.glob("results/*/*/table.csv"):
            with open(table) as fh:
                rec.update({r["metric"]: float(r["value"]) for r in _csv.DictReader(fh)})
        res[backend] = rec
        setup, run = rec.get("setup_seconds", math.nan), rec.get("run_seconds", math.nan)
        print(f"  simcomm run --backend {backend}: {rec['seconds']:.1f} s wall (setup {setup:.2f} s, run {run:.2f} s) "
              f"ok={ok} {' | '.join(tail)}", flush=True)
    if res["cupy"]["ok"] and res["numba"]["ok"]:
        res["speedup_wall"] = res["numba"]["seconds"] / res["cupy"]["seconds"]
        res["speedup_run"] = res["numba"].get("run_seconds", math.nan) / res["cupy"].get("run_seconds", math.nan)
        res["same_run"] = {m: res["cupy"].get(m, math.nan) / res["numba"].get(m, math.nan) - 1
                           for m in ("consensus", "subopt", "node_grad_norm_sq")}
        print(f"  end to end: cupy {res['speedup_wall']:.1f}x faster wall, {res['speedup_run']:.1f}x on run_seconds; "
              f"relative differences of the final measurements {res['same_run']}", flush=True)
    return res


def figure(rows, path: Path) -> None:
    """Speedup over numba and multiple of the copy floor against the size, one line per kernel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    names = sorted({r["kernel"] for r in rows}, key=lambda s: [r["kernel"] for r in rows].index(s))
    colour = {name: plt.cm.tab10(i % 10) for i, name in enumerate(names)}  # one colour per kernel, both panels
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for name in names:
        rs = [r for r in rows if r["kernel"] == name and math.isfinite(r["speedup"])]
        if not rs:
            continue
        e = [r["entries"] for r in rs]
        a.plot(e, [r["speedup"] for r in rs], marker="o", label=name, color=colour[name])
        if name in BANDWIDTH_BOUND:
            b.plot(e, [r["floor_ratio"] for r in rs], marker="o", label=name, color=colour[name])
    a.axhline(10, color="k", ls="--", lw=1, label="target 10x at $10^8$")
    b.axhline(3, color="k", ls="--", lw=1, label="target 3x at $10^8$")
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("entries $n d$ (float32, $n$ = 64)")
        ax.grid(True, which="both", alpha=0.3)
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    a.set_ylabel("cupy speedup over numba (16 cores)")
    a.set_title("cupy vs numba, same machine, same run")
    b.set_ylabel("cupy time / copy floor of the bytes moved")
    b.set_title("bandwidth-bound kernels vs the copy floor")
    a.legend(fontsize=7, ncol=2)
    b.legend(fontsize=7)
    fig.savefig(path, dpi=150)


def main(argv=None) -> int:
    """Run every kernel at every size, write the CSV, figure and JSON, print the targets."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/out")
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--spec", default="sims/extra/dsgd_large.toml")
    ap.add_argument("--e2e-timeout", type=float, default=240.0)
    # 40 steps: long enough that the run, not Python's start-up and imports, is what is timed
    ap.add_argument("--e2e-set", action="append", default=None, metavar="KEY=VALUE",
                    help="override for the end-to-end spec (default: steps=40, record_every=40)")
    ap.add_argument("--skip-e2e", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import cupy as cp
    import numba

    print(f"numba threads {numba.get_num_threads()}, device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}",
          flush=True)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        n, d = ROWS, size // ROWS
        rng = np.random.default_rng(size)
        ks, (src, dst) = kernels(n, d, rng)
        floor = copy_floor(src, dst)
        print(f"n*d = {size:.0e} (n = {n}, d = {d}): device copy {floor * 1e3:.3f} ms", flush=True)
        bandwidth = 2 * src.nbytes / floor  # bytes per second of the device copy (read + write)
        for name, (cpu, gpu, nbytes) in ks.items():
            row = {"kernel": name, "n": n, "d": d, "entries": n * d, "copy_ms": floor * 1e3, "bytes": nbytes,
                   "floor_ms": nbytes / bandwidth * 1e3}
            try:
                row["numba_ms"] = best_cpu(cpu, args.reps) * 1e3
            except Exception as exc:  # a failing kernel is reported, the others still run
                row["numba_ms"], row["error"] = math.nan, f"numba: {type(exc).__name__}: {exc}"
            try:
                row["cupy_ms"] = best_gpu(gpu, max(5, args.reps)) * 1e3
            except Exception as exc:
                row["cupy_ms"], row["error"] = math.nan, f"cupy: {type(exc).__name__}: {exc}"
            row["speedup"] = row["numba_ms"] / row["cupy_ms"]
            row["floor_ratio"] = row["cupy_ms"] / row["floor_ms"]
            rows.append(row)
            print(f"  {name:12s} numba {row['numba_ms']:9.3f} ms  cupy {row['cupy_ms']:8.3f} ms  "
                  f"speedup {row['speedup']:7.1f}x  floor {row['floor_ms']:7.3f} ms (x{row['floor_ratio']:5.2f})  "
                  f"{row.get('error', '')}",
                  flush=True)
        del ks, src, dst
        cp.get_default_memory_pool().free_all_blocks()
    fields = ["kernel", "n", "d", "entries", "numba_ms", "cupy_ms", "speedup", "copy_ms", "bytes", "floor_ms",
              "floor_ratio", "error"]
    with open(out / "gpu_bench.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    figure(rows, out / "gpu_bench.png")
    summary = {"kernels": rows}
    if not args.skip_e2e and Path(args.spec).exists():
        print(f"end to end: simcomm run {args.spec}", flush=True)
        sets = args.e2e_set if args.e2e_set is not None else ["steps=40", "record_every=40"]
        summary["end_to_end"] = end_to_end(out, args.spec, args.e2e_timeout, sets)
    (out / "gpu_bench.json").write_text(json.dumps(summary, indent=1, default=str))
    big = [r for r in rows if r["entries"] == max(rr["entries"] for rr in rows)]
    print("targets at the largest size: speedup >= 10x for every kernel; <= 3x the copy floor for "
          + ", ".join(BANDWIDTH_BOUND))
    for r in big:
        ok = r["speedup"] >= 10 and (r["kernel"] not in BANDWIDTH_BOUND or r["floor_ratio"] <= 3)
        print(f"  {r['kernel']:12s} {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
