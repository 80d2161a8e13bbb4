"""PyTorch interop: a compressor as a DDP communication hook, and gradients captured from a torch module.

:func:`comm_hook` turns any :class:`~simcomm.compress.Compressor` (with or without error feedback) into
the ``(state, hook)`` pair ``DistributedDataParallel.register_comm_hook`` takes; :class:`GradientRecorder`
records per-step flattened gradients of a user's module for :func:`simcomm.models.capture_gradients`-style
analyses; :class:`OuterStep` is DiLoCo's outer step (pseudo-gradients, compression with error feedback, an
outer SGD or Nesterov step) for a user's local-update training loop. Needs the ``torch`` extra (``pip install
torch`` or the CPU wheel, ``pip install torch==2.13.0``).
"""

from simcomm.torch._capture import GradientRecorder
from simcomm.torch._hook import HookState, comm_hook
from simcomm.torch._outer import OuterStep

__all__ = ["comm_hook", "HookState", "GradientRecorder", "OuterStep"]
