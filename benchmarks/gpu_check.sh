#!/usr/bin/env bash
# The device check of issue 19, one script for the GPU machine (about 5 minutes on one H200):
# the GPU tests, then the side-by-side numba / cupy benchmark (CSV, figure, JSON) and the end-to-end run.
# Usage (from the repository root): bash benchmarks/gpu_check.sh [OUTDIR]   (default benchmarks/out)
set -u
out=${1:-${OUT:-benchmarks/out}}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.numba_cache}"
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
$py -c "import cupy, numba, numpy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__)"
echo "== GPU tests"
timeout "${TEST_TIMEOUT:-170}" $py -m pytest -q -p no:randomly -p no:cacheprovider --continue-on-collection-errors \
    tests -k "gpu or cupy" 2>&1 | tee "$out/gpu_tests.log" | tail -40
echo "== benchmark"
timeout "${BENCH_TIMEOUT:-400}" $py benchmarks/gpu_bench.py --out "$out" "${@:2}" 2>&1 | tee "$out/gpu_bench.log"
