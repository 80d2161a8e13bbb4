"""Experiments for the network claims (issue 18): real payload sizes, allgather vs allreduce, time to accuracy.

* ``payload_bits``: encode one compressed message of a Gaussian vector; emit its size in bits.
* ``allgather_crossover``: per-node top-k messages of real sizes; ring allgather and dense ring
  allreduce simulated phase by phase (:func:`simcomm.network.phase_time`, uneven chunks, per-node sizes);
  rows labelled by which one a theory predictor (a ``"module:name"`` parameter) says is faster.
* ``measure_step_inflation`` (not an experiment; ``simcomm net predict --simulate``): steps to a target
  of each compressor over SGD's on a stand-in problem.
* ``measure_local_steps_to_target`` (not an experiment; ``simcomm net predict --local --simulate``): inner
  steps and time to a target of DiLoCo for every H and compressor on a non-iid stand-in problem.
* ``compression_pays``: error-feedback top-k against uncompressed SGD on a real data set; simulated
  wall-clock time to a target training loss with stragglers and the alpha-beta network; the predictor
  gets the step ratio from independent pilot runs, so the label never looks at the evaluated runs.

The predictors live in ``theory/``; simcomm never imports theory statically, so the spec passes the
predictor by name and it is imported here at run time (the same string-meeting the judge uses).
"""

from __future__ import annotations

import importlib
import math

import numpy as np

from simcomm._errors import SpecError, UserError
from simcomm.backends import entry_point
from simcomm.compress import Identity, Message, TopK
from simcomm.experiments._registry import Param, experiment
from simcomm.network import HEADER_BYTES, Network, Straggler, decode, encode, message, phase_time

_CASES = ("none:float32", "none:float16", "none:bfloat16", "top_k:auto", "top_k:packed", "top_k:bitmap",
          "top_k:raw", "top_k:gamma", "top_k:varint", "rand_k:auto", "rand_k:gamma", "rand_k:raw", "rand_k:varint",
          "rtop_k:auto", "qsgd:fixed", "qsgd:elias", "ternary:trit5", "ternary:2bit")


def _predictor(ref: str):
    """Import ``"module:name"`` (a theory predictor named in the spec)."""
    mod, _, name = ref.partition(":")
    try:
        return getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError, ValueError):
        raise SpecError(f"predict = '{ref}' cannot be imported; use 'module:name', e.g. "
                        "'theory.network:sparse_allgather_time_ratio'") from None


def _k(params) -> int:
    return max(1, int(round(params["density"] * params["d"])))


@experiment(
    "payload_bits",
    params={
        "case": Param("str", choices=_CASES, doc="compressor:coding (none:<dtype> for dense messages)"),
        "d": Param("int", default=10_000, low=1, doc="vector length"),
        "density": Param("float", default=0.01, low=0.0, high=1.0, low_open=True, doc="k / d for sparsifiers"),
        "r_over_k": Param("int", default=4, low=1, doc="rtop_k: r = r_over_k * k (capped at d)"),
        "s": Param("int", default=16, low=1, doc="QSGD levels"),
        "value_dtype": Param("str", default="float32", choices=("float32", "float16", "bfloat16"),
                             doc="dtype of sparse values on the wire (dense cases name their own)"),
    },
)
def payload_bits(params, rng, backend):
    """One message of a standard Gaussian vector, encoded: ``encoded_bits`` and ``index_bits``.

    ``encoded_bits`` is 8 x the payload bytes; for sparse cases ``index_bits`` is the bits of the index
    section alone (payload minus header and values).

    The row carries ``header_bits`` (a format constant) for the bound; ``k = max(1, round(density d))``.
    Every message is decoded again and compared; a mismatch is reported in ``note``.
    """
    comp, _, coding = params["case"].partition(":")
    d = params["d"]
    k = _k(params)
    x_rng, c_rng = rng.spawn(2)
    x = x_rng.standard_normal(d).astype(np.float32)
    if comp == "none":
        msg = message("none", x, value_dtype=coding)
        coding = "raw"
    else:
        msg = message(comp, x, k=k, r=min(d, params["r_over_k"] * k), s=params["s"],
                      value_dtype=params["value_dtype"], rng=c_rng)
    blob = encode(msg, coding)
    extra = {} if decode(blob) == msg else {"note": "round trip failed"}
    rows = [dict(metric="encoded_bits", value=8.0 * len(blob), header_bits=8 * HEADER_BYTES, **extra)]
    if msg.kind == "sparse":
        value_bytes = msg.values.size * (4 if msg.value_dtype == "float32" else 2)
        rows.append(dict(metric="index_bits", value=8.0 * (len(blob) - HEADER_BYTES - value_bytes),
                         header_bits=8 * HEADER_BYTES, **extra))
    return rows


