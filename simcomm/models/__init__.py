"""Gradient models and learning problems: quadratics, least squares, logistic regression, MLPs, real data.

Helpers the optimisers and experiments share (``node_gradients``, ``minibatch_gradient``,
``weighted_gradient``, ``per_example_grad_norms``, ``unflatten``, ...) stay in their private modules; the
numerics they share (stable softmax, cross-entropy, logistic, the MLP forward pass and backward walk) are
written once, in ``simcomm.models._ops``.
"""

from simcomm.models._data import (
    DATASETS,
    Dataset,
    load_dataset,
    split_workers,
)
from simcomm.models._decentralized import (
    NODE_PROBLEMS,
    NodeOracle,
    NodeProblem,
    diagonal_quadratic,
    global_gradient,
    global_gradients,
    global_loss,
    heterogeneity,
    heterogeneous_least_squares,
    logistic_problem,
    make_node_problem,
    node_gradients,
    node_slice,
    problem_to,
    suboptimality,
)
from simcomm.models._gradfile import GRADIENT_FORMAT, load_gradients, save_gradients
from simcomm.models._idx import read_idx
from simcomm.models._nn import (
    MLP,
    accuracy,
    gradient,
    init_params,
    logistic_regression,
    loss,
    mlp,
    per_example_grad_norms,
    per_example_gradients,
    predict_logits,
    unflatten,
    weighted_gradient,
    worker_gradients,
)
from simcomm.models._ops import log1p_exp, sigmoid
from simcomm.models._quadratic import (
    PROBLEMS,
    Problem,
    binary_features,
    logistic,
    make_problem,
    nonconvex,
    quadratic,
    ridge,
)
from simcomm.models._real_grads import (
    OPERATORS,
    FittedSkewModel,
    SkewStats,
    capture_gradients,
    fit_sparse_skewed,
    operator_errors,
    skew_stats,
)
from simcomm.models._sparse_skewed import (
    SparseSkewedModel,
    skewed_profile,
    sparse_heavy_tailed,
    sparse_skewed_model,
)
from simcomm.models._torch_nets import lenet5, small_resnet
from simcomm.models._torch_nn import TorchModel

__all__ = [
    "binary_features",
    "log1p_exp",
    "sigmoid",
    "GRADIENT_FORMAT",
    "load_gradients",
    "save_gradients",
    "accuracy",
    "capture_gradients",
    "Dataset",
    "DATASETS",
    "diagonal_quadratic",
    "fit_sparse_skewed",
    "FittedSkewModel",
    "global_gradient",
    "global_loss",
    "gradient",
    "heterogeneity",
    "heterogeneous_least_squares",
    "init_params",
    "load_dataset",
    "logistic",
    "logistic_problem",
    "logistic_regression",
    "loss",
    "make_node_problem",
    "make_problem",
    "MLP",
    "mlp",
    "NODE_PROBLEMS",
    "NodeOracle",
    "NodeProblem",
    "nonconvex",
    "per_example_gradients",
    "predict_logits",
    "problem_to",
    "Problem",
    "PROBLEMS",
    "quadratic",
    "ridge",
    "skew_stats",
    "skewed_profile",
    "SkewStats",
    "sparse_heavy_tailed",
    "sparse_skewed_model",
    "SparseSkewedModel",
    "split_workers",
    "suboptimality",
    "read_idx", "TorchModel", "lenet5", "small_resnet",
    "global_gradients", "node_gradients", "node_slice",
    "per_example_grad_norms", "unflatten", "weighted_gradient", "worker_gradients",
    "operator_errors", "OPERATORS",
]
