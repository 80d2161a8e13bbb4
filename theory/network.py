r"""Closed forms for payload sizes and communication time on an alpha-beta network (issue 18).

Provenance [N]: derived here (in the docstrings) from the encodings of :mod:`simcomm.network` and the
alpha-beta model with full-duplex NICs, and checked against simulation by the ``net.*`` claims; none
of it is quoted from the four papers. Pure functions of scalars; nothing here imports simcomm.

Symbols: ``alpha`` seconds per message, ``beta`` seconds per byte (a node's NIC as fast as one link),
``n`` nodes, ``d`` coordinates, ``k`` kept coordinates, ``dense_bytes`` and ``sparse_bytes`` the
bytes of one node's dense and sparse message, ``compute`` seconds of computation per step.
"""

from __future__ import annotations

import math

from theory._bound import bound

__all__ = [
    "framed_payload_bits", "gamma_gap_bits_upper", "ring_allreduce_time", "allgather_time",
    "sparse_allgather_crossover_n", "sparse_allgather_time_ratio", "sparse_allgather_time_ratio_no_latency",
    "expected_max_compute", "ef_topk_time_ratio",
    "ef_break_even_step_ratio", "ef_topk_time_ratio_same_steps", "ef_topk_crossover_beta",
    "gossip_step_time", "one_peer_time_ratio", "one_peer_static_time", "one_peer_static_time_equal_cost",
]

PAPER = "net"
_VALUE_BITS = {"float32": 32, "float16": 16, "bfloat16": 16}


def _ceil_log2(m: int) -> int:
    return int(m - 1).bit_length()


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="an encoded payload has exactly the formula's bits plus the fixed header "
                 "(up to 7 padding bits per byte-aligned section)")
def framed_payload_bits(case: str, d: int, density: float = 0.01, s: int = 1, header_bits: int = 256) -> float:
    r"""Bits of one encoded message: the encoding's formula plus the header (padding is the claim's margin).

    **Statement** (equal; [N]): ``8 * len(encode(m)) = B + H`` up to padding, with ``H`` the header
    bits, :math:`k = \max(1, \mathrm{round}(\text{density}\cdot d))` kept coordinates of a sparsifier and
    ``B`` by case (``compressor:coding``), float32 values unless the case names another dtype:

    * ``none:float32`` / ``none:float16`` / ``none:bfloat16``: :math:`B = b_v d`;
    * ``top_k|rand_k|rtop_k:auto``: :math:`B = 32k + \min(k\lceil\log_2 d\rceil, d)` (the cheaper of
      fixed-width indices and a bitmap); ``:packed``: :math:`32k + k\lceil\log_2 d\rceil`;
      ``:bitmap``: :math:`32k + d`; ``:raw``: :math:`64k`;
    * ``qsgd:fixed``: :math:`32 + d\lceil\log_2(2s+1)\rceil`;
    * ``ternary:trit5``: :math:`32 + 8\lceil d/5\rceil`; ``ternary:2bit``: :math:`32 + 2d`.

    Derivation: each section holds exactly the listed fields at the listed widths, so the body is
    ``B`` bits rounded up to whole bytes per section; hence ``B + H <= bits <= B + H + 7 * sections``.

    Examples
    --------
    >>> framed_payload_bits("top_k:auto", 1024, 10 / 1024, header_bits=0)
    420.0
    """
    k = max(1, round(density * d))
    comp, _, coding = case.partition(":")
    if comp == "none":
        return float(_VALUE_BITS[coding] * d + header_bits)
    if comp in ("top_k", "rand_k", "rtop_k"):
        idx = {"auto": min(k * _ceil_log2(d), d), "packed": k * _ceil_log2(d), "bitmap": d, "raw": 32 * k}[coding]
        return float(32 * k + idx + header_bits)
    if comp == "qsgd" and coding == "fixed":
        return float(32 + d * math.ceil(math.log2(2 * s + 1)) + header_bits)
    if comp == "ternary":
        return float(32 + (8 * math.ceil(d / 5) if coding == "trit5" else 2 * d) + header_bits)
    raise ValueError(f"no formula for case '{case}'")


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="Elias-gamma coded sorted gaps of any k-subset of d indices take at most "
                 "k (2 log2(d/k) + 1) bits (plus at most 7 bits of byte padding)")