def _ring_allgather_time(sizes: np.ndarray, net: Network) -> float:
    """Phase-by-phase ring allgather: in phase s node i forwards node (i - s)'s message to i + 1."""
    import scipy.sparse as sp

    n = sizes.size
    src = np.arange(n)
    return sum(phase_time(sp.coo_array((np.roll(sizes, s).astype(float), (src, (src + 1) % n)), shape=(n, n)), net)
               for s in range(n - 1))


def _ring_allreduce_time(dense_bytes: int, n: int, net: Network, value_bytes: int = 4) -> float:
    """Phase-by-phase ring allreduce with the uneven chunks of splitting d values into n pieces."""
    import scipy.sparse as sp

    d = dense_bytes // value_bytes
    chunks = np.array([len(c) for c in np.array_split(np.arange(d), n)], dtype=float) * value_bytes
    src = np.arange(n)
    total = 0.0
    for phase in range(2 * (n - 1)):  # reduce-scatter then allgather: node i sends chunk (i - phase) mod n
        total += phase_time(sp.coo_array((np.roll(chunks, phase), (src, (src + 1) % n)), shape=(n, n)), net)
    return total


@experiment(
    "allgather_crossover",
    columns=("prediction",),
    params={
        "n": Param("int", low=2, doc="nodes"),
        "d": Param("int", default=100_000, low=1, doc="coordinates per gradient"),
        "density": Param("float", default=0.01, low=0.0, high=1.0, low_open=True, doc="k / d"),
        "coding": Param("str", default="gamma", choices=("auto", "raw", "packed", "bitmap", "gamma", "varint"),
                        doc="index coding of the top-k messages"),
        "alpha": Param("float", default=1e-6, low=0.0, doc="seconds per message"),
        "beta": Param("float", default=1e-9, low=0.0, doc="seconds per byte (links and NICs)"),
        "predict": Param("str", default="theory.network:sparse_allgather_time_ratio",
                         doc="theory: (n, dense_bytes, sparse_bytes, alpha, beta) -> time ratio top-k/dense"),
    },
)
def allgather_crossover(params, rng, backend):
    """Per-step communication time of top-k by ring allgather and of dense ring allreduce.

    Each of the ``n`` nodes holds its own standard Gaussian gradient; its top-k message is encoded
    with ``coding`` (real sizes, different per node for gap codings). Both collectives are simulated
    phase by phase. Rows ``comm_time`` are labelled ``prediction = predicted_faster`` or
    ``predicted_slower`` by whether the predicted time ratio (top-k / dense, the ``predict`` function
    called with the mean measured message sizes) is below 1; a row
    ``topk_predicted_faster`` (1 or 0) records which method got which label.
    """
    from simcomm.compress import top_k_indices

    n, d = params["n"], params["d"]
    k = _k(params)
    net = Network(params["alpha"], params["beta"])
    G = rng.standard_normal((n, d)).astype(np.float32)
    idx = np.sort(top_k_indices(G, k), axis=1)
    sizes = np.empty(n)
    for i in range(n):
        m = Message("sparse", d, "float32", values=G[i, idx[i]], indices=idx[i].astype(np.int64))
        sizes[i] = len(encode(m, params["coding"]))
    dense_bytes = HEADER_BYTES + 4 * d
    t_sparse = _ring_allgather_time(sizes, net)
    t_dense = _ring_allreduce_time(4 * d, n, net)
    pays = float(_predictor(params["predict"])(n=n, dense_bytes=float(dense_bytes), sparse_bytes=float(sizes.mean()),
                                                alpha=params["alpha"], beta=params["beta"])) < 1.0
    lab = ("predicted_faster", "predicted_slower") if pays else ("predicted_slower", "predicted_faster")
    return [dict(metric="comm_time", value=t_sparse, prediction=lab[0]),
            dict(metric="comm_time", value=t_dense, prediction=lab[1]),
            dict(metric="topk_predicted_faster", value=float(pays)),
            dict(metric="sparse_bytes", value=float(sizes.mean())),
            dict(metric="allgather_time", value=t_sparse),
            dict(metric="allreduce_time", value=t_dense)]


