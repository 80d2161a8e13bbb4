r"""Network time model: alpha-beta links, full-duplex NIC limits, communication patterns, stragglers.

Model (one communication *phase*: every node sends its messages of the phase at once)

* a message of ``b`` bytes over the link ``i -> j`` takes :math:`\alpha_{ij} + \beta_{ij} b` seconds
  (latency and inverse bandwidth per link; scalars or ``(n, n)`` arrays in :class:`Network`);
* messages in flight overlap their latency, but a node's NIC is full duplex with inverse bandwidth
  :math:`\beta^{\rm nic}_i` per direction: everything node ``i`` sends in a phase leaves through its
  egress at :math:`\beta^{\rm nic}_i \sum_j b_{ij}`, everything it receives enters through its
  ingress at :math:`\beta^{\rm nic}_i \sum_j b_{ji}` (sending and receiving do not contend);
* the phase ends when its last byte arrives:

  .. math:: T = \max\Bigl(\max_{(i,j)} \alpha_{ij} + \beta_{ij} b_{ij},\
            \max_i \bar\alpha + \beta^{\rm nic}_i \textstyle\sum_j b_{ij},\
            \max_j \bar\alpha + \beta^{\rm nic}_j \textstyle\sum_i b_{ij}\Bigr),

  :math:`\bar\alpha` the smallest latency of the links used (:func:`phase_time`).

Patterns (the papers' communication): :func:`ps_time` (parameter server: incast of ``n`` uploads at the
server's ingress, then the broadcast from its egress), :func:`ring_allreduce_time` (dense: reduce-scatter
plus allgather, :math:`2(n-1)` phases of ``b/n`` bytes to the ring successor), :func:`allgather_time`
(sparse messages do not sum: a ring allgather forwards every node's message, :math:`n-1` phases of
the largest message), :func:`gossip_time` (each node sends its message to each out-neighbour of the
``Topology``'s layer of that step; a one-peer graph sends one message per step).

Stragglers: :class:`Straggler` draws per-node compute times (``constant`` or ``shifted_exp``) from
``rng``; :func:`sync_step_times` waits for the slowest node every step; :func:`async_delays` runs
workers on their own clocks and returns the delays :math:`\tau` an asynchronous server sees.
:func:`add_time` adds a simulated ``time`` column to an optimiser's trace table.

All functions are pure and vectorised over byte counts (any array shape broadcasts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcomm._errors import UserError

__all__ = [
    "Network", "Straggler", "PATTERNS", "phase_time", "ps_time", "ring_allreduce_time", "allgather_time",
    "gossip_time", "comm_time", "sync_step_times", "async_delays", "Clock", "add_time", "trace_time",
    "spec_network_params",
]

#: communication patterns :func:`comm_time` and :func:`add_time` accept
PATTERNS = ("ps", "ring_allreduce", "allgather", "gossip")


def _check_nonneg(name, value, allow_array=True):
    a = np.asarray(value, dtype=np.float64) if allow_array else value
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise UserError(f"network: {name} = {value!r} is not a number; use a finite value >= 0 (seconds)") from None
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise UserError(f"network: {name} = {value!r} is not allowed; use a finite value >= 0 "
                        f"({'seconds per message' if name == 'alpha' else 'seconds per byte'})")
    return float(arr) if arr.ndim == 0 else arr


@dataclass(frozen=True)
class Network:
    """Latency and inverse bandwidth of the links, and the NICs' inverse bandwidth.

    Parameters
    ----------
    alpha : float or numpy.ndarray, shape (n, n)
        Seconds per message on a link (latency), ``>= 0``.
    beta : float or numpy.ndarray, shape (n, n)
        Seconds per byte on a link (inverse bandwidth), ``>= 0``.
    nic_beta : float or numpy.ndarray, shape (n,), optional
        Seconds per byte through a node's NIC in each direction (full duplex). ``None`` (default)
        means one NIC as fast as one link (``max(beta)``); ``0`` means the NIC never limits.

    Examples
    --------
    >>> net = Network(alpha=1e-5, beta=1e-9)   # 10 us, 1 GB/s
    >>> round(ring_allreduce_time(4, 4e6, net), 6)   # 6 phases of 1e6 bytes
    0.00606
    """

    alpha: float | np.ndarray
    beta: float | np.ndarray
    nic_beta: float | np.ndarray | None = None

    def __post_init__(self):
        object.__setattr__(self, "alpha", _check_nonneg("alpha", self.alpha))
        object.__setattr__(self, "beta", _check_nonneg("beta", self.beta))
        nic = float(np.max(self.beta)) if self.nic_beta is None else _check_nonneg("nic_beta", self.nic_beta)
        object.__setattr__(self, "nic_beta", nic)

    def link(self, src, dst):
        """``(alpha, beta)`` of the links ``src -> dst`` (arrays broadcast like ``src``/``dst``)."""
        a = self.alpha if np.ndim(self.alpha) == 0 else np.asarray(self.alpha)[src, dst]
        b = self.beta if np.ndim(self.beta) == 0 else np.asarray(self.beta)[src, dst]
        return a, b

    def nic(self, node):
        """NIC inverse bandwidth of ``node`` (array-like)."""
        return self.nic_beta if np.ndim(self.nic_beta) == 0 else np.asarray(self.nic_beta)[node]

    @classmethod
    def from_toml(cls, path) -> "Network":
        """Read ``alpha``, ``beta`` and optional ``nic_beta`` from a ``[network]`` table in a TOML file."""
        import tomllib

        try:
            with open(path, "rb") as fh:
                raw = tomllib.load(fh)
        except OSError as exc:
            raise UserError(f"cannot read network file '{path}': {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"network file '{path}' is not valid TOML: {exc}") from None
        table = raw.get("network", raw)
        missing = [k for k in ("alpha", "beta") if k not in table]
        if missing:
            raise UserError(f"network file '{path}' lacks {', '.join(missing)}; "
                            "run 'simcomm net calibrate' to write one")
        return cls(table["alpha"], table["beta"], table.get("nic_beta"))


def phase_time(send, net: Network) -> float:
    """Time of one phase in which node ``i`` sends ``send[i, j]`` bytes to node ``j`` (see module docstring).

    Parameters
    ----------
    send : array_like or scipy.sparse matrix, shape (n, n)
        Bytes per directed link; zero = no message (the diagonal is ignored).
    net : Network

    Returns
    -------
    float
        Seconds; 0 when nothing is sent.
    """
    import scipy.sparse as sp

    S = sp.coo_array(send)
    keep = (S.data > 0) & (S.row != S.col)
    src, dst, b = S.row[keep], S.col[keep], S.data[keep].astype(np.float64)
    if b.size == 0:
        return 0.0
    n = S.shape[0]
    a, bl = net.link(src, dst)
    a = np.broadcast_to(a, b.shape)
    link = float(np.max(a + bl * b))
    amin = float(np.min(a))
    out = np.bincount(src, weights=b, minlength=n)
    inn = np.bincount(dst, weights=b, minlength=n)
    nodes = np.arange(n)
    nic = np.broadcast_to(net.nic(nodes), (n,))
    return max(link, amin + float(np.max(nic * out)), amin + float(np.max(nic * inn)))


def _uniform(net: Network, what: str):
    if np.ndim(net.alpha) or np.ndim(net.beta) or np.ndim(net.nic_beta):
        raise UserError(f"{what}: per-link alpha/beta arrays need phase_time or gossip_time; pass scalars here")
    return float(net.alpha), float(net.beta), float(net.nic_beta)


def _bytes(b, what):
    b = np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b < 0):
        raise UserError(f"{what}: message bytes must be finite and >= 0")
    return b


def _ret(x):
    """Plain float for a scalar result, array otherwise."""
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x


def _check_nodes(n, what):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise UserError(f"{what}: n = {n!r} is not allowed; use an integer number of nodes n >= 1")
    return int(n)


def ps_time(n: int, up_bytes, down_bytes, net: Network):
    r"""Parameter server step: ``n`` workers upload ``up_bytes`` (incast), the server sends ``down_bytes`` to each.

    .. math:: T = 2\alpha + \max(\beta b_\uparrow, n\beta^{\rm nic} b_\uparrow)
                  + \max(\beta b_\downarrow, n\beta^{\rm nic} b_\downarrow)

    (the server is a separate node; its ingress carries all ``n`` uploads, its egress all ``n``
    downloads). Vectorised over the byte arrays.
    """
    n = _check_nodes(n, "ps_time")
    a, b, nic = _uniform(net, "ps_time")
    up, down = _bytes(up_bytes, "ps_time"), _bytes(down_bytes, "ps_time")
    t_up = np.where(up > 0, a + np.maximum(b * up, n * nic * up), 0.0)
    t_down = np.where(down > 0, a + np.maximum(b * down, n * nic * down), 0.0)
    return _ret(t_up + t_down)


def ring_allreduce_time(n: int, nbytes, net: Network):
    r"""Dense ring allreduce of ``nbytes`` per node: :math:`2(n-1)(\alpha + \max(\beta,\beta^{\rm nic})\,b/n)`.

    Reduce-scatter then allgather, each ``n - 1`` phases in which every node sends one ``b/n`` chunk
    to its ring successor (one link out, one in, so the NIC carries the same bytes as the link).
    """
    n = _check_nodes(n, "ring_allreduce_time")
    a, b, nic = _uniform(net, "ring_allreduce_time")
    nb = _bytes(nbytes, "ring_allreduce_time")
    return _ret(np.where(nb > 0, 2 * (n - 1) * (a + max(b, nic) * nb / n), 0.0) if n > 1 else np.zeros_like(nb))


def allgather_time(n: int, nbytes, net: Network):
    r"""Ring allgather of one message per node: :math:`(n-1)(\alpha + \max(\beta,\beta^{\rm nic})\,b)`.

    Sparse messages do not sum, so every node's message travels to every other node.

    ``nbytes`` of shape ``(..., n)`` gives each node's message size: phase ``s`` forwards node
    ``i - s``'s message from every node, so each phase lasts as long as its largest message; with a
    scalar all messages have that size.
    """
    n = _check_nodes(n, "allgather_time")
    a, b, nic = _uniform(net, "allgather_time")
    nb = _bytes(nbytes, "allgather_time")
    if nb.ndim and nb.shape[-1] == n:
        nb = nb.max(axis=-1)
    return _ret(np.where(nb > 0, (n - 1) * (a + max(b, nic) * nb), 0.0) if n > 1 else np.zeros_like(nb))


def _layer_edges(layer):
    """Directed (src, dst) message pairs of one static layer: src sends its model to dst when W[dst, src] != 0."""
    from simcomm.topology import sparse_matrix

    if layer.kind == "circulant" and len(layer.shape) == 1:
        n = layer.n
        offs = np.array([h % n for h in layer.offsets[:, 0].tolist() if h % n != 0], dtype=np.int64)
        dst = np.repeat(np.arange(n), offs.size)
        src = (dst + np.tile(offs, n)) % n  # x_i += w_h * x_{i+h}: node i+h sends to node i
        return src, dst
    W = sparse_matrix(layer).tocoo()
    keep = (W.row != W.col) & (W.data != 0)
    return W.col[keep].astype(np.int64), W.row[keep].astype(np.int64)


def gossip_time(topology, nbytes, net: Network, step: int = 0) -> float:
    """One gossip round on ``topology`` (its layer for ``step`` if time-varying).

    Each node sends one message of ``nbytes`` (scalar, or one per node) to each of its
    out-neighbours; :func:`phase_time`.

    A static exponential graph sends ``ceil(log2 n)`` messages per node and step, the one-peer graph one.
    """
    layer = topology.layer(step) if topology.time_varying else topology
    n = layer.n
    nb = np.broadcast_to(_bytes(nbytes, "gossip_time"), (n,))
    src, dst = _layer_edges(layer)
    if src.size == 0:
        return 0.0
    import scipy.sparse as sp

    return phase_time(sp.coo_array((nb[src], (src, dst)), shape=(n, n)), net)


def comm_time(pattern: str, n: int, nbytes, net: Network, *, topology=None, down_bytes=None, step: int = 0):
    """Per-step communication time of ``pattern`` (one of :data:`PATTERNS`) for messages of ``nbytes``.

    ``ps`` uses ``down_bytes`` for the broadcast (default: dense ``nbytes``); ``gossip`` needs ``topology``.
    """
    if pattern not in PATTERNS:
        from simcomm._errors import closest

        raise UserError(f"unknown pattern '{pattern}'{closest(pattern, PATTERNS)}; choose one of {', '.join(PATTERNS)}")
    if pattern == "ps":
        return ps_time(n, nbytes, nbytes if down_bytes is None else down_bytes, net)
    if pattern == "ring_allreduce":
        return ring_allreduce_time(n, nbytes, net)
    if pattern == "allgather":
        return allgather_time(n, nbytes, net)
    if topology is None:
        raise UserError("pattern 'gossip' needs a topology (e.g. topology='exponential')")
    if isinstance(topology, str):
        from simcomm.topology import build

        topology = build(topology, n)
    return gossip_time(topology, nbytes, net, step)


# ------------------------------------------------------------------------------------------ stragglers
@dataclass(frozen=True)
class Straggler:
    r"""Per-node compute time distribution.

    * ``constant``: every node takes ``shift`` seconds;
    * ``shifted_exp``: ``shift + Exp(mean=scale)`` i.i.d. per node and step (the classic straggler model:
      :math:`\mathbb{E}\max_{i\le n} = \text{shift} + \text{scale}\,H_n`).

    Parameters
    ----------
    dist : {"constant", "shifted_exp"}
    shift : float
        Seconds, ``>= 0``.
    scale : float, default 0
        Mean of the exponential part (``> 0`` for ``shifted_exp``; must be 0 for ``constant``).
    """

    dist: str = "constant"
    shift: float = 0.0
    scale: float = 0.0

    def __post_init__(self):
        if self.dist not in ("constant", "shifted_exp"):
            raise UserError(f"unknown straggler distribution '{self.dist}'; use 'constant' or 'shifted_exp'")
        for name in ("shift", "scale"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise UserError(f"straggler {name} = {v!r} is not allowed; use a finite number of seconds >= 0")
        if self.dist == "shifted_exp" and not self.scale > 0:
            raise UserError("straggler 'shifted_exp' needs scale > 0 (the mean of the exponential tail, seconds)")
        if self.dist == "constant" and self.scale != 0:
            raise UserError("straggler 'constant' takes no scale; use dist='shifted_exp' for a random tail")

    def draw(self, shape, *, rng) -> np.ndarray:
        """Compute times of the given shape (e.g. ``(steps, n)``), drawn from ``rng``."""
        if self.dist == "constant":
            return np.full(shape, float(self.shift))
        return self.shift + np.random.default_rng(rng).exponential(self.scale, size=shape)


def sync_step_times(compute: np.ndarray, comm) -> np.ndarray:
    """Synchronous steps: each waits for its slowest node, then communicates.

    Parameters
    ----------
    compute : numpy.ndarray, shape (steps, n)
        Per-node compute times.
    comm : float or numpy.ndarray, shape (steps,)
        Communication time of each step.

    Returns
    -------
    numpy.ndarray, shape (steps,)
    """
    compute = np.asarray(compute, dtype=np.float64)
    return compute.max(axis=-1) + np.asarray(comm, dtype=np.float64)


def async_delays(compute: np.ndarray, up: float = 0.0, down: float = 0.0):
    r"""Asynchronous workers on their own clocks: the order of updates and the delay each one has.

    Worker ``i`` reads the model, computes for ``compute[m, i]`` seconds, uploads (``up`` s); the server
    applies the update on arrival and sends the new model back, which arrives after ``down`` s; the
    worker then starts again. So worker ``i``'s ``m``-th update arrives at
    :math:`A_{im} = \sum_{l \le m}(c_{il} + u) + m\,w` (``w`` = ``down``), computed on the model the
    server held right after applying the worker's previous update. Its delay :math:`\tau` is the
    number of other updates applied in between: its position among all arrivals minus that version.

    Parameters
    ----------
    compute : numpy.ndarray, shape (updates_per_worker, n)
    up, down : float
        Upload and download times.

    Returns
    -------
    worker : numpy.ndarray of int, shape (updates_per_worker * n,)
        Which worker each server update comes from, in arrival order.
    tau : numpy.ndarray of int, same shape
        Its delay (0 = computed on the current model).
    time : numpy.ndarray, same shape
        Arrival times (the server's clock).

    Examples
    --------
    >>> w, tau, t = async_delays(np.ones((3, 2)))   # equal workers: after the first, every update misses one
    >>> w.tolist(), tau.tolist()
    ([0, 1, 0, 1, 0, 1], [0, 1, 1, 1, 1, 1])
    """
    c = np.asarray(compute, dtype=np.float64)
    if c.ndim != 2 or not np.all(np.isfinite(c)) or np.any(c < 0):
        raise UserError("async_delays: compute must be a finite (updates, n) array of seconds >= 0")
    M, n = c.shape
    arrive = np.cumsum(c + up, axis=0) + down * np.arange(M)[:, None]
    flat = arrive.T.reshape(-1)  # worker-major: update m of worker i at i*M + m
    order = np.argsort(flat, kind="stable")
    pos = np.empty_like(order)
    pos[order] = np.arange(order.size)
    # the model a worker computes on is the one sent right after its previous update was applied
    prev = pos.reshape(n, M)
    version = np.concatenate([np.zeros((n, 1), dtype=np.int64), prev[:, :-1] + 1], axis=1).reshape(-1)
    tau = pos - version
    return (order // M).astype(np.int64), tau[order].astype(np.int64), flat[order]


@dataclass(frozen=True)
class Clock:
    r"""Asynchronous workers on their own clocks: compute times, upload and download time.

    Worker ``i``'s ``m``-th compute time is ``slowdown[i]`` times a draw of ``compute`` (i.i.d. per
    node and update); an update then takes ``up`` seconds to reach the server and the new model ``down``
    seconds to come back (:func:`async_delays`). :meth:`schedule` gives, for the first ``updates``
    server updates in arrival order, the worker and its delay :math:`\tau` (the number of server
    updates between the worker's read and its write).

    Parameters
    ----------
    compute : Straggler
        Per-node compute time distribution.
    up, down : float, default 0
        Seconds to upload an update and to download the model (e.g. :func:`comm_time` of the messages).
    slowdown : sequence of float, optional
        Per-node factors ``> 0`` on the compute time (a deterministic straggler: one factor ``s > 1``);
        ``None`` = all ``1``. Its length fixes the number of workers.

    Examples
    --------
    >>> w, tau, t = Clock(Straggler("constant", 1.0)).schedule(3, 6, rng=0)   # equal workers: round robin
    >>> w.tolist(), tau.tolist()
    ([0, 1, 2, 0, 1, 2], [0, 1, 2, 2, 2, 2])
    """

    compute: Straggler
    up: float = 0.0
    down: float = 0.0
    slowdown: tuple | None = None

    def __post_init__(self):
        if not isinstance(self.compute, Straggler):
            raise UserError(f"clock: compute = {self.compute!r} is not a Straggler; use e.g. "
                            "Straggler('shifted_exp', shift=1e-3, scale=5e-4)")
        for name in ("up", "down"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise UserError(f"clock: {name} = {v!r} is not allowed; use a finite number of seconds >= 0")
        if self.slowdown is not None:
            s = np.asarray(self.slowdown, dtype=np.float64)
            if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
                raise UserError(f"clock: slowdown = {self.slowdown!r} is not allowed; use one finite factor > 0 "
                                "per worker (1 = normal speed)")
            object.__setattr__(self, "slowdown", tuple(float(v) for v in s))
        if self.compute.dist == "constant" and self.compute.shift == 0 and self.up == 0 and self.down == 0:
            raise UserError("clock: every update takes 0 s (constant compute 0, up = down = 0), so arrival order "
                            "is undefined; give the compute time, up or down a positive value")

    def schedule(self, n: int, updates: int, *, rng):
        """Worker, delay and arrival time of each of the first ``updates`` server updates.

        Compute times are drawn per worker in blocks of updates until every update not yet drawn would
        arrive after the ``updates``-th arrival, so the prefix is exact (and, given ``rng``,
        deterministic). Returns three arrays of shape ``(updates,)`` as :func:`async_delays`.
        """
        n = _check_nodes(n, "clock")
        if self.slowdown is not None and len(self.slowdown) != n:
            raise UserError(f"clock: slowdown has {len(self.slowdown)} factors but there are n = {n} workers; "
                            "give one factor per worker")
        if isinstance(updates, bool) or not isinstance(updates, (int, np.integer)) or updates < 0:
            raise UserError(f"clock: updates = {updates!r} is not allowed; use an integer >= 0")
        empty = np.zeros(0, dtype=np.int64)
        if updates == 0:
            return empty, empty, np.zeros(0)
        rng = np.random.default_rng(rng)
        slow = np.ones(n) if self.slowdown is None else np.asarray(self.slowdown)
        block = -(-updates // n) + 1
        c = slow * self.compute.draw((block, n), rng=rng)
        while True:
            w, tau, t = async_delays(c, self.up, self.down)
            M = c.shape[0]
            last = np.sum(c + self.up, axis=0) + self.down * (M - 1)  # each worker's last drawn arrival
            # an undrawn update of worker i arrives strictly after last[i] (every update takes > 0 s)
            if t.size >= updates and last.min() >= t[updates - 1]:
                return w[:updates], tau[:updates], t[:updates]
            c = np.concatenate([c, slow * self.compute.draw((M, n), rng=rng)])


def add_time(table, *, nbytes, pattern: str, net: Network, n: int, straggler: Straggler | None = None,
             step_col: str = "step", topology=None, down_bytes=None, rng=None):
    """Add a simulated ``time`` column (seconds since the start) to an optimiser's trace table.

    Step ``t`` (1-based) takes :func:`sync_step_times` of the straggler draws and the pattern's
    :func:`comm_time` for ``nbytes`` (scalar, or one value per step); the row recorded at step ``s``
    gets the sum of the first ``s`` step times.

    Parameters
    ----------
    table : pandas.DataFrame or dict of arrays
        Must have ``step_col`` (integer steps, 0 = before the first update).
    nbytes : float or array_like, shape (steps,)
        Payload bytes one node sends per step (e.g. ``len(encode(msg))``).
    pattern : str
        One of :data:`PATTERNS`.
    net : Network
    n : int
        Nodes (workers).
    straggler : Straggler, optional
        Compute time distribution (default: no compute time).
    step_col : str
    topology : Topology or str, optional
        For ``gossip`` (a time-varying topology uses its layer of each step).
    down_bytes : float, optional
        For ``ps``.
    rng : numpy.random.Generator or seed, optional
        Straggler draws.

    Returns
    -------
    Same type as ``table``, with a ``time`` column (a copy; ``table`` is not modified).
    """
    if pattern == "gossip" and isinstance(topology, str):
        from simcomm.topology import build

        topology = build(topology, int(n))
    steps = np.asarray(table[step_col])
    if steps.size and (np.any(steps < 0) or np.any(steps != np.floor(steps))):
        raise UserError(f"add_time: column '{step_col}' must hold integer steps >= 0")
    T = int(steps.max()) if steps.size else 0
    nb = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), (T,)) if T else np.zeros(0)
    if pattern == "gossip" and topology is not None and not isinstance(topology, str) and topology.time_varying:
        per = topology.period
        comm_period = np.array([[gossip_time(topology, b, net, k) for k in range(per)] for b in np.unique(nb)])
        uniq = np.unique(nb)
        comm = comm_period[np.searchsorted(uniq, nb), np.arange(T) % per]
    else:
        uniq, inv = np.unique(nb, return_inverse=True)
        comm = np.array([float(comm_time(pattern, n, b, net, topology=topology, down_bytes=down_bytes))
                         for b in uniq])[inv] if T else np.zeros(0)
    straggler = straggler or Straggler()
    per_step = sync_step_times(straggler.draw((T, int(n)), rng=rng), comm)
    cum = np.concatenate([[0.0], np.cumsum(per_step)])
    times = cum[steps.astype(np.int64)]
    if isinstance(table, dict):
        return {**table, "time": times}
    out = table.copy()
    out["time"] = times
    return out


#: keys of a spec's ``[network]`` table that describe how a trace's steps take time (besides alpha, beta)
TRACE_KEYS = ("pattern", "compute_shift", "compute_scale")


def trace_time(rows: list[dict], network: dict, params: dict, *, rng) -> list[dict]:
    """Add the simulated ``time`` column to the trace rows an experiment returned (a spec's ``[network]``).

    A *trace row* has an integer ``step`` and ``bits``, the cumulative bits ONE node has sent by
    that step (the convention of the optimisers' traces, e.g. ``ef_sgd_sweep``). Rows are grouped by
    their other identifying columns (``method``, ...; ``metric``, ``value``, ``note`` and measured
    floats do not split groups); in a group, the bytes of the steps between two recorded steps are
    spread evenly over them (exact for the alpha-beta patterns, whose time is affine in the bytes of
    a step when every step sends). Step ``t`` takes the slowest node's compute time plus
    :func:`comm_time` of its message, as in :func:`add_time`; every group of a replicate shares the
    straggler draws (common random numbers).

    Settings come from the cell's ``params`` first (an experiment that declares ``alpha``, ``beta``,
    ``compute_shift`` or ``compute_scale`` sweeps them), then from ``network``. The pattern is the
    row's ``pattern`` column, else ``network["pattern"]``, else ``"allgather"`` (valid for any message:
    compressed messages in general do not sum). The nodes are the row's or the cell's ``n``; ``gossip``
    takes the cell's ``topology``. Rows that are not trace rows, or a cell without a node count, are
    returned unchanged.

    Parameters
    ----------
    rows : list of dict
        One replicate's rows.
    network : dict
        The validated ``[network]`` table (:func:`spec_network_params` with ``trace=True``).
    params : dict
        The cell's parameters.
    rng : numpy.random.Generator or seed
        Straggler draws (a stream of its own: the experiment's draws are untouched).

    Returns
    -------
    list of dict
        New rows (copies with ``time`` where it applies).
    """
    def number(v):
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)

    trace = [i for i, r in enumerate(rows) if number(r.get("step")) and number(r.get("bits"))]
    if not trace:
        return rows

    def setting(key, default=0.0):
        return params.get(key, network.get(key, default))

    def nodes(row):
        for key in ("n",):
            for src in (row, params):
                if isinstance(src.get(key), (int, np.integer)) and not isinstance(src.get(key), bool):
                    return int(src[key])
        return None

    net = Network(setting("alpha"), setting("beta"), network.get("nic_beta"))
    shift, scale = float(setting("compute_shift")), float(setting("compute_scale"))
    straggler = Straggler("shifted_exp", shift, scale) if scale > 0 else Straggler("constant", shift)
    skip = {"metric", "value", "note", "step", "bits", "time", "censored", "replicate"}
    groups: dict = {}
    for i in trace:
        r = rows[i]
        key = tuple(sorted((k, str(v)) for k, v in r.items() if k not in skip and not isinstance(v, float)))
        groups.setdefault(key, []).append(i)
    T = max(int(rows[i]["step"]) for i in trace)
    n_all = {nodes(rows[i]) for i in trace} - {None}
    if not n_all:
        return rows
    draws = {n: straggler.draw((T, n), rng=rng) for n in sorted(n_all)}  # the same draws for every group
    out = list(rows)
    for key, idx in groups.items():
        first = rows[idx[0]]
        n = nodes(first)
        if n is None:
            continue
        pattern = str(first.get("pattern", network.get("pattern", "allgather")))
        pts = sorted({(int(rows[i]["step"]), float(rows[i]["bits"])) for i in idx})
        steps = np.array([p[0] for p in pts])
        bits = np.array([p[1] for p in pts])
        if np.any(np.diff(steps) == 0) or np.any(steps < 0) or np.any(np.diff(bits) < 0):
            raise UserError(f"trace rows {dict(key)} have two bit counts for one step or decreasing bits; "
                            "'bits' must be the cumulative bits one node has sent by 'step'")
        topo = None
        if pattern == "gossip":
            if params.get("topology") is None:
                raise UserError("[network] pattern = 'gossip' needs the cell's 'topology' parameter")
            from simcomm.topology import build

            topo = build(str(params["topology"]), n)
        comm = np.zeros(T)
        prev_s, prev_b = 0, 0.0
        for s_, b_ in zip(steps, bits):
            if s_ > prev_s:
                per = (b_ - prev_b) / 8.0 / (s_ - prev_s)
                if topo is not None:
                    comm[prev_s:s_] = [gossip_time(topo, per, net, k) for k in range(prev_s, s_)]
                else:
                    comm[prev_s:s_] = comm_time(pattern, n, per, net)
            prev_s, prev_b = s_, b_
        cum = np.concatenate([[0.0], np.cumsum(sync_step_times(draws[n], comm))])
        for i in idx:
            out[i] = {**rows[i], "time": float(cum[int(rows[i]["step"])])}
    return out


def spec_network_params(table, where: str, base_dir: str = ".", provided=()) -> dict:
    """Validate a spec's ``[network]`` table and return the experiment parameters it sets.

    Keys: ``alpha``, ``beta``, ``nic_beta`` (numbers >= 0), or ``file`` = a TOML written by
    ``simcomm net calibrate`` (relative to ``base_dir``, the folder simcomm runs in) whose
    ``[network]`` values are used; explicit keys override the file's. Returns
    ``{"alpha": ..., "beta": ...}`` (and ``nic_beta`` when given), plus the trace settings
    ``pattern`` (one of :data:`PATTERNS`), ``compute_shift`` and ``compute_scale`` (seconds) when given
    (:func:`trace_time`: how the experiment's trace rows get their ``time`` column). ``provided``: keys
    the spec sets elsewhere (``[params]``, ``[grid]``): alpha or beta there need not be repeated here.
    """
    from pathlib import Path

    from simcomm._errors import SpecError

    if not isinstance(table, dict):
        raise SpecError(f"{where}: must be a table with alpha, beta (or file = 'network.toml')")
    allowed = {"alpha", "beta", "nic_beta", "file", *TRACE_KEYS}
    unknown = set(table) - allowed
    if unknown:
        raise SpecError(f"{where}: unknown key '{sorted(unknown)[0]}'; allowed: {', '.join(sorted(allowed))}")
    out = {}
    if "file" in table:
        path = Path(base_dir) / str(table["file"])
        try:
            net = Network.from_toml(path)
        except UserError as exc:
            raise SpecError(f"{where}: {exc}") from None
        out = {"alpha": float(net.alpha), "beta": float(net.beta)}
    for key in ("alpha", "beta", "nic_beta"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise SpecError(f"{where}: '{key}' = {value!r} is not allowed; use a finite number >= 0 "
                                f"({'seconds per message' if key == 'alpha' else 'seconds per byte'})")
            out[key] = float(value)
    if not {"alpha", "beta"} <= set(out) | set(provided):
        raise SpecError(f"{where}: needs alpha and beta (or file = a 'simcomm net calibrate' output)")
    if "pattern" in table:
        if table["pattern"] not in PATTERNS:
            from simcomm._errors import closest

            pat = table["pattern"]
            raise SpecError(f"{where}: pattern = {pat!r} is unknown{closest(str(pat), PATTERNS)}; "
                            f"use one of {', '.join(PATTERNS)}")
        out["pattern"] = table["pattern"]
    for key in ("compute_shift", "compute_scale"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise SpecError(f"{where}: '{key}' = {value!r} is not allowed; use a finite number of seconds >= 0")
            out[key] = float(value)
    return out
