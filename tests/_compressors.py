"""The settings every registered compressor is tested at, derived from the registry (optax's table).

A compressor whose settings all have defaults is tested at them with no row here; one that needs
settings, or is worth testing at several, has a row in :data:`ROWS`. ``tests/test_conform.py`` runs the
conformance battery on every case and ``tests/test_compressor_contract.py`` the library-internal
invariants; both fail for a newly registered compressor that cannot be built from its row, so nothing
registered goes untested.
"""

import pytest

from simcomm.compress import COMPRESSORS, compressor_from_name

#: settings, valid at d >= 16, for the compressors that need some or are tested at several
ROWS = {
    "top_k": [dict(k=4)],
    "rand_k": [dict(k=4), dict(k=4, scale=False)],
    "rtop_k": [dict(k=4, r=12)],
    "qsgd": [dict(s=2), dict(s=16)],
    "stochastic_round": [dict(delta=0.3)],
    "bernoulli": [dict(p=0.3)],
    "scaled_sign": [dict(norm="l1"), dict(norm="l2")],
    "minmax_uint8": [dict(bucket=8), dict(bucket=0, stochastic=False)],
    "block_int8": [dict(block=8)],
    "rand_k_replace": [dict(k=4), dict(k=4, scale=False)],
    "powersgd": [dict(rank=2, rows=4), dict(rank=1, rows=0)],
    "natural_dithering": [dict(s=3), dict(s=8)],
    "compose": [dict(first="top_k(k=8)", second="qsgd(s=4)"), dict(first="rand_k(k=8)", second="natural"),
                dict(first="scaled_sign(norm=l1)", second="bf16")],
    "scaling": [dict(c=0.3), dict(c=1.7)],
    "dct_top_k": [dict(k=2, chunk=16), dict(k=3, chunk=10)],
    "top_k_quant": [dict(k=4), dict(k=0, bits_per_value=3)],
}


def rows(name: str) -> list:
    """The settings ``name`` is tested at: its row, or its defaults."""
    return ROWS.get(name, [{}])


def cases(where=None) -> list:
    """``pytest.param(name, settings)`` for every registered compressor (optionally only where ``where(c)``)."""
    return [pytest.param(name, kw, id=f"{name}{''.join(f'-{k}={v}' for k, v in kw.items())}")
            for name in COMPRESSORS for kw in rows(name)
            if where is None or where(compressor_from_name(name, **kw))]
