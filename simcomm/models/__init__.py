"""Statistical gradient models and learning problems (quadratics, least squares, logistic regression, MLPs, real data)."""

from simcomm.models._data import DATASETS, Dataset, load_dataset, split_workers  # noqa: F401
from simcomm.models._quadratic import PROBLEMS, Problem, logistic, make_problem, nonconvex, quadratic, ridge  # noqa: F401
from simcomm.models._nn import MLP, accuracy, gradient, init_params, logistic_regression, loss, minibatch_gradient, mlp, per_example_grad_norms, per_example_gradients, per_example_losses, predict_logits, unflatten, weighted_gradient  # noqa: F401

__all__ = [
    "DATASETS", "Dataset", "load_dataset", "split_workers",
    "MLP", "accuracy", "gradient", "init_params", "logistic_regression", "loss", "minibatch_gradient", "mlp",
    "per_example_grad_norms", "per_example_gradients", "per_example_losses", "predict_logits", "unflatten",
    "weighted_gradient",
]
__all__ += ["PROBLEMS", "Problem", "logistic", "make_problem", "nonconvex", "quadratic", "ridge"]
from simcomm.models._sparse_skewed import SparseSkewedModel, sample_bernoulli, skewed_profile, sparse_heavy_tailed, sparse_skewed_model  # noqa: E402,F401
__all__ += ["SparseSkewedModel", "sample_bernoulli", "skewed_profile", "sparse_heavy_tailed", "sparse_skewed_model"]
from simcomm.models._decentralized import NODE_PROBLEMS, NodeProblem, global_gradient, global_loss, global_gradients, heterogeneity, heterogeneous_least_squares, logistic_problem, make_node_problem, node_gradients, suboptimality  # noqa: E402,F401
__all__ += ["NODE_PROBLEMS", "NodeProblem", "global_gradient", "global_loss", "global_gradients", "heterogeneity", "heterogeneous_least_squares", "logistic_problem", "make_node_problem", "node_gradients", "suboptimality"]
from simcomm.models._real_grads import OPERATORS, FittedSkewModel, SkewStats, capture_gradients, fit_sparse_skewed, operator_errors, skew_stats  # noqa: E402,F401
__all__ += ["OPERATORS", "FittedSkewModel", "SkewStats", "capture_gradients", "fit_sparse_skewed", "operator_errors", "skew_stats"]
