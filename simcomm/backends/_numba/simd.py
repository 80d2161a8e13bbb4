"""Explicit SIMD for the loops numba's vectoriser cannot write: streaming passes with compaction.

Numba intrinsics whose bodies are LLVM IR written here, eight lanes at a time, each appending the lanes
that pass a threshold to index (and value) lists with a vector compress (``llvm.experimental.vector
.compress``: one ``vcompresspd``/``vpcompressq`` into a register on AVX-512, then a plain full-width
store; the memory form of the instruction is microcoded on some CPUs) and a population count. There is
no branch per group, so the cost does not depend on how many entries qualify; the same loops written in
numba keep a branch per group of eight, and LLVM emits scalar code for them.

- :func:`add_sumsq_collect`: ``p = g + m``, eight lane sums of ``p * p``, the entries ``|p| >= t``
  (error feedback's fused pass);
- :func:`collect`: the entries ``|p| >= t`` of ``p``, read only (its fallback with a lower threshold);
- :func:`collect_keys`: the unsigned keys at or above a bracket and their largest (the top-k scan).

They need LLVM 19 or later (llvmlite 0.45+) and compiled code: :data:`HAVE_COMPRESS` says whether they
can be used; the callers keep their scalar loops for the other cases (and for ``NUMBA_DISABLE_JIT=1``,
where the kernels run as Python). On CPUs without AVX-512 LLVM expands the compress into plain
instructions (same results).

Numba's on-disk cache keys a compiled function on its own source file: the kernels that call these
intrinsics (in ``ef.py`` and ``select.py``) do not see an edit of this module, so clear
``NUMBA_CACHE_DIR`` after changing it.
"""

from __future__ import annotations

import numba
from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["HAVE_COMPRESS", "add_sumsq_collect", "collect", "collect_keys"]

#: LLVM has the vector compress intrinsic since version 19; with the JIT off nothing is compiled.
HAVE_COMPRESS = llvm.llvm_version_info >= (19,) and not numba.config.DISABLE_JIT

_W = 8  # lanes: one 512-bit vector of float64


def _splat(builder, vec_type, value):
    """``value`` in every lane of a ``vec_type`` vector."""
    v = builder.insert_element(ir.Constant(vec_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), _W), [0] * _W)
    return builder.shuffle_vector(v, ir.Constant(vec_type, ir.Undefined), zeros)


def _vector_ptr(builder, arr, index, vec_type):
    """Pointer to ``arr.data[index]`` as a pointer to ``vec_type``."""
    return builder.bitcast(builder.gep(arr.data, [index]), vec_type.as_pointer())


def _is_c_vector(ty, dtype):
    return isinstance(ty, types.Array) and ty.ndim == 1 and ty.layout == "C" and ty.dtype == dtype


class _Vec:
    """LLVM types and intrinsics of the 8-lane loops, declared in the module being built."""

    def __init__(self, builder):
        self.f, self.i = ir.DoubleType(), ir.IntType(64)
        self.vf, self.vi = ir.VectorType(self.f, _W), ir.VectorType(self.i, _W)
        vb, i8, mod = ir.VectorType(ir.IntType(1), _W), ir.IntType(8), builder.module
        self.fabs = cgutils.get_or_insert_function(mod, ir.FunctionType(self.vf, [self.vf]), "llvm.fabs.v8f64")
        self.compress_f = cgutils.get_or_insert_function(
            mod, ir.FunctionType(self.vf, [self.vf, vb, self.vf]), "llvm.experimental.vector.compress.v8f64")
        self.compress_i = cgutils.get_or_insert_function(
            mod, ir.FunctionType(self.vi, [self.vi, vb, self.vi]), "llvm.experimental.vector.compress.v8i64")
        self.popcount = cgutils.get_or_insert_function(mod, ir.FunctionType(i8, [i8]), "llvm.ctpop.i8")
        self.lane_ids = ir.Constant(self.vi, list(range(_W)))


def _append(builder, vec, first, count, hit, values, compress, idx_list, val_list, align=8):
    """Append the lanes ``hit`` of a group (indices from ``first``, ``values``) to the two lists at ``count``.

    Each list gets one full-width store of its compressed vector (lanes past the hits are scratch);
    ``compress`` is the compress intrinsic of ``values``' type. Returns the new count.
    """
    idx = builder.add(_splat(builder, vec.vi, first), vec.lane_ids)
    builder.store(builder.call(vec.compress_i, [idx, hit, ir.Constant(vec.vi, ir.Undefined)]),
                  _vector_ptr(builder, idx_list, count, vec.vi), align=8)
    builder.store(builder.call(compress, [values, hit, ir.Constant(values.type, ir.Undefined)]),
                  _vector_ptr(builder, val_list, count, values.type), align=align)
    hits = builder.zext(builder.call(vec.popcount, [builder.bitcast(hit, ir.IntType(8))]), vec.i)
    return builder.add(count, hits)


