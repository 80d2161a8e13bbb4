"""``simcomm payload COMPRESSOR -d D``: formula bits vs real encoded bytes of one message, and its round trip."""

from __future__ import annotations

import json

import click

from simcomm.cli import cli
from simcomm.cli._common import PluginCommand, plugin_option


def _setting_params(classes, taken=()) -> list:
    """One ``--NAME`` option per setting the compressor ``classes`` declare (``taken``: names already options)."""
    seen = {}
    for cls in classes:
        for st in cls.settings():
            if st.name not in taken:
                seen.setdefault(st.name, (st, []))[1].append(cls.name or cls.__name__)
    types = {"int": int, "float": float, "str": str}
    out = []
    for key, (st, users) in seen.items():
        help_ = f"{st.doc} ({', '.join(users)})."
        if st.kind == "bool":
            out.append(click.Option([f"--{key}/--no-{key}", key], default=None, help=help_))
        else:
            out.append(click.Option([f"--{key}", key], type=types.get(st.kind, str), default=None, help=help_))
    return out


def _setting_options(func):
    """One ``--NAME`` option per setting any registered compressor declares (from the registry)."""
    from simcomm.compress import COMPRESSORS

    func.__click_params__ = getattr(func, "__click_params__", []) + _setting_params(COMPRESSORS.values())[::-1]
    return func


def _plugin_settings(ctx, args) -> None:
    """After the plugins load: options for the settings of compressors they registered, or of a MODULE:Class."""
    import dataclasses
    import inspect

    from simcomm.compress import COMPRESSORS, Compressor

    classes = list(COMPRESSORS.values())
    for a in args:
        if ":" in a and not a.startswith("-"):
            try:
                from simcomm.spec import resolve

                obj = resolve(a, "payload")
            except Exception:  # noqa: BLE001 - not a reference (or a bad one): the command reports it later
                continue
            if inspect.isclass(obj) and issubclass(obj, Compressor) and dataclasses.is_dataclass(obj):
                classes.append(obj)
    taken = {p.name for p in payload.params}
    payload.params[-1:-1] = _setting_params(classes, taken)  # before --help


def _names() -> str:
    from simcomm.compress import COMPRESSORS

    return ", ".join(COMPRESSORS)


@cli.command(help=None, cls=PluginCommand)
@click.argument("compressor")
@plugin_option
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
    settings the options of the same name, or MODULE:NAME of your own Compressor (an instance, or a
    class built with the options); a compressor with apply only is sent dense (32 bits a value).
    Codings: sparse auto (cheaper of packed/bitmap), raw (int32), packed, bitmap, gamma, varint;
    qsgd fixed or elias; ternary trit5 or 2bit; stochastic_round and coded messages fixed; none raw.

    \b
    Examples:
      simcomm payload top_k -d 1000000 --k 10000 --coding gamma
      simcomm payload qsgd -d 4096 --s 16 --coding elias --json
      simcomm payload none -d 1000 --value-dtype bfloat16
      simcomm payload mycomp:Threshold -d 1000 --plugin mycomp.py
    """
    import numpy as np

    from simcomm._errors import UserError
    from simcomm.network import CODINGS, HEADER_BYTES, decode, encode, formula_bits, payload_sections

    if d < 1:
        raise UserError(f"-d {d} is out of range; use a vector length d >= 1")
    from simcomm.cost import available_memory, fmt_bytes

    # The vector (float64 draw, float32 copy), the compressed message and its encoding: ~24 bytes a coordinate.
    need, avail = 24 * d, available_memory()
    if avail is not None and need > avail:
        raise UserError(f"-d {d} needs ~{fmt_bytes(need)} of memory, more than the {fmt_bytes(avail)} available "
                        "here; use a smaller -d")
    comp = _build(compressor, {k: v for k, v in settings.items() if v is not None})
    x_rng, c_rng = np.random.default_rng(seed).spawn(2)
    x = x_rng.standard_normal(d).astype(np.float32)
    msg = comp.to_message(x, rng=c_rng, value_dtype=value_dtype)
    blob = encode(msg, coding)
    ok = decode(blob) == msg
    used = coding or CODINGS[msg.kind][0]
    declared = comp.bits(d)
    info = dict(compressor=compressor, d=d, coding=used, count=msg.count, bits=int(formula_bits(msg, coding)),
                declared_bits=int(declared) if float(declared).is_integer() else float(declared),
                bytes=len(blob), header_bytes=HEADER_BYTES, sections=payload_sections(msg, coding),
                roundtrip=bool(ok))
    if as_json:
        click.echo(json.dumps(info))
        return
    for key, value in info.items():
        click.echo(f"{key:>13}: {value}")


def _build(name: str, given: dict):
    """The compressor ``name`` (registered, or ``module:name`` of a Compressor instance or class) with ``given``.

    A setting the compressor does not take is refused (one line), never ignored.
    """
    import inspect

    from simcomm._errors import UserError
    from simcomm.compress import COMPRESSORS, Compressor, compressor_from_name

    flags = ", ".join(f"--{k}" for k in given)
    if ":" not in name:
        cls = COMPRESSORS.get(name)
        if cls is not None:
            takes = [s.name for s in cls.settings()]
            extra = [k for k in given if k not in takes]
            if extra:
                raise UserError(f"{', '.join('--' + k for k in extra)} does not apply to {name}, which takes "
                                f"{', '.join('--' + t for t in takes) or 'no settings'}; leave it out")
        return compressor_from_name(name, **given)
    import os
    import sys

    from simcomm.spec import resolve

    if os.getcwd() not in sys.path:  # MODULE may be a file in the working directory, as for python -m
        sys.path.insert(0, os.getcwd())
    obj = resolve(name, "payload")
    if isinstance(obj, Compressor):
        if given:
            raise UserError(f"{flags} does not apply: {name} is an instance ({obj.label}) with its settings bound; "
                            "leave the options out, or name the class to build it with them")
        return obj
    if inspect.isclass(obj) and issubclass(obj, Compressor):
        takes = [s.name for s in obj.settings()] if _declares_fields(obj) else None
        if takes is not None and (extra := [k for k in given if k not in takes]):
            raise UserError(f"{', '.join('--' + k for k in extra)} does not apply to {obj.__name__}, which takes "
                            f"{', '.join('--' + t for t in takes) or 'no settings'}; leave it out")
        try:
            return obj(**given)
        except TypeError as exc:
            raise UserError(f"cannot build {obj.__name__}({', '.join(f'{k}={v!r}' for k, v in given.items())}): "
                            f"{exc}; pass its settings as options (--k 5) or name an instance") from None
    raise UserError(f"{name} is a {type(obj).__name__}, not a simcomm Compressor; subclass "
                    "simcomm.compress.Compressor with an apply(x, *, rng) method (simcomm conform "
                    "takes plain callables)")


def _declares_fields(cls) -> bool:
    """Whether ``cls`` declares its settings as dataclass fields (a user's class may take them in ``__init__``)."""
    import dataclasses

    return dataclasses.is_dataclass(cls) and "__dataclass_fields__" in vars(cls)


payload.after_plugins = _plugin_settings
payload.help = payload.callback.__doc__.replace("(simcomm.compress.COMPRESSORS; see the list below)",
                                                f"({_names()})")