def _hit(step, loss, target):
    j = np.flatnonzero(loss <= target)
    return int(step[j[0]]) if j.size else None


@experiment(
    "compression_pays",
    columns=("prediction",),
    params={
        "dataset": Param("str", default="digits", choices=("digits", "mnist", "breast_cancer"), doc="packaged data"),
        "n": Param("int", default=8, low=2, doc="workers (synchronous data parallel)", former="n_workers"),
        "k": Param("int", default=1, low=1, doc="coordinates each worker sends (EF top-k)"),
        "lr": Param("float", default=0.5, low=0.0, low_open=True, doc="step size (both methods)"),
        "batch_size": Param("int", default=16, low=1, doc="examples per worker and step"),
        "steps": Param("int", default=500, low=1, doc="horizon (time to target is censored there)"),
        "record_every": Param("int", default=5, low=1, doc="monitor period: resolution of the hitting step",
                              former="eval_every"),
        "target_loss": Param("float", default=0.1, low=0.0, low_open=True, doc="target training loss"),
        "alpha": Param("float", default=1e-5, low=0.0, doc="seconds per message"),
        "beta": Param("float", default=1e-9, low=0.0, doc="seconds per byte"),
        "compute_shift": Param("float", default=1e-4, low=0.0, doc="compute time: shift (s)"),
        "compute_scale": Param("float", default=5e-5, low=0.0, doc="compute time: mean of the exponential tail (s)"),
        "predict": Param("str", default="theory.network:ef_topk_time_ratio",
                         doc="theory: (rho, n, ..., shift, scale) -> time ratio top-k / SGD"),
    },
)
def compression_pays(params, rng, backend):
    """Simulated wall-clock time for EF top-k (ring allgather) and SGD (ring allreduce) to reach a target loss.

    A logistic regression (one-layer MLP) on ``dataset``; both evaluated runs share the initial
    parameters, minibatches (common random numbers) and the straggler draws; messages are encoded
    payloads (their byte counts). First a pilot pair on independent streams gives the step ratio
    ``rho`` = pilot steps(top-k) / pilot steps(SGD) to the target, then the predicted time ratio
    (top-k / SGD, the ``predict`` function) labels the two methods (top-k faster iff it is below 1);
    the evaluated ``time_to_target`` rows carry the labels. A run that misses the target
    is censored at the horizon (``censored = True``, value = the time of the horizon).

    The evaluated runs' traces come back as ``train_loss`` rows per ``method`` (``sgd``, ``top_k``)
    at each monitored ``step``, with ``bits`` (cumulative encoded payload bits one worker has sent)
    and the ``pattern`` of the method (``ring_allreduce``, ``allgather``): a spec's ``[network]``
    table gives them a simulated ``time`` column.
    """
    from simcomm.models import init_params, load_dataset, mlp
    from simcomm.network import allgather_time, ring_allreduce_time
    from simcomm.optim import ef_sgd

    data_rng, pilot_rng, eval_rng, straggle_rng = rng.spawn(4)
    ds = load_dataset(params["dataset"], rng=data_rng)
    model = mlp((ds.X_train.shape[1], ds.n_classes))
    D, n, k, T = model.n_params, params["n"], params["k"], params["steps"]
    if k > D:
        raise SpecError(f"compression_pays: k = {k} exceeds the model's D = {D} parameters; use k <= {D}")
    common = dict(n=n, steps=T, lr=params["lr"], batch_size=params["batch_size"],
                  record_every=params["record_every"], backend=backend)
    net = Network(params["alpha"], params["beta"])
    straggler = Straggler("shifted_exp", params["compute_shift"], params["compute_scale"]) \
        if params["compute_scale"] > 0 else Straggler("constant", params["compute_shift"])
    x = np.random.default_rng(0).standard_normal(D).astype(np.float32)  # only the message SIZE is used
    dense_bytes = len(encode(message("none", x)))
    sparse_bytes = len(encode(message("top_k", x, k=k)))  # auto coding: fixed size for a given (k, D)
    comm = {"sgd": ring_allreduce_time(n, dense_bytes, net), "top_k": allgather_time(n, sparse_bytes, net)}

    def run(stream_rng):
        th_rng, batch_gen, comp_rng = stream_rng.spawn(3)
        theta0 = init_params(model, rng=th_rng)
        batch_seed = int(batch_gen.integers(2**63))  # the same minibatches for both methods
        return {c: ef_sgd(model, ds.X_train, ds.y_train, compressor=Identity() if c == "sgd" else TopK(k),
                          x0=theta0, batch_rng=batch_seed, rng=comp_rng, **common) for c in ("sgd", "top_k")}

    pilot = run(pilot_rng)
    hits = {c: _hit(tr.step, tr.train_loss, params["target_loss"]) for c, tr in pilot.items()}
    if hits["sgd"] is None or hits["top_k"] is None:
        return [dict(metric="time_to_target", value=float("nan"), prediction=p,
                     note="pilot run missed the target; raise steps or the target")
                for p in ("predicted_faster", "predicted_slower")]
    rho = hits["top_k"] / hits["sgd"]
    pays = float(_predictor(params["predict"])(rho=rho, n=n, dense_bytes=float(dense_bytes),
                                                sparse_bytes=float(sparse_bytes), alpha=params["alpha"],
                                                beta=params["beta"], shift=params["compute_shift"],
                                                scale=params["compute_scale"])) < 1.0
    label = {"top_k": "predicted_faster" if pays else "predicted_slower",
             "sgd": "predicted_slower" if pays else "predicted_faster"}
    evald = run(eval_rng)
    compute = straggler.draw((T, n), rng=straggle_rng)  # the same straggler draws for both methods
    rows = [dict(metric="rho_pilot", value=rho), dict(metric="topk_predicted_faster", value=float(pays))]
    for c, tr in evald.items():
        cum = np.concatenate([[0.0], np.cumsum(compute.max(axis=1) + comm[c])])
        s = _hit(tr.step, tr.train_loss, params["target_loss"])
        censored = s is None
        rows.append(dict(metric="time_to_target", value=float(cum[T if censored else s]), prediction=label[c],
                         censored=censored))
        rows.append(dict(metric="steps_to_target", value=float(T if censored else s), prediction=label[c],
                         censored=censored))
        # the trace: with a [network] table the runner adds its simulated `time` column (trace_time)
        nbytes = dense_bytes if c == "sgd" else sparse_bytes
        pattern = "ring_allreduce" if c == "sgd" else "allgather"
        rows += [dict(metric="train_loss", value=float(v), method=c, step=int(st), bits=8.0 * nbytes * int(st),
                      pattern=pattern) for st, v in zip(tr.step, tr.train_loss)]
    return rows