def _append_hits(builder, vec, j, count, mag, t_vec, cand, mags):
    """Append the lanes of group ``j`` with ``mag >= t`` (ordered: NaN never) to ``cand``/``mags``."""
    return _append(builder, vec, j, count, builder.fcmp_ordered(">=", mag, t_vec), mag, vec.compress_f, cand, mags)


def _group_loop(builder, vec, d, acc0, body, start=None):
    """``for j in range(0, d - d % 8, 8)`` carrying ``(count, acc)``; ``body(j, count, acc)`` gives the next.

    ``count`` starts at ``start`` (0 by default), ``acc`` at ``acc0`` (a vector of any type). Returns the
    final ``(count, acc)``.
    """
    end = builder.and_(d, ir.Constant(vec.i, -_W))
    entry = builder.block
    head = builder.append_basic_block("groups.head")
    loop = builder.append_basic_block("groups.body")
    done = builder.append_basic_block("groups.done")
    builder.branch(head)
    builder.position_at_end(head)
    j, count, acc = builder.phi(vec.i), builder.phi(vec.i), builder.phi(acc0.type)
    j.add_incoming(ir.Constant(vec.i, 0), entry)
    count.add_incoming(ir.Constant(vec.i, 0) if start is None else start, entry)
    acc.add_incoming(acc0, entry)
    builder.cbranch(builder.icmp_signed("<", j, end), loop, done)
    builder.position_at_end(loop)
    count_next, acc_next = body(j, count, acc)
    j.add_incoming(builder.add(j, ir.Constant(vec.i, _W)), builder.block)
    count.add_incoming(count_next, builder.block)
    acc.add_incoming(acc_next, builder.block)
    builder.branch(head)
    builder.position_at_end(done)
    return count, acc


@intrinsic
def add_sumsq_collect(typingctx, g, m, p, t, cand, mags, lane_sums):
    """``p = g + m`` over the first ``len(g) - len(g) % 8`` entries; returns how many were collected.

    Lane ``l`` of ``lane_sums`` (8 float64) receives the sum of ``p[j] ** 2`` over ``j % 8 == l`` (in
    ascending ``j``, multiply then add: no fused multiply-add). Every ``j`` with ``|p[j]| >= t`` (an
    ordered compare: NaN never qualifies) is appended, in ascending order, to ``cand`` (its index) and
    ``mags`` (``|p[j]|``). Each group stores 8 slots from the count, which is at most the group's first
    index, so lists as long as ``p`` are enough. All arrays are 1-D C-contiguous; ``p`` may be ``g`` or
    ``m`` (each group is read before it is written).
    """
    f64, i64 = types.float64, types.int64
    if not (all(_is_c_vector(a, f64) for a in (g, m, p, mags, lane_sums)) and _is_c_vector(cand, i64)
            and t == f64):
        return None
    sig = i64(g, m, p, t, cand, mags, lane_sums)

    def codegen(context, builder, signature, args):
        ga, ma, pa, ca, mga, sa = [context.make_array(ty)(context, builder, v)
                                   for ty, v in zip(signature.args, args) if isinstance(ty, types.Array)]
        vec = _Vec(builder)
        t_vec = _splat(builder, vec.vf, args[3])

        def body(j, count, acc):
            v = builder.fadd(builder.load(_vector_ptr(builder, ga, j, vec.vf), align=8),
                             builder.load(_vector_ptr(builder, ma, j, vec.vf), align=8))
            builder.store(v, _vector_ptr(builder, pa, j, vec.vf), align=8)
            mag = builder.call(vec.fabs, [v])
            return (_append_hits(builder, vec, j, count, mag, t_vec, ca, mga),
                    builder.fadd(acc, builder.fmul(v, v)))

        count, acc = _group_loop(builder, vec, builder.extract_value(ga.shape, 0),
                                 ir.Constant(vec.vf, [0.0] * _W), body)
        builder.store(acc, _vector_ptr(builder, sa, ir.Constant(vec.i, 0), vec.vf), align=8)
        return count

    return sig, codegen


