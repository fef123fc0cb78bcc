"""The fused DP-SGD step for the built-in models (logreg, MLP, CNN): the clipped, noised gradient in one pass.

Verified equal to Opacus's clipped, noised gradient for each of them (tests/dpcore/training/test_training.py,
test_fused_clipped_gradient_equals_opacus); fed by :mod:`dpcore.training.sampling`'s Poisson batches and stepped with Opacus's
accountant by :mod:`dpcore.training.loop`.
"""

from __future__ import annotations

from ..errors import DPError

#: the layers the fused step can run: each has a closed-form backward written out below
SUPPORTED = ("AppendOne", "Linear", "Conv2d", "ReLU", "Tanh", "AvgPool2d", "Flatten", "Unflatten")


class FusedDPSGD:
    """DP-SGD for a ``Sequential`` of the :data:`SUPPORTED` layers ending in a Linear layer (the logits), in one pass.

    Per step: a forward pass that keeps each layer's input; then the per-sample backprops written out
    layer by layer, top down, with no autograd graph: ``dz_L = softmax(z_L) − onehot(y)`` (row i is
    sample i's, since the loss is summed), and each layer's exact backward (ReLU, tanh, average pooling,
    a reshape, a Linear layer's ``g·W``, a convolution's input gradient).

    - **Linear** ``W`` (input ``a``): sample i's gradient is ``g_i a_iᵀ``, so its squared norm is
      ``|g_i|²·(|a_i|² + 1 if there is a bias)`` with no per-sample gradient made; the clipped sum is ``(c·g)ᵀ a``.
      A bias-free layer after AppendOne carries its bias as its last column (one tensor, not two).
    - **Conv2d** (groups 1, zero padding): sample i's weight gradient is ``g_i U_iᵀ`` with ``U_i`` the
      unfolded (im2col) input, made for the batch in one ``bmm`` (a few thousand numbers a sample for the
      built-in CNN, cheaper than the Gram-matrix "ghost" norm at its sizes); its bias gradient is ``Σ_p g_ip``.
      The clipped sum is the clip-factor-weighted sum of those rows, one ``addmv``.

    Clip factors as Opacus's flat clipping: ``min(1, C / (‖grad_i‖ + 1e-6))`` over all layers; noise
    ``N(0, σ²C²)`` on every weight from the run's generator; division by Opacus's expected batch size.
    """

    def __init__(self, model, clip: float, noise_multiplier: float, expected_batch_size: int, generator, on_noise=None):
        # lazy: torch takes ~2 s to import
        import torch.nn as nn

        self.layers = list(model)
        for m in self.layers:
            if type(m).__name__ not in SUPPORTED:
                raise DPError(f"fused DP-SGD runs {', '.join(SUPPORTED)} layers only, not {type(m).__name__}")
            if isinstance(m, nn.Conv2d) and (
                m.groups != 1 or m.padding_mode != "zeros" or isinstance(m.padding, str) or m.transposed
            ):
                raise DPError("fused DP-SGD runs plain convolutions only (groups 1, numeric zero padding)")
        if not self.layers or not isinstance(self.layers[-1], nn.Linear):
            raise DPError("fused DP-SGD expects the last layer to be Linear (logits)")
        for i, m in enumerate(self.layers):
            if type(m).__name__ == "AppendOne":
                nxt = self.layers[i + 1] if i + 1 < len(self.layers) else None
                if not isinstance(nxt, nn.Linear) or nxt.bias is not None:
                    raise DPError(
                        "fused DP-SGD expects AppendOne before a bias-free Linear layer (it carries the bias)"
                    )
        self.params = [p for m in self.layers for p in m.parameters(recurse=False)]
        self.n_params = sum(p.numel() for p in self.params)
        # the lowest layer with weights: nothing below it needs a backprop
        self.lowest = min(i for i, m in enumerate(self.layers) if isinstance(m, (nn.Linear, nn.Conv2d)))
        # (kind, module) per layer; "lin1" is a Linear after AppendOne: going down it skips its bias column
        self.plan = []
        for i, m in enumerate(self.layers):
            kind = type(m).__name__
            if kind == "Linear" and i and type(self.layers[i - 1]).__name__ == "AppendOne":
                kind = "lin1"
            self.plan.append((kind, m))
        # each weight's slice of the step's noise vector, in the order of self.params: (layer, kind, param, start, end)
        self._grads, offset = [], 0
        for i, (kind, m) in enumerate(self.plan):
            for p in m.parameters(recurse=False):
                self._grads.append((i, kind, p, p is m.weight, offset, offset + p.numel()))
                offset += p.numel()
        # each lin1 weight without its bias column, as views made once: the optimiser updates the weights in place
        self._no_bias = {i: m.weight[:, :-1] for i, (kind, m) in enumerate(self.plan) if kind == "lin1"}
        self._ones = None  # a column of minus ones, made on the first step (see _minus_one)
        self.clip, self.sigma, self.ebs, self.gen = float(clip), float(noise_multiplier), expected_batch_size, generator
        #: called with the noise added to the clipped sum each step (the accounting check's witness), or None
        self.on_noise = on_noise

    def _minus_one(self, n: int, like):
        """A column of ``n`` minus ones (the one-hot label's subtraction), kept between steps."""
        col = self._ones
        if col is None or col.shape[0] < n or col.dtype != like.dtype or col.device != like.device:
            col = self._ones = -like.new_ones((max(n, 2 * self.ebs), 1))
        return col[:n]

    def _weight_no_bias(self, i: int, w):
        """Layer ``i``'s weight without its bias column (the view kept, remade if the weight was replaced)."""
        v = self._no_bias[i]
        if v.data_ptr() != w.data_ptr():
            v = self._no_bias[i] = w[:, :-1]
        return v

    def _per_sample(self, ins, top, yb):
        """The batch's summed loss, each weighted layer's per-sample pieces, and the per-sample squared
        gradient norms over all layers (see the class docstring)."""
        # lazy: torch takes ~2 s to import
        import torch
        import torch.nn.functional as F

        aten = torch.ops.aten
        n = len(yb)
        logp = F.log_softmax(top, dim=1)
        loss = F.nll_loss(logp, yb, reduction="sum")
        # d(sum of per-sample losses)/d logits, row i = sample i: softmax minus the one-hot label
        g = logp.exp_().scatter_add_(1, yb[:, None], self._minus_one(n, logp))
        pieces, norms_sq = {}, None
        for i in range(len(self.plan) - 1, self.lowest - 1, -1):
            kind, m = self.plan[i]
            a = ins[i]
            if kind in ("Linear", "lin1"):
                t = torch.linalg.vecdot(g, g) * (
                    torch.linalg.vecdot(a, a) + 1.0 if m.bias is not None else torch.linalg.vecdot(a, a)
                )
                pieces[i] = (g, a)
                if i > self.lowest:
                    g = g @ (self._weight_no_bias(i, m.weight) if kind == "lin1" else m.weight)
            elif kind == "Conv2d":
                U = F.unfold(a, m.kernel_size, m.dilation, m.padding, m.stride)  # (n, C·kh·kw, positions)
                gf = g.reshape(n, m.out_channels, -1)
                G = torch.bmm(gf, U.transpose(1, 2)).view(n, -1)  # row i: sample i's weight gradient
                t = torch.linalg.vecdot(G, G)
                gb = None
                if m.bias is not None:
                    gb = gf.sum(2)
                    t = t + torch.linalg.vecdot(gb, gb)
                pieces[i] = (G, gb)
                if i > self.lowest:
                    mask = (True, False, False)
                    g = aten.convolution_backward(
                        g, a, m.weight, None, m.stride, m.padding, m.dilation, False, [0, 0], 1, mask
                    )[0]
            else:
                if kind == "ReLU":
                    g = aten.threshold_backward(g, a, 0)
                elif kind == "Tanh":
                    g = aten.tanh_backward(g, ins[i + 1])
                elif kind == "AvgPool2d":
                    g = aten.avg_pool2d_backward(
                        g, a, m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad, m.divisor_override
                    )
                elif kind in ("Flatten", "Unflatten"):
                    g = g.reshape(a.shape)
                # AppendOne: the lin1 above already left its column out
                continue
            norms_sq = t if norms_sq is None else norms_sq + t
        return loss, pieces, norms_sq

    def backward(self, xb, yb):
        """Set ``p.grad`` of every weight to the clipped, noised, averaged gradient; return the batch's
        mean loss (not DP: for the loss curve)."""
        # lazy: torch takes ~2 s to import
        import torch
        import torch.nn.functional as F

        with torch.no_grad():
            ins, h = [], xb  # each layer's input
            for kind, m in self.plan:
                ins.append(h)
                if kind in ("Linear", "lin1"):
                    h = F.linear(h, m.weight, m.bias)
                elif kind == "ReLU":
                    h = F.relu(h)
                elif kind == "AppendOne":
                    h = F.pad(h, (0, 1), value=1.0)
                else:
                    h = m.forward(h)  # the module's own forward (no hooks are ever attached here)
            ins.append(h)
            n = len(yb)
            std = self.sigma * self.clip
            noise = torch.randn(self.n_params, generator=self.gen, device=self.gen.device) if std > 0 else None
            if noise is not None and self.on_noise is not None:
                self.on_noise(noise * std)
            if n:
                loss, pieces, norms_sq = self._per_sample(ins, h, yb)
                # Opacus's flat clipping, min(1, C / (‖grad_i‖ + 1e-6))
                factor = (self.clip / (norms_sq.sqrt_() + 1e-6)).clamp_(max=1.0)
            else:
                loss, pieces = torch.zeros((), device=xb.device), {}
            beta, alpha = std / self.ebs, 1.0 / self.ebs
            for i, kind, p, is_weight, start, end in self._grads:
                base = noise[start:end].view_as(p) if noise is not None else torch.zeros_like(p)
                if not n:  # empty Poisson batch: the update is noise only
                    p.grad = base * beta
                elif kind == "Conv2d":  # (σC·z + Σ_i c_i G_i) / expected batch size
                    rows = pieces[i][0] if is_weight else pieces[i][1]
                    p.grad = torch.addmv(base.reshape(-1), rows.T, factor, beta=beta, alpha=alpha).view_as(p)
                elif is_weight:  # (σC·z + Σ_i c_i g_i a_iᵀ) / expected batch size, in one fused op
                    g, a = pieces[i]
                    p.grad = torch.addmm(base, (g * factor[:, None]).T, a, beta=beta, alpha=alpha)
                else:  # a Linear bias: Σ_i c_i g_i
                    p.grad = torch.addmv(base, pieces[i][0].T, factor, beta=beta, alpha=alpha)
        return loss / max(n, 1)
