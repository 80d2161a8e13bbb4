"""Explicit SIMD for the one loop numba's vectoriser cannot write: a streaming pass with compaction.

:func:`add_sumsq_collect` is a numba intrinsic whose body is LLVM IR written here: eight lanes at a time
it forms ``p = g + m``, adds ``p * p`` to eight lane sums, and appends the indices and magnitudes of the
lanes with ``|p| >= t`` to two lists with a vector compress (``llvm.experimental.vector.compress``, one
``vcompresspd``/``vpcompressq`` into a register on AVX-512, followed by a plain full-width store; the
memory form of the instruction is microcoded on some CPUs). There is no branch per group, so its cost
does not depend on how many entries qualify. The same loop written in numba keeps a branch per group of
eight, and LLVM emits scalar code for it.

The intrinsic needs LLVM 19 or later (llvmlite 0.45+) and compiled code: :data:`HAVE_COMPRESS` says
whether it can be used; the callers keep the scalar loop for the other cases (and for
``NUMBA_DISABLE_JIT=1``, where the kernels run as Python).
"""

from __future__ import annotations

import numba
from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["HAVE_COMPRESS", "add_sumsq_collect"]

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


@intrinsic
def add_sumsq_collect(typingctx, g, m, p, t, cand, mags, lane_sums):
    """``p = g + m`` over the first ``len(g) - len(g) % 8`` entries; returns how many were collected.

    Lane ``l`` of ``lane_sums`` (8 float64) receives the sum of ``p[j] ** 2`` over ``j % 8 == l`` (in
    ascending ``j``, multiply then add: no fused multiply-add). Every ``j`` with ``|p[j]| >= t`` (an
    ordered compare: NaN never qualifies) is appended, in ascending order, to ``cand`` (its index) and
    ``mags`` (``|p[j]|``); each append writes 8 slots, so both need 8 entries beyond the largest count.
    All arrays are 1-D C-contiguous; ``p`` may be ``g`` or ``m`` (each group is read before it is
    written).
    """
    f64, i64 = types.float64, types.int64
    if not (all(_is_c_vector(a, f64) for a in (g, m, p, mags, lane_sums)) and _is_c_vector(cand, i64)
            and t == f64):
        return None
    sig = i64(g, m, p, t, cand, mags, lane_sums)

    def codegen(context, builder, signature, args):
        ga, ma, pa, ca, mga, sa = [context.make_array(ty)(context, builder, v)
                                   for ty, v in zip(signature.args, args) if isinstance(ty, types.Array)]
        t_val = args[3]
        d = builder.extract_value(ga.shape, 0)
        lf, li, lb = ir.DoubleType(), ir.IntType(64), ir.IntType(1)
        vf, vi, vb = ir.VectorType(lf, _W), ir.VectorType(li, _W), ir.VectorType(lb, _W)
        mod = builder.module
        fabs = cgutils.get_or_insert_function(mod, ir.FunctionType(vf, [vf]), "llvm.fabs.v8f64")
        compress_f = cgutils.get_or_insert_function(
            mod, ir.FunctionType(vf, [vf, vb, vf]), "llvm.experimental.vector.compress.v8f64")
        compress_i = cgutils.get_or_insert_function(
            mod, ir.FunctionType(vi, [vi, vb, vi]), "llvm.experimental.vector.compress.v8i64")
        popcount = cgutils.get_or_insert_function(mod, ir.FunctionType(ir.IntType(8), [ir.IntType(8)]),
                                                  "llvm.ctpop.i8")
        end = builder.and_(d, ir.Constant(li, -_W))
        t_vec = _splat(builder, vf, t_val)
        lane_ids = ir.Constant(vi, list(range(_W)))

        entry = builder.block
        head = builder.append_basic_block("collect.head")
        body = builder.append_basic_block("collect.body")
        done = builder.append_basic_block("collect.done")
        builder.branch(head)

        builder.position_at_end(head)
        j = builder.phi(li)
        count = builder.phi(li)
        acc = builder.phi(vf)
        j.add_incoming(ir.Constant(li, 0), entry)
        count.add_incoming(ir.Constant(li, 0), entry)
        acc.add_incoming(ir.Constant(vf, [0.0] * _W), entry)
        builder.cbranch(builder.icmp_signed("<", j, end), body, done)

        builder.position_at_end(body)
        v = builder.fadd(builder.load(_vector_ptr(builder, ga, j, vf), align=8),
                         builder.load(_vector_ptr(builder, ma, j, vf), align=8))
        builder.store(v, _vector_ptr(builder, pa, j, vf), align=8)
        acc_next = builder.fadd(acc, builder.fmul(v, v))
        mag = builder.call(fabs, [v])
        hit = builder.fcmp_ordered(">=", mag, t_vec)
        idx = builder.add(_splat(builder, vi, j), lane_ids)
        undef_i, undef_f = ir.Constant(vi, ir.Undefined), ir.Constant(vf, ir.Undefined)
        builder.store(builder.call(compress_i, [idx, hit, undef_i]), _vector_ptr(builder, ca, count, vi), align=8)
        builder.store(builder.call(compress_f, [mag, hit, undef_f]), _vector_ptr(builder, mga, count, vf), align=8)
        hits = builder.zext(builder.call(popcount, [builder.bitcast(hit, ir.IntType(8))]), li)
        j.add_incoming(builder.add(j, ir.Constant(li, _W)), body)
        count.add_incoming(builder.add(count, hits), body)
        acc.add_incoming(acc_next, body)
        builder.branch(head)

        builder.position_at_end(done)
        builder.store(acc, _vector_ptr(builder, sa, ir.Constant(li, 0), vf), align=8)
        return count

    return sig, codegen
