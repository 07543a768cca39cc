"""Flax networks of dacm and their hyper-parameters (the paper's Fig. 3 by default)."""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax.numpy as jnp


class MLP(nn.Module):
    """Feed-forward network: Dense → ReLU → Dropout per hidden layer, linear output."""

    hidden: tuple[int, ...]
    out: int
    dropout: float = 0.0

    @nn.compact
    def __call__(self, x, deterministic: bool = True):
        for h in self.hidden:
            x = nn.relu(nn.Dense(h)(x))
            if self.dropout > 0:
                x = nn.Dropout(self.dropout, deterministic=deterministic)(x)
        return nn.Dense(self.out)(x)


@dataclasses.dataclass(frozen=True)
class NetConfig:
    hidden: tuple[int, ...]
    epochs: int
    dropout: float
    lr: float = 1e-3
    batch: int = 256


@dataclasses.dataclass(frozen=True)
class HyperParams:
    """Fig. 3 of the paper: classifier 256-180-80, 100 epochs, dropout 10 %; regressor
    512-360-180 (box, 2D box) or 640-480-240 (pentagon), 1000 epochs, dropout 5 %; PDD the
    regressor's architecture. Adam (optax), batch 256, lr 1e-3 (not stated in the paper)."""

    classifier: NetConfig = NetConfig((256, 180, 80), 100, 0.10)
    regressor: NetConfig = NetConfig((512, 360, 180), 1000, 0.05)
    pdd: NetConfig = NetConfig((512, 360, 180), 1000, 0.05)

    @staticmethod
    def paper(shape: str) -> "HyperParams":
        if shape == "pentagon":
            reg = NetConfig((640, 480, 240), 1000, 0.05)
            return HyperParams(regressor=reg, pdd=reg)
        return HyperParams()

    def scaled(self, clf_epochs=None, reg_epochs=None, hidden_scale: float | None = None) -> "HyperParams":
        """A copy with fewer epochs / narrower layers (for budgets smaller than the paper's)."""

        def f(c: NetConfig, ep):
            hid = c.hidden if hidden_scale is None else tuple(max(4, int(round(h * hidden_scale))) for h in c.hidden)
            return dataclasses.replace(c, hidden=hid, epochs=c.epochs if ep is None else int(ep))

        return HyperParams(f(self.classifier, clf_epochs), f(self.regressor, reg_epochs), f(self.pdd, reg_epochs))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: dict) -> "HyperParams":
        mk = lambda c: NetConfig(tuple(c["hidden"]), int(c["epochs"]), float(c["dropout"]), float(c["lr"]), int(c["batch"]))
        return HyperParams(mk(d["classifier"]), mk(d["regressor"]), mk(d["pdd"]))


def apply(hidden, out, variables, x):
    """Deterministic forward pass (float32 networks; the result is cast to x's dtype)."""
    y = MLP(tuple(hidden), out).apply(variables, x.astype(jnp.float32))
    return y.astype(x.dtype)
