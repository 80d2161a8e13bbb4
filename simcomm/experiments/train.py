"""Every named parameter-server and decentralized method of :data:`simcomm.optim.METHODS` as an experiment.

A spec names a method by its experiment, ``[experiment] name = "train_ef21_hb_delayed"``, and sets the
method's declared settings (a compressor as a label, ``compressor = "top_k(k=5)"``), the problem and the
run in ``[params]`` or ``[grid]``: the experiment's parameters are the method's, plus the problem's and
the run's below, derived from the registry (nothing is typed twice). A method registered later (a
user's plugin) gets its experiment when a spec first names it. A parameter-server method (family
``"server"``) trains on :func:`simcomm.models.make_problem`'s problems (:data:`PROBLEM_PARAMS`), a
decentralized one (family ``"nodes"``: ``train_dsgd``, ``train_gradient_tracking``, ...) on
:func:`simcomm.models.heterogeneous_least_squares` (:data:`NODE_PROBLEM_PARAMS`), run by
:func:`simcomm.optim.run` with the method's own watch and every node at the problem's ``x0``.

Rows: per recorded step, every record of the trace (``f_gap``, ``dist2``, ``grad2``, ``bits``; a
decentralized method's records, e.g. ``consensus``, ``subopt``, ``messages``) as ``metric``/``value``
with the ``step`` (a design column: a claim selects a step with ``where``); once per replicate, the
last record of each as ``final_<record>`` and ``diverged`` (0 or 1), without a step (what a sweep figure
draws against the grid).
"""

from __future__ import annotations

import numpy as np

from simcomm.experiments._registry import EXPERIMENTS, ON_MISS, Param, experiment
from simcomm.models import heterogeneous_least_squares, make_problem
from simcomm.optim import METHODS, run

__all__ = ["register_training", "register_all", "PROBLEM_PARAMS", "NODE_PROBLEM_PARAMS", "RUN_PARAMS"]

#: the problem a parameter-server method trains on (:func:`simcomm.models.make_problem`)
PROBLEM_PARAMS = {
    "problem": Param("str", default="quadratic",
                     choices=("quadratic", "ridge", "logistic_breast_cancer", "logistic_digits", "nonconvex"),
                     doc="problem with known f* (simcomm.models.make_problem)"),
    "n": Param("int", default=8, low=1, doc="workers"),
    "d": Param("int", default=20, low=1, doc="dimension (quadratic, ridge, nonconvex)"),
    "L": Param("float", default=1.0, low=0.0, low_open=True, doc="smoothness (quadratic, ridge, nonconvex)"),
    "mu": Param("float", default=0.1, low=0.0, low_open=True, doc="strong convexity (quadratic, ridge)"),
    "sigma2": Param("float", default=1.0, low=0.0, doc="(1/n) sum |grad f_i(x*)|^2 (quadratic; 0: identical workers)"),
}
#: the problem a decentralized method trains on (:func:`simcomm.models.heterogeneous_least_squares`)
NODE_PROBLEM_PARAMS = {
    "n": Param("int", default=16, low=1, doc="nodes"),
    "d": Param("int", default=10, low=1, doc="dimension"),
    "m": Param("int", default=0, low=0, doc="examples per node (0: 2 d)"),
    "b": Param("float", default=1.0, low=0.0, doc="heterogeneity at the optimum, (1/n) sum |grad f_i(x*)|^2 = b^2"),
    "shared": Param("bool", default=False, doc="every node has the same design matrix"),
}
#: how long and how often
RUN_PARAMS = {
    "steps": Param("int", default=200, low=1, doc="updates"),
    "record_every": Param("int", default=20, low=1, doc="record every this many steps (and at 0 and steps)"),
}


def _problem(params, rng):
    name = params["problem"]
    if name == "nonconvex":
        return make_problem(name, n=params["n"], d=params["d"], L=params["L"], rng=rng)
    return make_problem(name, n=params["n"], d=params["d"], L=params["L"], mu=params["mu"], sigma2=params["sigma2"],
                        rng=rng)


def _node_problem(params, rng):
    return heterogeneous_least_squares(params["n"], params["d"], m=params["m"] or None, b=params["b"],
                                       shared=params["shared"], rng=rng)


def _check(info):
    def check(params):
        if info.family == "server" and params["problem"] in ("quadratic", "ridge") and params["mu"] > params["L"]:
            raise ValueError(f"mu = {params['mu']} > L = {params['L']}; use mu <= L")
        info(**{k: params[k] for k in info.params})  # the method's own cross-setting rules (k <= d is the run's)

    return check


def register_training(name: str) -> None:
    """Register ``train_<name>`` for the parameter-server or decentralized method ``name`` (idempotent).

    Methods of the other families (``"consensus"``: no problem; ``"model"``: a model and data) have none.
    """
    info = METHODS[name]
    if info.family not in ("server", "nodes") or f"train_{name}" in EXPERIMENTS:
        return
    problem_params, make = (PROBLEM_PARAMS, _problem) if info.family == "server" else (NODE_PROBLEM_PARAMS,
                                                                                        _node_problem)
    clash = set(info.params) & (set(problem_params) | set(RUN_PARAMS))
    if clash:
        raise ValueError(f"method '{name}' declares {sorted(clash)}, which name the problem or the run")

    def train(params, rng, backend):
        problem = make(params, rng)
        m = info(**{k: params[k] for k in info.params})
        with np.errstate(all="ignore" if info.family == "nodes" else None):  # a diverged run is a record
            tr = run(problem, m, params["steps"], rng=rng, record_every=params["record_every"], backend=backend)
        rows = []
        for key, values in tr.records.items():
            v = np.asarray(values)
            v = v[0] if v.ndim == 2 else v
            rows += [dict(metric=key, value=float(x), step=int(s)) for s, x in zip(tr.step, v)]
            rows.append(dict(metric=f"final_{key}", value=float(v[-1]), note=tr.note))
        rows.append(dict(metric="diverged", value=float(tr.diverged[0]), note=tr.note))
        return rows

    train.__doc__ = f"Train with the named method '{name}' ({info.doc}) and record its trace."
    experiment(f"train_{name}", params={**info.params, **problem_params, **RUN_PARAMS}, check=_check(info),
               columns=("step",))(train)


def register_all() -> None:
    """Register ``train_<name>`` for every parameter-server and decentralized method registered so far."""
    for name in list(METHODS):
        register_training(name)


register_all()
ON_MISS.append(register_all)
