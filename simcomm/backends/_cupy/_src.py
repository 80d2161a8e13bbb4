r"""CUDA source of the fused kernels of the ``cupy`` backend, compiled once per process (CuPy caches to disk).

Every kernel is one pass over its arrays. Two rules make the results equal to the numpy reference
bit for bit where the reference is elementwise:

* compiled with ``--fmad=false``: ``a * b + c`` is rounded twice, as numpy rounds it (no fused
  multiply-add), so quantizers, gossip shifts, CSR mixes and the DSGD adapt step repeat the reference's
  arithmetic operation for operation, in the same order;
* the quantizers' uniforms are the SplitMix64 counter stream of :mod:`simcomm.backends._numpy.quant`,
  computed in registers from the element's flat index (no uniform array is stored or read).

Selection (top-k) is a radix select on the bits of ``|x|`` (for finite floats the order of the
magnitudes is the order of their bit patterns with the sign bit cleared): histogram passes of 11 bits
find the k-th largest key ``T`` of each row exactly, then one counting pass and one writing pass emit
every index with key > T and the first ``need`` indices with key == T, in ascending order (warp ballots
rank the selected entries, so the output needs no sort). Ties therefore go to the lower index, the rule
of every backend. Nothing sorts or partitions a whole row.
"""

from __future__ import annotations

#: elements handled by one warp in the counting / writing passes of the selection
SEG = 2048
#: columns of one block of the gossip kernels
TILE = 1024
#: histogram bins per radix pass (11 bits)
BINS = 2048

_COMMON = r"""
#define FULL 0xffffffffu
// grid-stride loop of index i over [0, n) (blocks along x)
#define GRID_LOOP(i, n) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
                             i += (long long)gridDim.x * blockDim.x)
__device__ __forceinline__ double u53(unsigned long long key, unsigned long long idx) {
    unsigned long long z = key + (idx + 1ULL) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z = z ^ (z >> 31);
    return (double)(z >> 11) * 1.1102230246251565e-16;
}
__device__ __forceinline__ double u24(unsigned long long key, unsigned long long idx) {
    unsigned long long z = key + (idx + 1ULL) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z = z ^ (z >> 31);
    return (double)(float)((double)(z >> 40) * 5.9604644775390625e-08);
}
// row of flat index i (i / d) from a float64 reciprocal, corrected by one step (exact for i < 2^52)
__device__ __forceinline__ long long row_of(long long i, long long d, double inv_d) {
    long long r = (long long)((double)i * inv_d);
    if (r * d > i) --r;
    else if ((r + 1) * d <= i) ++r;
    return r;
}
__device__ __forceinline__ double comb_max(double a, double b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ double sgn(double v) {  // numpy's sign: +-1, 0 for +-0, NaN for NaN
    return v > 0.0 ? 1.0 : (v < 0.0 ? -1.0 : (v == 0.0 ? 0.0 : v));
}
__device__ __forceinline__ unsigned int keyof(float v) { return __float_as_uint(v) & 0x7fffffffu; }
__device__ __forceinline__ unsigned long long keyof(double v) {
    return ((unsigned long long)__double_as_longlong(v)) & 0x7fffffffffffffffULL;
}
"""