def gamma_gap_bits_upper(d: int, density: float) -> float:
    r"""Upper bound on the Elias-gamma code of the gaps of ``k`` sorted indices out of ``d``.

    ``k = max(1, round(density * d))`` (the experiments' rule).

    **Statement** (upper; [N]): :math:`\sum_i (2\lfloor\log_2 g_i\rfloor + 1) \le k(2\log_2(d/k) + 1)`.

    Derivation: the gaps :math:`g_1 = i_1 + 1, g_j = i_j - i_{j-1}` are :math:`\ge 1` and sum to
    :math:`i_k + 1 \le d`. Since :math:`\lfloor x\rfloor \le x` and :math:`\log_2` is concave, Jensen
    gives :math:`\sum_i \log_2 g_i \le k \log_2(\frac1k\sum_i g_i) \le k\log_2(d/k)`. For a uniformly
    random subset the gaps are close to geometric with mean :math:`d/k`, so the code is about this
    size (the floor and Jensen's gap make it a few bits per index smaller). The byte-aligned section
    adds at most 7 bits, included here.

    Examples
    --------
    >>> gamma_gap_bits_upper(1, 1.0)
    8.0
    """
    k = max(1, round(density * d))
    return float(k * (2 * math.log2(d / k) + 1) + 7)


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="ring allreduce of b bytes on n nodes takes 2(n-1)(alpha + beta b/n)")
def ring_allreduce_time(n: int, nbytes: float, alpha: float, beta: float) -> float:
    r"""Dense ring allreduce: :math:`2(n-1)(\alpha + \beta b/n)` ([N], the standard alpha-beta count).

    Reduce-scatter and allgather are ``n - 1`` phases each; in every phase each node sends one chunk
    of :math:`b/n` bytes to its successor over its own link (so NICs carry no more than one link).

    Examples
    --------
    >>> ring_allreduce_time(4, 4e6, 1e-5, 1e-9)
    0.00606
    """
    return 2 * (n - 1) * (alpha + beta * nbytes / n) if n > 1 else 0.0


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="ring allgather of one b-byte message per node takes (n-1)(alpha + beta b)")
def allgather_time(n: int, nbytes: float, alpha: float, beta: float) -> float:
    r"""Ring allgather of one ``b``-byte message per node: :math:`(n-1)(\alpha + \beta b)` ([N]).

    Sparse messages do not sum, so all ``n`` messages must reach every node: ``n - 1`` phases, each
    forwarding one whole message per node.

    Examples
    --------
    >>> round(allgather_time(8, 1e5, 1e-5, 1e-9), 8)
    0.00077
    """
    return (n - 1) * (alpha + beta * nbytes) if n > 1 else 0.0


@bound(kind="order", provenance="N", paper=PAPER,
       statement="sparse allgather beats dense ring allreduce iff n < 2 beta b_d / (beta b_s - alpha) "
                 "(always when beta b_s <= alpha)")
def sparse_allgather_crossover_n(dense_bytes: float, sparse_bytes: float, alpha: float, beta: float) -> float:
    r"""The number of nodes above which a sparse allgather stops paying against a dense ring allreduce.

    **Statement** ([N]): with :math:`b_d` dense and :math:`b_s` sparse bytes per node,
    :math:`(n-1)(\alpha + \beta b_s) < 2(n-1)(\alpha + \beta b_d/n)` iff
    :math:`\beta b_s - \alpha < 2\beta b_d/n`, i.e. iff :math:`n < n^\star = 2\beta b_d/(\beta b_s - \alpha)`
    when :math:`\beta b_s > \alpha`; otherwise (latency-bound) for every ``n`` (``inf`` is returned).

    Examples
    --------
    >>> sparse_allgather_crossover_n(4e6, 1e5, 0.0, 1e-9)
    80.0
    """
    den = beta * sparse_bytes - alpha
    return math.inf if den <= 0 else 2 * beta * dense_bytes / den


