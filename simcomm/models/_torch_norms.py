r"""Per-example gradient norms of Linear and Conv2d networks from one backward pass (C7, extended to convolutions).

For a layer with input :math:`h_n` and pre-activation output :math:`a_n`, backpropagating the SUM of the
per-example losses gives :math:`\delta_n = \partial\ell_n/\partial a_n` for every example at once
(papers/importance_sampling.md C7). Then, per example :math:`n`:

* ``Linear`` (input ``(B, in)``): :math:`\|\nabla_W\ell_n\|_F^2 = \|\delta_n\|^2\|h_n\|^2` and
  :math:`\|\nabla_b\ell_n\|^2 = \|\delta_n\|^2` (no outer product is formed);
* ``Conv2d`` (``groups = 1``, zero padding): with :math:`U_n` the unfolded input patches
  ``(C_in k^2, L)`` and :math:`\delta_n` of shape ``(C_out, L)`` over the ``L`` output positions,
  :math:`\nabla_W\ell_n = \delta_n U_n^\top` (a small ``C_out x C_in k^2`` matrix per example, weight sharing
  summed over positions) and :math:`\nabla_b\ell_n = \sum_p \delta_{n,:,p}`.

:math:`\|g_n\|^2` is the sum over layers. The shortcut applies when every parameter of the network belongs
to such a layer and each layer runs once per forward pass; :func:`fast_grad_norms` returns ``None``
otherwise, and :meth:`simcomm.models.TorchModel.per_example_grad_norms` then takes the general path
(``vmap`` of per-example gradients). A test checks the two against each other.
"""

from __future__ import annotations

__all__ = ["fast_grad_norms", "supports_fast_norms"]


def _layers(torch, module):
    """The parameterised submodules if every one is a supported Linear/Conv2d, else ``None``."""
    nn = torch.nn
    layers = []
    for sub in module.modules():
        own = list(sub.parameters(recurse=False))
        if not own:
            continue
        if isinstance(sub, nn.Linear):
            layers.append(sub)
        elif (isinstance(sub, nn.Conv2d) and sub.groups == 1 and sub.padding_mode == "zeros"
              and not isinstance(sub.padding, str)):
            layers.append(sub)
        else:
            return None
    return layers


def supports_fast_norms(torch, module) -> bool:
    """Whether every parameter of ``module`` sits in a Linear or Conv2d layer (``groups = 1``, zero padding)."""
    return bool(_layers(torch, module))


def _layer_sq(torch, layer, h, d):
    """Squared norms ``(B,)`` of the per-example gradients of one layer's weight and bias."""
    if isinstance(layer, torch.nn.Linear):
        if h.dim() != 2:
            return None  # a Linear over a sequence shares its weights across positions: not this formula
        sq = (d * d).sum(1) * (h * h).sum(1)
        return sq + (d * d).sum(1) if layer.bias is not None else sq
    U = torch.nn.functional.unfold(h, layer.kernel_size, dilation=layer.dilation, padding=layer.padding,
                                   stride=layer.stride)  # (B, C_in k^2, L)
    D = d.reshape(d.shape[0], d.shape[1], -1)  # (B, C_out, L)
    G = torch.bmm(D, U.transpose(1, 2))  # per-example weight gradients (B, C_out, C_in k^2)
    sq = (G * G).sum((1, 2))
    if layer.bias is not None:
        b = D.sum(2)
        sq = sq + (b * b).sum(1)
    return sq


def fast_grad_norms(model, t, X, y):
    r"""Per-example gradient norms ``(B,)`` (a tensor) of a :class:`~simcomm.models.TorchModel` at ``t``.

    ``t`` is the flat parameter tensor, ``X``/``y`` one chunk of inputs and labels as tensors. Returns
    ``None`` when the shortcut does not apply (a parameter outside Linear/Conv2d layers, a layer run twice
    or over a sequence).
    """
    torch = model._torch
    layers = _layers(torch, model.module)
    if not layers:
        return None
    seen = {id(m): [] for m in layers}

    def keep(mod, inp, out):
        seen[id(mod)].append((inp[0].detach(), out))

    handles = [m.register_forward_hook(keep) for m in layers]
    try:
        with torch.enable_grad():
            tg = t.detach().requires_grad_(True)  # builds the graph through the layers' outputs
            loss = torch.nn.functional.cross_entropy(model._logits(tg, X), y, reduction="sum")
            if any(len(v) != 1 for v in seen.values()):
                return None  # a layer ran twice (weights shared across calls)
            outs = [seen[id(m)][0][1] for m in layers]
            deltas = torch.autograd.grad(loss, outs)
    finally:
        for h in handles:
            h.remove()
    total = torch.zeros(len(y), dtype=deltas[0].dtype, device=deltas[0].device)
    for m, d in zip(layers, deltas):
        sq = _layer_sq(torch, m, seen[id(m)][0][0], d.detach())
        if sq is None:
            return None
        total = total + sq
    return total.sqrt()