@experiment(
    "one_peer_time",
    params={
        "n": Param("int", default=16, low=2, doc="nodes"),
        "d": Param("int", default=10, low=1, doc="dimension of the least-squares proxy problem"),
        "b": Param("float", default=1.0, low=0.0, doc="heterogeneity of the local problems"),
        "sigma": Param("float", default=1.0, low=0.0, doc="gradient noise"),
        "momentum": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="DmSGD momentum"),
        "lr": Param("float", default=0.002, low=0.0, low_open=True, doc="lr_k = lr sqrt(n)/sqrt(1+k/k0)",
                    former="gamma"),
        "k0": Param("float", default=100.0, low=0.0, low_open=True, doc="step-size decay scale"),
        "steps": Param("int", default=800, low=1, doc="horizon"),
        "inner": Param("int", default=4, low=1, doc="noise seeds averaged into one loss curve per graph"),
        "target_rel": Param("float", default=0.01, low=0.0, high=1.0, low_open=True,
                            doc="target: f(xbar) - f* <= target_rel * (f(x0) - f*)"),
        "model_bytes": Param("float", default=4e6, low=0.0, low_open=True,
                             doc="bytes of one gossip message (the model being trained, e.g. 1M float32)"),
        "alpha": Param("float", default=1e-4, low=0.0, doc="seconds per message"),
        "beta": Param("float", default=1e-9, low=0.0, doc="seconds per byte (links and NICs)"),
        "compute": Param("float", default=1e-3, low=0.0, doc="compute seconds per step (every node)"),
        "onepeer_lr_scale": Param("float", default=1.0, low=0.0, low_open=True, keyed_at_default=False,
                                  doc="negative control only: the one-peer run's step size is lr times this"),
    },
)
def one_peer_time(params, rng, backend):
    """Simulated time for DmSGD on the static and the one-peer exponential graph to reach a target loss.

    Both graphs share the problem and the noise (the same ``inner`` seeds, whose loss curves are
    averaged before the hitting step is read: a single noisy curve crosses the target at a jittery
    step). A step costs ``compute`` plus
    :func:`simcomm.network.gossip_time` of the step's layer (every node sends ``model_bytes`` to each
    out-neighbour: ``ceil(log2 n)`` messages on the static graph, one on the one-peer graph). The
    optimisation runs on a least-squares proxy of dimension ``d``; the messages are charged at
    ``model_bytes`` (the size of the model a user trains). Rows: ``static_time`` (value) with the
    one-peer run's ``onepeer_time`` as a column (the bound scales it), ``onepeer_time`` and
    ``step_ratio`` (static / one-peer hitting steps). A missed target is censored at the horizon.
    ``onepeer_lr_scale`` != 1 (negative control) changes the one-peer run's step size only, so the two
    graphs no longer reach the target at the same step.
    """
    import math

    from simcomm.models import heterogeneous_least_squares
    from simcomm.network import gossip_time
    from simcomm.optim import run_dsgd
    from simcomm.topology import build

    n, T = params["n"], params["steps"]
    prob = heterogeneous_least_squares(n, params["d"], b=params["b"], rng=rng)
    seed = int(rng.integers(2**62))
    net = Network(params["alpha"], params["beta"])
    out = {}
    for name in ("exponential", "one_peer_exponential"):
        topo = build(name, n)
        s = 0.0
        for j in range(params["inner"]):
            scale = params["onepeer_lr_scale"] if name == "one_peer_exponential" else 1.0
            tr = run_dsgd(prob, name, steps=T, lr=params["lr"] * scale * math.sqrt(n), beta=params["momentum"],
                          sigma=params["sigma"], seed=seed + j, schedule="inv_sqrt", k0=params["k0"],
                          backend=backend)
            s = s + tr.subopt / params["inner"]
        per = topo.period if topo.time_varying else 1
        comm = np.array([gossip_time(topo, params["model_bytes"], net, k) for k in range(per)])
        step_t = params["compute"] + comm[np.arange(T) % per]
        cum = np.concatenate([[0.0], np.cumsum(step_t)])
        hit = np.flatnonzero(np.isfinite(s) & (s <= params["target_rel"] * s[0]))
        steps = int(tr.step[hit[0]]) if hit.size else T
        out[name] = (float(cum[steps]), steps, not hit.size)
    (t_s, s_s, c_s), (t_o, s_o, c_o) = out["exponential"], out["one_peer_exponential"]
    note = {"note": "target missed (censored at the horizon)"} if (c_s or c_o) else {}
    return [dict(metric="static_time", value=t_s, onepeer_time=t_o, censored=c_s, **note),
            dict(metric="onepeer_time", value=t_o, censored=c_o, **note),
            dict(metric="step_ratio", value=s_s / max(s_o, 1))]