@bound(kind="order", provenance="N", paper=PAPER,
       statement="per-step time of top-k by ring allgather over dense ring allreduce, "
                 "(n-1)(alpha + beta b_s) / (2(n-1)(alpha + beta b_d/n)); top-k pays iff it is < 1 (n < n*)")
def sparse_allgather_time_ratio(n: int, dense_bytes: float, sparse_bytes: float, alpha: float, beta: float) -> float:
    """Predicted allgather / allreduce time ratio at ``n`` nodes ([N]).

    It is below 1 exactly when ``n < n*`` (:func:`sparse_allgather_crossover_n`). The
    ``allgather_crossover`` experiment labels top-k "predicted faster" where this is below 1.

    Examples
    --------
    >>> [sparse_allgather_time_ratio(n, 4e6, 1e5, 0.0, 1e-9) < 1 for n in (64, 128)]
    [True, False]
    """
    return allgather_time(n, sparse_bytes, alpha, beta) / ring_allreduce_time(n, dense_bytes, alpha, beta)


@bound(kind="order", provenance="N", paper=PAPER,
       statement="a WRONG prediction for controls: the allgather / allreduce ratio with alpha = 0 "
                 "(crossover at n = 2 b_d / b_s)")
def sparse_allgather_time_ratio_no_latency(n: int, dense_bytes: float, sparse_bytes: float, alpha: float,
                                           beta: float) -> float:
    """Control only ([N]): :func:`sparse_allgather_time_ratio` with ``alpha = 0``.

    Bandwidth-only reasoning misplaces the crossover when latency matters (allgather pays n - 1
    latencies, allreduce 2(n - 1)).

    Examples
    --------
    >>> sparse_allgather_time_ratio_no_latency(100, 4e6, 1e5, 1e-3, 1e-9) < 1
    False
    """
    return sparse_allgather_time_ratio(n, dense_bytes, sparse_bytes, 0.0, beta)


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="E max of n shifted exponentials = shift + scale H_n")
def expected_max_compute(n: int, shift: float, scale: float) -> float:
    r"""Expected slowest compute time of ``n`` nodes: :math:`\text{shift} + \text{scale}\,H_n` ([N]).

    The maximum of ``n`` i.i.d. exponentials of mean ``scale`` has mean :math:`\text{scale}\sum_{i\le n}1/i`
    (Rényi's representation); ``scale = 0`` is constant compute.

    Examples
    --------
    >>> expected_max_compute(2, 1.0, 2.0)
    4.0
    """
    return shift + scale * sum(1.0 / i for i in range(1, int(n) + 1))


def _ef_times(rho, n, dense_bytes, sparse_bytes, alpha, beta, shift, scale):
    c = expected_max_compute(n, shift, scale)
    t_sgd = c + ring_allreduce_time(n, dense_bytes, alpha, beta)
    t_topk = rho * (c + allgather_time(n, sparse_bytes, alpha, beta))
    return t_topk, t_sgd


@bound(kind="order", provenance="N", paper=PAPER,
       statement="time to target, EF top-k (allgather) over SGD (ring allreduce) = rho (c + T_ag) / (c + T_ar), "
                 "rho the step ratio, c the expected slowest compute; top-k pays iff it is < 1")