_SCAN = r"""
// One thread per row: the row's partials combined in block order; sqrt (op 0) or NaN for inf/NaN (op 1).
extern "C" __global__ void row_final(const double* __restrict__ part, long long nb, int op, long long rows,
                                     double* __restrict__ out) {
    long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (row >= rows) return;
    double acc = part[row * nb];
    for (long long b = 1; b < nb; ++b) acc = op == 0 ? acc + part[row * nb + b] : comb_max(acc, part[row * nb + b]);
    out[row] = op == 0 ? sqrt(acc) : (isfinite(acc) ? acc : __longlong_as_double(0x7ff8000000000000LL));
}
// One warp per row: exclusive prefix sums over the warp segments of the packed counts (> T low, == T high).
extern "C" __global__ void sel_scan(const unsigned long long* __restrict__ cnt, long long nseg,
                                    unsigned long long* __restrict__ gt_before,
                                    unsigned long long* __restrict__ eq_before) {
    long long row = blockIdx.x;
    int lane = threadIdx.x;
    unsigned long long cg = 0, ce = 0;
    for (long long s0 = 0; s0 < nseg; s0 += 32) {
        long long s = s0 + lane;
        unsigned long long c = s < nseg ? cnt[row * nseg + s] : 0ULL;
        unsigned long long g = c & 0xffffffffULL, e = c >> 32;
        unsigned long long ig = g, ie = e;
        for (int o = 1; o < 32; o <<= 1) {
            unsigned long long yg = __shfl_up_sync(FULL, ig, o), ye = __shfl_up_sync(FULL, ie, o);
            if (lane >= o) { ig += yg; ie += ye; }
        }
        if (s < nseg) {
            gt_before[row * nseg + s] = cg + ig - g;
            eq_before[row * nseg + s] = ce + ie - e;
        }
        cg += __shfl_sync(FULL, ig, 31);
        ce += __shfl_sync(FULL, ie, 31);
    }
}
"""

# Per element type: T (data), K (key), U (the uniform of that dtype: 24 or 53 bits), suffix.
_TYPES = (("float", "unsigned int", "u24", "f32"), ("double", "unsigned long long", "u53", "f64"))

