"""``simcomm payload COMPRESSOR -d D``: formula bits vs real encoded bytes of one message, and its round trip."""

from __future__ import annotations

import json

import click

from simcomm.cli import cli


def _setting_options(func):
    """One ``--NAME`` option per setting any registered compressor declares (from the registry)."""
    from simcomm.compress import COMPRESSORS

    seen = {}
    for name, cls in COMPRESSORS.items():
        for st in cls.settings():
            seen.setdefault(st.name, (st, []))[1].append(name)
    types = {"int": int, "float": float, "str": str}
    for key, (st, users) in reversed(list(seen.items())):
        help_ = f"{st.doc} ({', '.join(users)})."
        if st.kind == "bool":
            opt = click.option(f"--{key}/--no-{key}", key, default=None, help=help_)
        else:
            opt = click.option(f"--{key}", key, type=types.get(st.kind, str), default=None, help=help_)
        func = opt(func)
    return func


def _names() -> str:
    from simcomm.compress import COMPRESSORS

    return ", ".join(COMPRESSORS)


@cli.command(help=None)
@click.argument("compressor")
@click.option("-d", "d", type=int, required=True, help="Length of the random Gaussian vector.")
@_setting_options
@click.option("--coding", default=None, help="Index/level coding (default: the one the bit formula counts).")
@click.option("--value-dtype", "--dtype", "value_dtype", default="float32", show_default=True,
              help="Value dtype on the wire: float32, float16 or bfloat16 (value_dtype in Python and specs).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the vector and the compressor.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def payload(compressor, d, coding, value_dtype, seed, as_json, **settings):
    """Encode one compressed message of a random Gaussian vector to bytes and decode it back.

    Prints the formula bits (the library's bit count for the compressor and coding, header
    excluded), the encoded bytes (header included) and whether decode(encode(m)) == m exactly.
    COMPRESSOR is any registered compressor (simcomm.compress.COMPRESSORS; see the list below), its
    settings the options of the same name.
    Codings: sparse auto (cheaper of packed/bitmap), raw (int32), packed, bitmap, gamma, varint;
    qsgd fixed or elias; ternary trit5 or 2bit; stochastic_round and coded messages fixed; none raw.

    \b
    Examples:
      simcomm payload top_k -d 1000000 --k 10000 --coding gamma
      simcomm payload qsgd -d 4096 --s 16 --coding elias --json
      simcomm payload none -d 1000 --value-dtype bfloat16
    """
    import numpy as np

    from simcomm._errors import UserError
    from simcomm.compress import compressor_from_settings
    from simcomm.network import CODINGS, HEADER_BYTES, decode, encode, formula_bits, payload_sections

    if d < 1:
        raise UserError(f"-d {d} is out of range; use a vector length d >= 1")
    from simcomm.cost import available_memory, fmt_bytes

    # The vector (float64 draw, float32 copy), the compressed message and its encoding: ~24 bytes a coordinate.
    need, avail = 24 * d, available_memory()
    if avail is not None and need > avail:
        raise UserError(f"-d {d} needs ~{fmt_bytes(need)} of memory, more than the {fmt_bytes(avail)} available "
                        "here; use a smaller -d")
    comp = compressor_from_settings(compressor, settings)
    x_rng, c_rng = np.random.default_rng(seed).spawn(2)
    x = x_rng.standard_normal(d).astype(np.float32)
    msg = comp.to_message(x, rng=c_rng, value_dtype=value_dtype)
    blob = encode(msg, coding)
    ok = decode(blob) == msg
    used = coding or CODINGS[msg.kind][0]
    info = dict(compressor=compressor, d=d, coding=used, count=msg.count, bits=int(formula_bits(msg, coding)),
                bytes=len(blob), header_bytes=HEADER_BYTES, sections=payload_sections(msg, coding),
                roundtrip=bool(ok))
    if as_json:
        click.echo(json.dumps(info))
        return
    for key, value in info.items():
        click.echo(f"{key:>13}: {value}")


payload.help = payload.callback.__doc__.replace("(simcomm.compress.COMPRESSORS; see the list below)",
                                                f"({_names()})")