def ef_topk_time_ratio(rho: float, n: int, dense_bytes: float, sparse_bytes: float, alpha: float, beta: float,
                       shift: float, scale: float = 0.0) -> float:
    r"""Predicted wall-clock ratio of error-feedback top-k to SGD for reaching a target.

    **Statement** ([N]): if top-k needs :math:`\rho` times the steps of uncompressed SGD to reach the
    target, and a synchronous step costs the slowest node's compute (mean :math:`c`,
    :func:`expected_max_compute`) plus the communication, the time ratio is
    :math:`\rho\,(c + T_{\rm ag}(b_s)) / (c + T_{\rm ar}(b_d))` (:func:`allgather_time`,
    :func:`ring_allreduce_time`); top-k pays iff it is below 1. The crossover is linear in
    :math:`\beta`: see :func:`ef_topk_crossover_beta`.

    Examples
    --------
    >>> r = [ef_topk_time_ratio(2.0, 8, 4e6, 1e5, 1e-5, b, 0.1) for b in (1e-9, 1e-7)]
    >>> [x < 1 for x in r]
    [False, True]
    """
    t_topk, t_sgd = _ef_times(rho, n, dense_bytes, sparse_bytes, alpha, beta, shift, scale)
    return t_topk / t_sgd


@bound(kind="order", provenance="N", paper=PAPER,
       statement="break-even step inflation rho* = (c + T_ar) / (c + T_ag): EF top-k pays iff it needs "
                 "fewer than rho* times SGD's steps")
def ef_break_even_step_ratio(n: int, dense_bytes: float, sparse_bytes: float, alpha: float, beta: float,
                             shift: float, scale: float = 0.0) -> float:
    r"""The step inflation at which compression (ring allgather) and SGD (ring allreduce) take the same time.

    **Statement** ([N]): :func:`ef_topk_time_ratio` is :math:`\rho\,(c + T_{\rm ag})/(c + T_{\rm ar})`,
    below 1 iff :math:`\rho < \rho^\star = (c + T_{\rm ar}(b_d))/(c + T_{\rm ag}(b_s))`, the per-step
    speed-up; ``simcomm net predict`` prints it per compressor. Above 1 compression may need that many
    more steps and still pay; below 1 it loses even at equal steps.

    Examples
    --------
    >>> ef_break_even_step_ratio(2, 4e6, 1e5, 0.0, 1e-9, 0.0)   # 4e-3 s / 1e-4 s
    40.0
    """
    return 1.0 / ef_topk_time_ratio(1.0, n, dense_bytes, sparse_bytes, alpha, beta, shift, scale)


@bound(kind="order", provenance="N", paper=PAPER,
       statement="a WRONG prediction for controls: the top-k / SGD time ratio with rho = 1 (no extra steps)")
def ef_topk_time_ratio_same_steps(rho: float, n: int, dense_bytes: float, sparse_bytes: float, alpha: float,
                                  beta: float, shift: float, scale: float = 0.0) -> float:
    """Control only ([N]): :func:`ef_topk_time_ratio` with ``rho = 1``.

    That assumes compression costs no extra steps (the mistake behind "compressed is cheaper per step,
    so faster").

    Examples
    --------
    >>> ef_topk_time_ratio_same_steps(2.0, 8, 4e6, 1e5, 1e-5, 1e-9, 0.1) < 1
    True
    """
    return ef_topk_time_ratio(1.0, n, dense_bytes, sparse_bytes, alpha, beta, shift, scale)


@bound(kind="order", provenance="N", paper=PAPER,
       statement="beta* = [(rho-1)c + (rho-2)(n-1)alpha] / [(n-1)(2 b_d/n - rho b_s)]: top-k pays above it")