@experiment(
    "model_vs_mpi",
    params={
        "n": Param("int", default=2, low=2, high=16, doc="MPI ranks on this machine (loopback)"),
        "nbytes": Param("int", default=1_048_576, low=8, doc="bytes per rank reduced by the Allreduce"),
        "reps": Param("int", default=10, low=1, doc="repetitions per size (the best counts)"),
    },
)
def model_vs_mpi(params, rng, backend):
    """Measured MPI ``Allreduce`` time next to the alpha and beta fitted from a ping-pong in the same run.

    One ``simcomm net calibrate`` measurement per replicate (mpiexec on loopback, ``n`` ranks): the
    ping-pong over 8 B, 64 KiB, 1 MiB and ``nbytes`` gives ``alpha`` and ``beta`` (row columns, the
    bound's inputs); the row's value is the measured Allreduce time of ``nbytes``. Without mpiexec or
    mpi4py the row is NaN with the reason in ``note``. ``rng`` is unused: this is a measurement.
    """
    from simcomm._errors import UserError
    from simcomm.network import calibrate

    sizes = sorted({8, 65536, 1048576, params["nbytes"]})
    try:
        res = calibrate(np_=params["n"], sizes=sizes, reps=params["reps"])
    except UserError as exc:
        return [dict(metric="allreduce_time", value=float("nan"), alpha=float("nan"), beta=float("nan"),
                     note=str(exc))]
    i = res["sizes"].index(params["nbytes"])
    return [dict(metric="allreduce_time", value=float(res["allreduce"][i]), alpha=res["alpha"], beta=res["beta"]),
            dict(metric="pingpong_time", value=float(res["pingpong"][i]))]


