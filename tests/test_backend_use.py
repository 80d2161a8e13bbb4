"""The active backend: ``simcomm.backends.use`` sets it for a block, ``get_backend()`` reads it."""

import threading

import pytest

from simcomm import BackendUnavailable
from simcomm.backends import DEFAULT_BACKEND, available_backends, get_backend, use


def test_use_sets_the_active_backend_for_the_block_only():
    default = get_backend()
    assert default.NAME == DEFAULT_BACKEND or DEFAULT_BACKEND not in available_backends()
    with use("numpy") as be:
        assert be.NAME == "numpy" and get_backend() is be
        with use(None):  # an entry point given no backend keeps the enclosing one
            assert get_backend() is be
        assert get_backend("numba").NAME == "numba"  # naming a backend still names it
    assert get_backend() is default


def test_use_is_undone_after_an_error_and_checks_the_name():
    with pytest.raises(ZeroDivisionError), use("numpy"):
        1 / 0  # noqa: B018
    assert get_backend().NAME != "numpy" or DEFAULT_BACKEND == "numpy"
    with pytest.raises(BackendUnavailable, match="unknown backend 'nump'"), use("nump"):
        pass


def test_use_takes_a_backend_module_and_is_per_thread():
    seen = []
    with use(get_backend("numpy")):
        t = threading.Thread(target=lambda: seen.append(get_backend().NAME))
        t.start()
        t.join()
        assert get_backend().NAME == "numpy"
    assert seen == [get_backend().NAME]  # a new thread starts from the default, not the caller's block
