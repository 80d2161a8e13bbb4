"""simcomm: simulate communication-efficient distributed SGD and check the theory against it.

Subpackages: :mod:`simcomm.compress`, :mod:`simcomm.models`, :mod:`simcomm.estimate`,
:mod:`simcomm.optim`, :mod:`simcomm.topology`, :mod:`simcomm.sampling`, :mod:`simcomm.backends`.
Machinery: :mod:`simcomm.spec`, :mod:`simcomm.runner`, :mod:`simcomm.claims`,
:mod:`simcomm.plotting`, :mod:`simcomm.results`.
"""

from simcomm._errors import BackendUnavailable, SpecError, UserError

__version__ = "0.1.0"
__all__ = ["BackendUnavailable", "SpecError", "UserError", "__version__"]