# ------------------------------------------------- measured step inflation (simcomm net predict --simulate)
def _stand_in_compressor(comp, D: int, d: int):
    """``comp`` at the stand-in's dimension ``D``: k and r keep their fraction of ``d``; other settings stay."""
    import dataclasses

    changes = {}
    for name in ("k", "r"):
        if hasattr(comp, name) and isinstance(getattr(comp, name), int):
            changes[name] = min(D, max(1, round(getattr(comp, name) / d * D)))
    return dataclasses.replace(comp, **changes) if changes else comp


@entry_point
def measure_step_inflation(compressors, *, d: int, n: int = 8, steps: int = 500, target_loss: float = 0.1,
                           replicates: int = 3, rng=None, backend=None) -> list[dict]:
    r"""Measured step inflation :math:`\rho` = steps(compressor) / steps(SGD) to a target loss on a stand-in problem.

    The stand-in: multinomial logistic regression on the digits data (``D = 650`` parameters),
    ``min(n, 8)`` workers, step size 0.5, 16 examples per worker and step, error feedback around
    each compressor (:func:`simcomm.optim.ef_sgd`), the same initial point and minibatches for every
    method in a replicate. ``k`` and ``r`` keep their fraction of ``d`` (``k = 1%`` of the model is 1%
    of ``D``); other settings (``s``, ...) are kept as given. It says how much the compressor slows
    optimisation on a small convex problem, not on the user's model.

    Parameters
    ----------
    compressors : iterable of str or Compressor
        As for :func:`simcomm.network.predict_step_times` (labels are resolved at ``d``).
    d : int
        The user's model size (for the fractions of k and r).
    n : int
        The user's node count (the stand-in uses ``min(n, 8)`` workers).
    steps : int
        Horizon of each run; a run that misses the target by then is censored.
    target_loss : float
        Training loss to reach.
    replicates : int
        Independent replicates (streams of ``rng``).
    rng : numpy.random.Generator or seed, optional
    backend : str, optional
        The backend the runs compute on (default: the active one).

    Returns
    -------
    list of dict
        One row per compressor: ``compressor`` (label at d), ``stand_in`` (label at D), ``rho`` (mean
        of the per-replicate ratios over the replicates where both runs reached the target; ``nan`` if
        none did), ``rho_min``, ``rho_max``, ``censored`` (replicates where the compressor missed the
        target: then rho > steps / SGD's steps), ``sgd_steps`` (mean).
    """
    from simcomm._validate import positive
    from simcomm.compress import Identity
    from simcomm.models import init_params, load_dataset, mlp
    from simcomm.network import resolve_compressor
    from simcomm.optim import ef_sgd

    steps = positive("steps", steps, integer=True)
    replicates = positive("replicates", replicates, integer=True)
    target_loss = positive("target_loss", target_loss)
    d = positive("d (model parameters)", d, integer=True)
    comps = [resolve_compressor(x, d) if isinstance(x, str) else x for x in compressors]
    rng = np.random.default_rng(rng)
    data_rng, run_rng = rng.spawn(2)
    ds = load_dataset("digits", rng=data_rng)
    model = mlp((ds.X_train.shape[1], ds.n_classes))
    D = model.n_params
    workers = min(int(n), 8)
    stand = [_stand_in_compressor(c, D, d) for c in comps]
    common = dict(n=workers, steps=steps, lr=0.5, batch_size=16, record_every=5)

    def hit(tr):
        j = np.flatnonzero(tr.train_loss <= target_loss)
        return int(tr.step[j[0]]) if j.size else None

    ratios = [[] for _ in comps]
    censored = [0] * len(comps)
    sgd_steps = []
    for rep_rng in run_rng.spawn(replicates):
        th_rng, batch_gen, comp_rng = rep_rng.spawn(3)
        x0 = init_params(model, rng=th_rng)
        batch_seed = int(batch_gen.integers(2**63))
        base = hit(ef_sgd(model, ds.X_train, ds.y_train, compressor=Identity(), x0=x0, batch_rng=batch_seed,
                          rng=comp_rng, **common))
        if base is None:
            raise UserError(f"the stand-in's SGD did not reach training loss {target_loss} in {steps} steps; "
                            "raise --steps or the target")
        sgd_steps.append(base)
        for i, c in enumerate(stand):
            s = hit(ef_sgd(model, ds.X_train, ds.y_train, compressor=c, x0=x0, batch_rng=batch_seed,
                           rng=comp_rng, **common))
            if s is None:
                censored[i] += 1
            else:
                ratios[i].append(s / base)
    out = []
    for c, sc, r, cen in zip(comps, stand, ratios, censored):
        out.append(dict(compressor=c.label, stand_in=sc.label, rho=float(np.mean(r)) if r else math.nan,
                        rho_min=float(min(r)) if r else math.nan, rho_max=float(max(r)) if r else math.nan,
                        censored=cen, sgd_steps=float(np.mean(sgd_steps))))
    return out