def ef_topk_crossover_beta(rho: float, n: int, dense_bytes: float, sparse_bytes: float, alpha: float,
                           shift: float, scale: float = 0.0) -> float:
    r"""The inverse bandwidth above which EF top-k pays (when :math:`2b_d/n > \rho b_s`).

    Derivation ([N]): :math:`\rho(c + (n-1)(\alpha + \beta b_s)) < c + 2(n-1)(\alpha + \beta b_d/n)`
    rearranges to :math:`\beta (n-1)(2b_d/n - \rho b_s) > (\rho-1)c + (\rho-2)(n-1)\alpha`. Returns
    ``nan`` when :math:`2b_d/n \le \rho b_s` (top-k never pays on a bandwidth-bound network).

    Examples
    --------
    >>> round(ef_topk_crossover_beta(2.0, 2, 4e6, 1e5, 0.0, 1e-3) * 1e10, 6)   # (2-1) 1e-3 / (2e6 - 2e5)
    2.631579
    """
    c = expected_max_compute(n, shift, scale)
    den = (n - 1) * (2 * dense_bytes / n - rho * sparse_bytes)
    if den <= 0:
        return math.nan
    return max(0.0, ((rho - 1) * c + (rho - 2) * (n - 1) * alpha) / den)


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="a gossip step where every node sends m messages of b bytes takes alpha + m beta b")
def gossip_step_time(messages: int, nbytes: float, alpha: float, beta: float) -> float:
    r"""One gossip round with ``messages`` out-neighbours per node: :math:`\alpha + m\beta b` ([N]).

    The messages overlap their latency, and the node's NIC (as fast as one link) serialises their
    bytes; each node also receives ``m`` messages through its ingress, which is symmetric.

    Examples
    --------
    >>> gossip_step_time(4, 1e6, 1e-5, 1e-9)
    0.00401
    """
    return alpha + messages * beta * nbytes


@bound(kind="equal", provenance="P+N", paper=PAPER,
       statement="time(static exp) / time(one-peer exp) to the same step = (c + alpha + tau beta b) / "
                 "(c + alpha + beta b), tau = ceil(log2 n)")
def one_peer_time_ratio(n: int, nbytes: float, alpha: float, beta: float, compute: float = 0.0) -> float:
    r"""Wall-clock ratio static / one-peer exponential graph at the same number of steps.

    **Statement** ([P+N]): the one-peer graph reaches the static graph's loss at the same step count
    with one message per step instead of :math:`\tau = \lceil\log_2 n\rceil` ([P], exponential-graph
    paper); with :func:`gossip_step_time` the time ratio is
    :math:`(c + \alpha + \tau\beta b)/(c + \alpha + \beta b)` ([N]): :math:`\to \tau` on a
    bandwidth-bound network, :math:`\to 1` when latency or compute dominate.

    Examples
    --------
    >>> one_peer_time_ratio(16, 1e6, 0.0, 1e-9)
    4.0
    """
    tau = _ceil_log2(int(n))
    return (compute + gossip_step_time(tau, nbytes, alpha, beta)) / (compute + gossip_step_time(1, nbytes, alpha, beta))


@bound(kind="equal", provenance="P+N", paper=PAPER,
       statement="the static exponential graph needs one_peer_time_ratio times the one-peer graph's "
                 "wall-clock time to reach the same target (same steps [P], costlier steps [N])")
def one_peer_static_time(onepeer_time: float, n: int, model_bytes: float, alpha: float, beta: float,
                         compute: float = 0.0) -> float:
    r"""Predicted time of the static exponential graph to the target, given the one-peer graph's.

    **Statement** ([P+N]): both graphs reach the target at the same step count ([P]), so the times
    scale by the per-step cost ratio :func:`one_peer_time_ratio` ([N]):
    :math:`t_{\rm static} = t_{\rm one\text{-}peer}\,(c + \alpha + \tau\beta b)/(c + \alpha + \beta b)`.

    Examples
    --------
    >>> one_peer_static_time(2.0, 16, 1e6, 0.0, 1e-9)
    8.0
    """
    return onepeer_time * one_peer_time_ratio(n, model_bytes, alpha, beta, compute)


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="a WRONG prediction for controls: static and one-peer steps cost the same (message count ignored)")
def one_peer_static_time_equal_cost(onepeer_time: float) -> float:
    """Control only ([N]): predicts the static graph's time equals the one-peer graph's.

    That is, sending ``ceil(log2 n)`` messages per step would cost no more than one.

    Examples
    --------
    >>> one_peer_static_time_equal_cost(3.0)
    3.0
    """
    return float(onepeer_time)