@intrinsic
def collect(typingctx, p, t, cand, mags):
    """Append every ``j < len(p) - len(p) % 8`` with ``|p[j]| >= t`` to ``cand``/``mags``; returns the count.

    As :func:`add_sumsq_collect` without the sum and the write: ``p`` is only read.
    """
    f64, i64 = types.float64, types.int64
    if not (_is_c_vector(p, f64) and _is_c_vector(mags, f64) and _is_c_vector(cand, i64) and t == f64):
        return None
    sig = i64(p, t, cand, mags)

    def codegen(context, builder, signature, args):
        pa, ca, mga = [context.make_array(ty)(context, builder, v)
                       for ty, v in zip(signature.args, args) if isinstance(ty, types.Array)]
        vec = _Vec(builder)
        t_vec = _splat(builder, vec.vf, args[1])

        def body(j, count, acc):
            mag = builder.call(vec.fabs, [builder.load(_vector_ptr(builder, pa, j, vec.vf), align=8)])
            return _append_hits(builder, vec, j, count, mag, t_vec, ca, mga), acc

        count, _ = _group_loop(builder, vec, builder.extract_value(pa.shape, 0), ir.Constant(vec.vf, [0.0] * _W),
                               body)
        return count

    return sig, codegen


@intrinsic
def collect_keys(typingctx, seg, mask, lo, cidx, ckey, start, base, top):
    """List the keys ``seg[j] & mask >= lo`` of the first ``len(seg) - len(seg) % 8`` keys; returns the new count.

    Each listed key goes to ``ckey`` and its index ``base + j`` to ``cidx``, appended in ascending order
    from ``start`` (each group stores 8 slots, ending before ``start`` plus the keys read so far, so
    lists of ``start + len(seg)`` entries are enough). ``top[0]`` (uint64) is
    raised to the largest masked key of those keys. ``seg`` holds unsigned keys (uint32 or uint64), 1-D
    C-contiguous, ``ckey`` the same dtype; ``mask`` and ``lo`` are of that dtype too.
    """
    key_t = getattr(seg, "dtype", None)
    if not (key_t in (types.uint32, types.uint64) and _is_c_vector(seg, key_t) and _is_c_vector(ckey, key_t)
            and _is_c_vector(cidx, types.int64) and _is_c_vector(top, types.uint64) and mask == key_t
            and lo == key_t and start == types.int64 and base == types.int64):
        return None
    sig = types.int64(seg, mask, lo, cidx, ckey, start, base, top)

    def codegen(context, builder, signature, args):
        sa, ia, ka, ta = [context.make_array(ty)(context, builder, v)
                          for ty, v in zip(signature.args, args) if isinstance(ty, types.Array)]
        vec = _Vec(builder)
        kt = ir.IntType(key_t.bitwidth)
        vk = ir.VectorType(kt, _W)
        vb = ir.VectorType(ir.IntType(1), _W)
        mod = builder.module
        suffix = f"v8i{key_t.bitwidth}"
        compress_k = cgutils.get_or_insert_function(mod, ir.FunctionType(vk, [vk, vb, vk]),
                                                    f"llvm.experimental.vector.compress.{suffix}")
        umax = cgutils.get_or_insert_function(mod, ir.FunctionType(vk, [vk, vk]), f"llvm.umax.{suffix}")
        reduce_umax = cgutils.get_or_insert_function(mod, ir.FunctionType(kt, [vk]),
                                                     f"llvm.vector.reduce.umax.{suffix}")
        mask_v, lo_v = _splat(builder, vk, args[1]), _splat(builder, vk, args[2])
        base = args[6]
        align = key_t.bitwidth // 8

        def body(j, count, acc):
            keys = builder.and_(builder.load(_vector_ptr(builder, sa, j, vk), align=align), mask_v)
            hit = builder.icmp_unsigned(">=", keys, lo_v)
            count = _append(builder, vec, builder.add(j, base), count, hit, keys, compress_k, ia, ka, align)
            return count, builder.call(umax, [acc, keys])

        count, acc = _group_loop(builder, vec, builder.extract_value(sa.shape, 0), ir.Constant(vk, [0] * _W),
                                 body, start=args[5])
        seg_top = builder.call(reduce_umax, [acc])
        if key_t.bitwidth < 64:
            seg_top = builder.zext(seg_top, vec.i)
        top_ptr = builder.gep(ta.data, [ir.Constant(vec.i, 0)])
        old = builder.load(top_ptr)
        builder.store(builder.select(builder.icmp_unsigned(">", seg_top, old), seg_top, old), top_ptr)
        return count

    return sig, codegen
