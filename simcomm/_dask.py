"""Dask executor: the same ``map`` interface as the builtin, on a LocalCluster or a remote scheduler."""

from __future__ import annotations

from simcomm._errors import UserError

__all__ = ["dask_map"]


def dask_map(scheduler: str):
    """Return ``map(func, iterable)`` running on Dask; results come back in input order.

    Parameters
    ----------
    scheduler : str
        ``"local"`` starts a LocalCluster of processes on loopback (no dashboard) for the duration
        of each map; ``"tcp://HOST:PORT"`` connects to a running scheduler.
    """
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UserError("--scheduler needs Dask: install the dist extra with pip install 'simcomm[dist]'") from None
    if scheduler != "local" and not scheduler.startswith(("tcp://", "tls://", "inproc://")):
        raise UserError(f"--scheduler '{scheduler}' is neither 'local' nor an address like tcp://127.0.0.1:8786")

    def mapper(func, iterable):
        items = list(iterable)
        if not items:
            return
        if scheduler == "local":
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None)
            client = Client(cluster)
        else:
            try:
                client = Client(scheduler, timeout="10s")
            except OSError as exc:
                raise UserError(f"cannot reach the Dask scheduler at {scheduler} ({exc}); start one with "
                                "'dask scheduler' and 'dask worker ADDRESS'") from None
            cluster = None
        try:
            futures = client.map(func, items, pure=False)
            for fut in futures:
                yield fut.result()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    return mapper