_PER_TYPE = r"""
// ---------------------------------------------------------------- row reductions (deterministic)
// Block b of row `row` reduces the columns [b*chunk, (b+1)*chunk) in a fixed order (thread strides, then a
// shuffle tree); row_final_* combines a row's partials in block order: the same bits on every call.
// op 0: sum of squares in float64; op 1: max |x| with NaN propagated (fmax would drop a NaN).
extern "C" __global__ void row_partial_SUF(const T* __restrict__ x, long long d, long long chunk, int op,
                                           double* __restrict__ part) {
    __shared__ double ws[32];
    long long row = blockIdx.y;
    const T* xr = x + row * d;
    long long j0 = (long long)blockIdx.x * chunk, j1 = j0 + chunk < d ? j0 + chunk : d;
    double acc = 0.0;
    long long step = blockDim.x;
    long long j = j0 + threadIdx.x;
    for (; j + 3 * step < j1; j += 4 * step) {
        double v0 = (double)xr[j], v1 = (double)xr[j + step];
        double v2 = (double)xr[j + 2 * step], v3 = (double)xr[j + 3 * step];
        if (op == 0) { acc += v0 * v0; acc += v1 * v1; acc += v2 * v2; acc += v3 * v3; }
        else { acc = comb_max(acc, fabs(v0)); acc = comb_max(acc, fabs(v1)); acc = comb_max(acc, fabs(v2));
               acc = comb_max(acc, fabs(v3)); }
    }
    for (; j < j1; j += step) {
        double v = (double)xr[j];
        acc = op == 0 ? acc + v * v : comb_max(acc, fabs(v));
    }
    for (int o = 16; o > 0; o >>= 1) {
        double y = __shfl_down_sync(FULL, acc, o);
        acc = op == 0 ? acc + y : comb_max(acc, y);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) ws[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? ws[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) {
            double y = __shfl_down_sync(FULL, acc, o);
            acc = op == 0 ? acc + y : comb_max(acc, y);
        }
        if (lane == 0) part[row * gridDim.x + blockIdx.x] = acc;
    }
}

// ---------------------------------------------------------------- quantizers (one pass, x in, q out)
// Four elements per thread and iteration (four loads in flight); the row of a flat index comes from a
// float64 reciprocal corrected by one step (no 64-bit integer division per element).
#define QLOOP(i, size, BODY) \
    for (long long base_ = blockIdx.x * (long long)blockDim.x + threadIdx.x, st_ = (long long)gridDim.x * blockDim.x; \
         base_ < (size); base_ += 4 * st_) { \
        T xv_[4]; \
        _Pragma("unroll") for (int q_ = 0; q_ < 4; ++q_) { \
            long long i_ = base_ + q_ * st_; xv_[q_] = i_ < (size) ? x[i_] : (T)0; } \
        _Pragma("unroll") for (int q_ = 0; q_ < 4; ++q_) { \
            long long i = base_ + q_ * st_; if (i < (size)) { T xi = xv_[q_]; BODY } } \
    }
// QSGD: a = s / safe and b = safe / s per row (the reference computes exactly these two quotients).
extern "C" __global__ void qsgd_SUF(const T* __restrict__ x, const double* __restrict__ norms,
                                    const double* __restrict__ fa, const double* __restrict__ fb, long long d,
                                    double inv_d, long long size, unsigned long long key, T* __restrict__ out) {
    QLOOP(i, size, {
        long long row = row_of(i, d, inv_d);
        double x64 = (double)xi;
        double r = fabs(x64) * fa[row];
        double lo = floor(r);
        double level = lo + (double)(UNI(key, (unsigned long long)i) < (r - lo));
        double qv = sgn(x64) * level * fb[row];
        out[i] = (T)(norms[row] > 0.0 ? qv : 0.0);
    })
}
extern "C" __global__ void ternary_SUF(const T* __restrict__ x, const double* __restrict__ scales, long long d,
                                       double inv_d, long long size, unsigned long long key, T* __restrict__ out) {
    QLOOP(i, size, {
        double m = scales[row_of(i, d, inv_d)];
        double safe = m > 0.0 ? m : 1.0;
        double x64 = (double)xi;
        bool keep = UNI(key, (unsigned long long)i) < fabs(x64) / safe;
        out[i] = (T)(keep ? sgn(x64) * safe : 0.0);
    })
}
extern "C" __global__ void sround_SUF(const T* __restrict__ x, long long size, double delta,
                                      unsigned long long key, T* __restrict__ out) {
    QLOOP(i, size, {
        double t = (double)xi / delta;
        double lo = floor(t);
        out[i] = (T)((lo + (double)(UNI(key, (unsigned long long)i) < (t - lo))) * delta);
    })
}
extern "C" __global__ void bernoulli_SUF(const T* __restrict__ x, long long size, double p,
                                         unsigned long long key, T* __restrict__ out) {
    QLOOP(i, size, {
        double x64 = (double)xi;
        out[i] = (T)(UNI(key, (unsigned long long)i) < p ? x64 / p : 0.0);
    })
}

// ---------------------------------------------------------------- gossip and the DSGD step
// Launch shape of the mixes: blockIdx.x is the row, blockIdx.y a tile of TILE columns. Blocks are
// scheduled x-fastest, so the blocks running at one time hold every row of the same few column tiles:
// the rows a tile reads through its shifts (or CSR neighbours) are read from DRAM once and then hit L2.
// Y_i = sum_t w_t X_{(i + h_t) mod n}; terms added in t order from 0 (numpy: out = 0; out += w * X).
// acc[q] += w * row[j0 + tid + q * blockDim] for the thread's 4 columns of a tile (4 loads in flight first)
__device__ __forceinline__ void axpy4(T* acc, T w, const T* __restrict__ xr, long long j0, long long d) {
    T v[4];
    _Pragma("unroll") for (int q = 0; q < 4; ++q) {
        long long j = j0 + threadIdx.x + q * blockDim.x;
        v[q] = j < d ? xr[j] : (T)0;
    }
    _Pragma("unroll") for (int q = 0; q < 4; ++q) acc[q] = acc[q] + (T)(w * v[q]);
}
__device__ __forceinline__ void store4(T* __restrict__ yr, const T* acc, long long j0, long long d) {
    _Pragma("unroll") for (int q = 0; q < 4; ++q) {
        long long j = j0 + threadIdx.x + q * blockDim.x;
        if (j < d) yr[j] = acc[q];
    }
}
extern "C" __global__ void shift_mix_SUF(const T* __restrict__ X, long long n, long long d,
                                         const long long* __restrict__ shifts, const double* __restrict__ w,
                                         int m, T* __restrict__ Y) {
    long long i = blockIdx.x;
    for (long long j0 = (long long)blockIdx.y * TILE; j0 < d; j0 += (long long)gridDim.y * TILE) {
        T acc[4] = {(T)0, (T)0, (T)0, (T)0};
        for (int t = 0; t < m; ++t) {
            long long r = i + shifts[t];
            if (r >= n) r -= n;
            axpy4(acc, (T)w[t], X + r * d, j0, d);
        }
        store4(Y + i * d, acc, j0, d);
    }
}
// Y_i = sum_{p in row i} data_p X_{indices_p}, accumulated in p order from 0 (scipy's CSR product).
extern "C" __global__ void csr_mix_SUF(const long long* __restrict__ indptr, const long long* __restrict__ indices,
                                       const double* __restrict__ data, const T* __restrict__ X, long long d,
                                       T* __restrict__ Y) {
    long long i = blockIdx.x;
    long long p0 = indptr[i], p1 = indptr[i + 1];
    for (long long j0 = (long long)blockIdx.y * TILE; j0 < d; j0 += (long long)gridDim.y * TILE) {
        T acc[4] = {(T)0, (T)0, (T)0, (T)0};
        for (long long p = p0; p < p1; ++p) axpy4(acc, (T)data[p], X + indices[p] * d, j0, d);
        store4(Y + i * d, acc, j0, d);
    }
}
// m <- beta m + g (in place), y <- x - gamma m: the reference's four roundings.
extern "C" __global__ void adapt_SUF(const T* __restrict__ X, T* __restrict__ M, const T* __restrict__ G,
                                     long long size, T gamma, T beta, T* __restrict__ Y) {
    GRID_LOOP(i, size) {
        T m = M[i] * beta;
        m = m + G[i];
        M[i] = m;
        T y = m * gamma;
        Y[i] = X[i] - y;
    }
}

// ---------------------------------------------------------------- error feedback
// P = G + M and the squared row norms of P (atomic per-row partial sums: order varies in the last bits).
extern "C" __global__ void ef_accum_SUF(const T* __restrict__ G, const T* __restrict__ M, long long d,
                                        T* __restrict__ P, double* __restrict__ sq) {
    long long i = blockIdx.y;
    double part = 0.0;
    GRID_LOOP(j, d) {
        T p = G[i * d + j] + M[i * d + j];
        P[i * d + j] = p;
        part += (double)p * (double)p;
    }
    for (int o = 16; o > 0; o >>= 1) part += __shfl_down_sync(FULL, part, o);
    __shared__ double ws[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) ws[warp] = part;
    __syncthreads();
    if (warp == 0) {
        part = lane < (blockDim.x >> 5) ? ws[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) part += __shfl_down_sync(FULL, part, o);
        if (lane == 0) atomicAdd(&sq[i], part);
    }
}
// vals = P[i, idx], P[i, idx] = 0, upd[idx] += vals (the server's sum; divided by n afterwards).
extern "C" __global__ void ef_send_SUF(T* __restrict__ P, const long long* __restrict__ idx, long long d, long long k,
                                       double inv_k, long long size, T* __restrict__ vals, double* __restrict__ upd) {
    GRID_LOOP(t, size) {
        long long i = row_of(t, k, inv_k);
        long long c = idx[t];
        T v = P[i * d + c];
        vals[t] = v;
        P[i * d + c] = (T)0;
        atomicAdd(&upd[c], (double)v);
    }
}

// ---------------------------------------------------------------- radix select (top-k of |x| per row)
// Histogram of the digit (key >> shift) & (2^width - 1) over the keys that match the row's prefix so far.
extern "C" __global__ void radix_hist_SUF(const T* __restrict__ x, long long d, long long chunk,
                                          const K* __restrict__ prefix, const K* __restrict__ mask,
                                          int shift, int width, unsigned int* __restrict__ hist) {
    __shared__ unsigned int sh[2048];
    long long row = blockIdx.y;
    for (int b = threadIdx.x; b < 2048; b += blockDim.x) sh[b] = 0u;
    __syncthreads();
    const K pre = prefix[row], msk = mask[row];
    const K dmask = (((K)1) << width) - (K)1;
    const T* xr = x + row * d;
    long long start = (long long)blockIdx.x * chunk;
    long long end = start + chunk < d ? start + chunk : d;
    long long step = blockDim.x;
    long long j = start + threadIdx.x;
    for (; j + 3 * step < end; j += 4 * step) {  // four independent loads in flight per thread
        K k0 = keyof(xr[j]), k1 = keyof(xr[j + step]), k2 = keyof(xr[j + 2 * step]), k3 = keyof(xr[j + 3 * step]);
        if ((k0 & msk) == pre) atomicAdd(&sh[(unsigned int)((k0 >> shift) & dmask)], 1u);
        if ((k1 & msk) == pre) atomicAdd(&sh[(unsigned int)((k1 >> shift) & dmask)], 1u);
        if ((k2 & msk) == pre) atomicAdd(&sh[(unsigned int)((k2 >> shift) & dmask)], 1u);
        if ((k3 & msk) == pre) atomicAdd(&sh[(unsigned int)((k3 >> shift) & dmask)], 1u);
    }
    for (; j < end; j += step) {
        K k0 = keyof(xr[j]);
        if ((k0 & msk) == pre) atomicAdd(&sh[(unsigned int)((k0 >> shift) & dmask)], 1u);
    }
    __syncthreads();
    unsigned int* hr = hist + row * 2048;
    for (int b = threadIdx.x; b < 2048; b += blockDim.x) {
        unsigned int c = sh[b];
        if (c) atomicAdd(&hr[b], c);
    }
}
// One warp per row: the bin (from the top) where the running count reaches need; fixes that digit.
extern "C" __global__ void radix_find_SUF(const unsigned int* __restrict__ hist, K* __restrict__ prefix,
                                          K* __restrict__ mask, long long* __restrict__ need, int shift, int width) {
    long long row = blockIdx.x;
    int lane = threadIdx.x;
    const unsigned int* h = hist + row * 2048;
    unsigned long long nd = (unsigned long long)need[row];
    unsigned long long s = 0;
    for (int t = 0; t < 64; ++t) s += h[2047 - 64 * lane - t];
    unsigned long long c = s;
    for (int o = 1; o < 32; o <<= 1) {
        unsigned long long y = __shfl_up_sync(FULL, c, o);
        if (lane >= o) c += y;
    }
    unsigned int ok = __ballot_sync(FULL, c >= nd);
    int L = __ffs(ok) - 1;
    if (lane == L) {
        unsigned long long cum = c - s;
        for (int t = 0; t < 64; ++t) {
            int b = 2047 - 64 * lane - t;
            unsigned long long cnt = h[b];
            if (cum + cnt >= nd) {
                prefix[row] |= ((K)b) << shift;
                mask[row] |= ((((K)1) << width) - (K)1) << shift;
                need[row] = (long long)(nd - cum);
                break;
            }
            cum += cnt;
        }
    }
}
// Per warp segment of SEG elements: how many keys are > T (low 32 bits) and == T (high 32 bits).
extern "C" __global__ void sel_count_SUF(const T* __restrict__ x, long long d, long long nseg,
                                         const K* __restrict__ thr, unsigned long long* __restrict__ cnt) {
    long long row = blockIdx.y;
    int lane = threadIdx.x & 31;
    long long s = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (s >= nseg) return;
    const K T_ = thr[row];
    const T* xr = x + row * d;
    long long start = s * SEG_, end = start + SEG_ < d ? start + SEG_ : d;
    unsigned int gt = 0, eq = 0;
    long long j = start + lane;
    for (; j + 96 < end; j += 128) {
        K k0 = keyof(xr[j]), k1 = keyof(xr[j + 32]), k2 = keyof(xr[j + 64]), k3 = keyof(xr[j + 96]);
        gt += (k0 > T_) + (k1 > T_) + (k2 > T_) + (k3 > T_);
        eq += (k0 == T_) + (k1 == T_) + (k2 == T_) + (k3 == T_);
    }
    for (; j < end; j += 32) {
        K k0 = keyof(xr[j]);
        gt += k0 > T_;
        eq += k0 == T_;
    }
    for (int o = 16; o > 0; o >>= 1) {
        gt += __shfl_down_sync(FULL, gt, o);
        eq += __shfl_down_sync(FULL, eq, o);
    }
    if (lane == 0) cnt[row * nseg + s] = ((unsigned long long)eq << 32) | (unsigned long long)gt;
}
// Writes the selected indices of each warp segment at their rank: keys > T, and the first `need` keys == T.
extern "C" __global__ void sel_write_SUF(const T* __restrict__ x, long long d, long long nseg,
                                         const K* __restrict__ thr, const long long* __restrict__ need,
                                         const unsigned long long* __restrict__ gt_before,
                                         const unsigned long long* __restrict__ eq_before,
                                         long long k, long long* __restrict__ out) {
    long long row = blockIdx.y;
    int lane = threadIdx.x & 31;
    long long s = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (s >= nseg) return;
    const K T_ = thr[row];
    const long long nd = need[row];
    const T* xr = x + row * d;
    long long* orow = out + row * k;
    long long start = s * SEG_, end = start + SEG_ < d ? start + SEG_ : d;
    long long eqr = (long long)eq_before[row * nseg + s];
    long long pos = (long long)gt_before[row * nseg + s] + (eqr < nd ? eqr : nd);
    const unsigned int lt = (1u << lane) - 1u;
    for (long long base = start; base < end; base += 128) {
        K ks[4];
        #pragma unroll
        for (int q = 0; q < 4; ++q) {
            long long j = base + 32 * q + lane;
            ks[q] = j < end ? keyof(xr[j]) : (K)0;
        }
        #pragma unroll
        for (int q = 0; q < 4; ++q) {
            long long j = base + 32 * q + lane;
            bool in = j < end;
            bool g = in && ks[q] > T_;
            bool e = in && ks[q] == T_;
            unsigned int em = __ballot_sync(FULL, e);
            bool take = g || (e && eqr + __popc(em & lt) < nd);
            unsigned int tm = __ballot_sync(FULL, take);
            if (take) orow[pos + __popc(tm & lt)] = j;
            pos += __popc(tm);
            eqr += __popc(em);
        }
    }
}
"""