@entry_point
def measure_local_steps_to_target(rows, *, d: int, n: int = 8, steps: int = 2000, target: float = 1e-3,
                                  replicates: int = 3, rng=None, backend=None) -> list[dict]:
    r"""Inner steps and time to a target of local-update methods (DiLoCo) on a non-iid stand-in problem.

    The stand-in: regularised logistic regression on breast_cancer (``D = 31``), split over ``min(n, 8)``
    workers by label (non-iid: local updates drift), full gradients, inner SGD of step :math:`1/L`,
    DiLoCo's outer Nesterov step (0.7, 0.9) for every row but data-parallel SGD (``H = 1``, outer SGD of
    1), error feedback around every compressor; ``k`` and ``r`` keep their fraction of ``d``. A
    deterministic compressor runs once (with full gradients its replicates would repeat it). It says how
    H and the compressor slow optimisation on a small convex problem, not on the user's model.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`simcomm.network.predict_local_times` (``method``, ``H``, ``compressor`` labelled
        at ``d``, ``step_s``).
    d : int
        The user's model size (for the fractions of k and r).
    n : int
        The user's node count (the stand-in uses ``min(n, 8)`` workers).
    steps : int
        Horizon of each run in inner steps; a run that misses the target by then is censored.
    target : float
        The target: :math:`f - f^\star` at most this fraction of the start's, in (0, 1).
    replicates : int
        Independent replicates (streams of ``rng``) of a random compressor.
    rng : numpy.random.Generator or seed, optional
    backend : str, optional
        The backend the runs compute on (default: the active one).

    Returns
    -------
    list of dict
        A copy of each row with ``stand_in`` (the compressor's label at ``D``), ``steps`` (mean inner
        steps to the target over the replicates that reached it; ``None`` if none did), ``censored``
        (replicates that missed it) and ``time_to_target_s`` (``steps`` times ``step_s``; ``None`` if
        any replicate missed the target).
    """
    import dataclasses

    from simcomm._validate import positive
    from simcomm.compress import compressor_from_label
    from simcomm.models import logistic
    from simcomm.network import resolve_compressor
    from simcomm.optim import build_method, run

    steps = positive("steps", steps, integer=True)
    replicates = positive("replicates", replicates, integer=True)
    d = positive("d (model parameters)", d, integer=True)
    if not 0.0 < target < 1.0:
        raise UserError(f"target {target!r} is not allowed; use a fraction of the start's f - f* in (0, 1)")
    problem = logistic(min(int(n), 8), dataset="breast_cancer", heterogeneous=True)
    D = problem.d
    gap0 = float(problem.value(problem.x0[None])[0] - problem.f_star)
    lr = 1.0 / problem.L

    def stand_in(label):
        c = compressor_from_label(label) if label == "none" else resolve_compressor(label, d)
        kw = {s.name: max(1, min(D, round(getattr(c, s.name) * D / d))) for s in c.settings()
              if s.name in ("k", "r") and isinstance(getattr(c, s.name), int)}
        return dataclasses.replace(c, **kw) if kw else c

    # replicate i of every row starts from the same stream (common random numbers across rows)
    streams = np.random.default_rng(rng).bit_generator.seed_seq.spawn(replicates)
    out = []
    for row in rows:
        r = dict(row)
        c = stand_in(r["compressor"])
        if r["method"] == "sgd":
            method = build_method("diloco", H=1, lr=lr, outer="sgd", outer_lr=1.0)
        else:
            method = build_method("diloco", H=r["H"], lr=lr, compressor=c.label,
                                  feedback="none" if c.label == "none" else "ef")
        hits = []
        for ss in streams[:1] if getattr(c, "deterministic", False) else streams:  # full gradients: one run tells
            tr = run(problem, method, steps, rng=np.random.default_rng(ss), stop_gap=target * gap0)
            j = np.flatnonzero(tr.f_gap[0] <= target * gap0)
            hits.append(int(tr.step[j[0]]) if j.size else None)
        done = [h for h in hits if h is not None]
        r["stand_in"] = c.label
        r["censored"] = len(hits) - len(done)
        r["steps"] = float(np.mean(done)) if done else None
        r["time_to_target_s"] = r["steps"] * r["step_s"] if done and not r["censored"] else None
        out.append(r)
    return out
