"""The fused DP-SGD step for Linear/ReLU models: per-sample norms without per-sample gradients.

Verified equal to Opacus's clipped, noised gradient (tests/dpcore/training/test_training.py, test_fused_clipped_gradient_equals_opacus); used inside Opacus's
Poisson DPDataLoader and stepped with Opacus's accountant by :mod:`dpcore.training.loop`.
"""

from __future__ import annotations

from ..errors import DPError


class FusedDPSGD:
    """DP-SGD for a ``Sequential`` of AppendOne / bias-free Linear / ReLU layers, in one pass.

    Per step: forward keeping each Linear layer's input ``a`` and output ``z``; one ``autograd.grad`` of
    the *summed* loss w.r.t. the outputs gives the per-sample backprops ``g`` (row i is sample i's).
    A Linear layer's per-sample gradient is ``g_i a_iᵀ``, so its squared norm is ``|g_i|²·|a_i|²``
    (exact, no per-sample gradient is materialised). Clip factors as Opacus:
    ``min(1, C / (‖grad_i‖ + 1e-6))`` over all layers (flat clipping); the clipped sum is ``(c·g)ᵀ a``;
    noise ``N(0, σ²C²)`` from the run's generator; division by Opacus's expected batch size.
    """

    def __init__(self, model, clip: float, noise_multiplier: float, expected_batch_size: int, generator, on_noise=None):
        # lazy: torch takes ~2 s to import
        import torch.nn as nn

        self.layers = list(model)
        self.linears = [m for m in self.layers if isinstance(m, nn.Linear)]
        for m in self.layers:
            if not (isinstance(m, (nn.Linear, nn.ReLU)) or type(m).__name__ == "AppendOne"):
                raise DPError(f"fused DP-SGD supports Linear/ReLU models only, not {type(m).__name__}")
        if any(m.bias is not None for m in self.linears):
            raise DPError("fused DP-SGD needs bias-free Linear layers (the bias rides on an AppendOne input)")
        for a, b in zip(self.layers, self.layers[1:]):
            if isinstance(a, nn.Linear) and not isinstance(b, nn.ReLU) and b is not self.layers[-1]:
                raise DPError("fused DP-SGD expects Linear layers followed by ReLU (or the output)")
        if not isinstance(self.layers[-1], nn.Linear):
            raise DPError("fused DP-SGD expects the last layer to be Linear (logits)")
        self.plan = [
            ("lin", m.weight) if isinstance(m, nn.Linear) else ("relu" if isinstance(m, nn.ReLU) else "one", None)
            for m in self.layers
        ]
        self.n_params = sum(m.weight.numel() for m in self.linears)
        # each weight without its bias column, as views made once: the optimiser updates the weights in place
        self._no_bias = [m.weight[:, :-1] for m in self.linears]
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

    def backward(self, xb, yb):
        """Set ``p.grad`` of every Linear weight to the clipped, noised, averaged gradient; return the
        batch's mean loss (not DP: for the loss curve).

        The per-sample backprops are written out (softmax cross-entropy and ReLU have closed-form
        derivatives), so no autograd graph is built: ``dz_L = softmax(z_L) − onehot(y)``, and going
        down a Linear layer ``W`` (last column = bias) then a ReLU: ``dz = (dz_next · W[:, :-1]) ⊙ [z > 0]``.
        """
        # lazy: torch takes ~2 s to import
        import torch
        import torch.nn.functional as F

        with torch.no_grad():
            acts, pre, h = [], [], xb  # inputs of each Linear layer; inputs of each ReLU
            for kind, w in self.plan:
                if kind == "lin":
                    acts.append(h)
                    h = F.linear(h, w)
                elif kind == "relu":
                    pre.append(h)
                    h = F.relu(h)
                else:  # AppendOne
                    h = F.pad(h, (0, 1), value=1.0)
            n = len(yb)
            std = self.sigma * self.clip
            noise = torch.randn(self.n_params, generator=self.gen, device=self.gen.device) if std > 0 else None
            if noise is not None and self.on_noise is not None:
                self.on_noise(noise * std)
            if n:
                logp = F.log_softmax(h, dim=1)
                loss = F.nll_loss(logp, yb, reduction="sum")
                # d(sum of per-sample losses)/d logits, row i = sample i: softmax minus the one-hot label
                g = logp.exp_().scatter_add_(1, yb[:, None], self._minus_one(n, logp))
                backprops = [None] * len(self.linears)
                for i in range(len(self.linears) - 1, -1, -1):
                    backprops[i] = g
                    if i:  # down through W (its bias column left out) and the ReLU: ReLU's own backward op
                        w = self.linears[i].weight
                        if self._no_bias[i].data_ptr() != w.data_ptr():  # a weight replaced, not updated
                            self._no_bias[i] = w[:, :-1]
                        g = torch.ops.aten.threshold_backward(g @ self._no_bias[i], pre[i - 1], 0)
                norms_sq = None
                for g, a in zip(backprops, acts):  # |g_i a_iᵀ|² = |g_i|² |a_i|²
                    t = torch.linalg.vecdot(g, g) * torch.linalg.vecdot(a, a)
                    norms_sq = t if norms_sq is None else norms_sq + t
                # Opacus's flat clipping, min(1, C / (‖grad_i‖ + 1e-6)), as a column to scale each row of g
                factor = (self.clip / (norms_sq.sqrt_() + 1e-6)).clamp_(max=1.0)[:, None]
            else:
                loss = torch.zeros((), device=xb.device)
            offset = 0
            for i, lin in enumerate(self.linears):
                w = lin.weight
                k = w.numel()
                base = noise[offset : offset + k].view_as(w) if noise is not None else torch.zeros_like(w)
                offset += k
                if n:
                    # grad = (σC·z + Σ_i c_i g_i a_iᵀ) / expected batch size, in one fused op
                    w.grad = torch.addmm(
                        base, (backprops[i] * factor).T, acts[i], beta=std / self.ebs, alpha=1.0 / self.ebs
                    )
                else:  # empty Poisson batch: the update is noise only
                    w.grad = base * (std / self.ebs)
        return loss / max(n, 1)