def source() -> str:
    """The whole CUDA translation unit: common helpers, then every kernel once per element type.

    Each type gets its own namespace with ``T`` (data), ``K`` (key) and ``UNI`` (the uniform of that
    dtype) as typedefs, so the kernel text is written once; the ``extern "C"`` names carry the suffix.
    """
    parts = [_COMMON, _SCAN]
    for T, K, U, suffix in _TYPES:
        body = _PER_TYPE.replace("SEG_", str(SEG)).replace("TILE", str(TILE)).replace("_SUF", "_" + suffix)
        parts.append(f"namespace ns_{suffix} {{\ntypedef {T} T;\ntypedef {K} K;\n"
                     f"__device__ __forceinline__ double UNI(unsigned long long a, unsigned long long b) "
                     f"{{ return {U}(a, b); }}\n{body}\n}}\n")
    return "\n".join(parts)


_MODULE = None


def kernel(name: str, dtype=None):
    """Compiled kernel ``name`` for ``dtype`` (float32 or float64; ``None`` for a type-free kernel).

    The module is compiled on first use (CuPy caches the binary on disk).
    """
    global _MODULE
    import cupy as cp
    import numpy as np

    if _MODULE is None:
        _MODULE = cp.RawModule(code=source(), options=("--fmad=false", "-std=c++14"))
    if dtype is None:
        return _MODULE.get_function(name)
    return _MODULE.get_function(f"{name}_{'f32' if np.dtype(dtype) == np.float32 else 'f64'}")
