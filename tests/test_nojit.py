"""The numba kernels' Python bodies, run with NUMBA_DISABLE_JIT=1 so that coverage sees them.

Jitted code is invisible to coverage, and a kernel body can only be debugged as Python; this runs a small
subset of the kernel tests (selection, Floyd sampling, rTop-k, the quantizers, the EF send and fused kernels,
DSGD, the tracking, push-sum and CHOCO steps, counter noise, gossip parity and the elementwise compressors)
with the JIT off, in a subprocess so the rest of the suite stays jitted. Sizes that would take long as pure
Python (the wide-row cases) are deselected.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

KERNEL_TESTS = [
    "tests/test_compress_sparsify.py::test_topk_indices_match_oracle",
    "tests/test_compress_sparsify.py::test_floyd_matches_oracle",
    "tests/test_compress_sparsify.py::test_rtopk_indices_match_oracle",
    "tests/test_quantize.py::test_matches_naive_oracle",
    "tests/test_quantize.py::test_kernels_agree_bitwise_given_norms",
    "tests/test_ef_sgd.py::test_send_kernel_parity",
    "tests/test_ef_sgd.py::test_fused_kernel_parity_with_top_k",
    "tests/test_ef_sgd.py::test_fused_kernel_row_blocks_equal_the_serial_rows",
    "tests/test_decentralized.py::test_numba_matches_numpy_on_shared_noise",
    "tests/test_dsgd_counter.py::test_counter_normals_numba_matches_numpy",
    "tests/test_topology.py::test_numpy_numba_parity",
    "tests/test_topology.py::test_mix_kernels_bitwise_with_empty_rows",
    "tests/test_minmax_fused.py::test_minmax_kernel_is_bitwise_the_old_one",
    "tests/test_elementwise_kernels.py::test_elementwise_kernels_equal_numpy",
    "tests/test_elementwise_kernels.py::test_bf16_round_is_nearest_even_with_overflow",
    "tests/test_compress_lowrank_dither.py::test_natural_dithering_kernels_agree_across_backends",
    "tests/test_run_buffers.py::test_fused_kernels_numba_equal_numpy",
]
# numpy-only parametrisations add nothing here; the long rows take minutes without the JIT
DESELECT = "not 50000 and not wide and not 20000 and not numpy-"


def test_kernel_bodies_pass_without_jit():
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    # the counter-based uniforms hash with uint64 arithmetic that wraps by design; as Python scalars numpy
    # warns about the wrap-around (compiled code does not), so those warnings are silenced
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           "-W", "ignore:overflow encountered:RuntimeWarning", "-k", DESELECT, *KERNEL_TESTS]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = res.stdout[-3000:] + res.stderr[-2000:]
    assert res.returncode == 0, tail
    assert " passed" in res.stdout and " failed" not in res.stdout, tail


def test_jit_really_is_off_in_the_subprocess():
    # the check above is only meaningful if the kernels run as Python there: with the JIT on, an @njit kernel
    # is a numba dispatcher, with it off the plain function
    code = "import inspect; from simcomm.backends._numba import select; print(inspect.isfunction(select._topk_row))"
    for flag, expected in (("1", "True"), ("0", "False")):
        env = {**os.environ, "NUMBA_DISABLE_JIT": flag}
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                             check=True)
        assert out.stdout.strip() == expected
