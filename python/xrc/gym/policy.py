"""Policies for the environment and a way to report on one as on any
scheme: :func:`run_policy` runs an episode of a scenario with a policy as
the flow's congestion control and returns the :class:`xrc.Run` that
``xrc.run`` returns for a built-in scheme (``docs/gym.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .env import OBS_FIELDS, CongestionControlEnv


class LinearPolicy:
    """``action = clip(tanh(W · features + b) · scale)``: a linear policy on
    the environment's observation (its last `history` rows, each column
    divided by `norm`), for the multiplicative actions (``rate_ratio``,
    ``cwnd_ratio``: the action space is [-1, 1]). NumPy only."""

    def __init__(self, weights: np.ndarray, bias: float = 0.0, norm: np.ndarray | None = None):
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.weights.ndim != 2 or self.weights.shape[1] != len(OBS_FIELDS):
            raise ValueError(f"weights: must have shape (history, {len(OBS_FIELDS)}), not {self.weights.shape}")
        if not np.all(np.isfinite(self.weights)):
            raise ValueError("weights: must be finite numbers")
        self.bias = float(bias)
        if not np.isfinite(self.bias):
            raise ValueError(f"bias: must be a finite number, not {bias!r}")
        self.norm = np.ones(len(OBS_FIELDS)) if norm is None else np.asarray(norm, dtype=np.float64)
        if self.norm.shape != (len(OBS_FIELDS),) or not np.all(self.norm > 0):
            raise ValueError(f"norm: must be {len(OBS_FIELDS)} positive numbers, not {norm!r}")

    @property
    def history(self) -> int:
        return self.weights.shape[0]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float64)[-self.history:] / self.norm
        return np.array([np.tanh(float(np.sum(self.weights * x)) + self.bias)], dtype=np.float32)

    def save(self, path: str | Path) -> None:
        np.savez(path, weights=self.weights, bias=self.bias, norm=self.norm)

    @classmethod
    def load(cls, path: str | Path) -> "LinearPolicy":
        with np.load(path) as z:
            return cls(z["weights"], float(z["bias"]), z["norm"])


def run_policy(policy: Callable[[np.ndarray], Any], scenario: str | Mapping[str, Any] = "paper/fig1-time-varying",
               flow: int = 0, *, seed: int | None = None, **env_kwargs: Any):
    """Runs the scenario with flow `flow` driven by `policy` (observation →
    action) from start to end, with the scenario's own master seed (or
    `seed`), so that every other source of randomness (the channel, HARQ,
    the other flows) is what ``xrc.run(scenario, seed=seed)`` meets with a
    built-in scheme. Returns the :class:`xrc.Run` (tables and summary).
    `env_kwargs` go to :class:`CongestionControlEnv` (the action, the step,
    the history...)."""
    for k in ("record", "vary_seed", "random_start_s"):
        if k in env_kwargs:
            raise ValueError(f"{k}: run_policy runs the scenario as it is written; do not give {k}")
    overrides = dict(env_kwargs.pop("overrides", None) or {})
    if seed is not None:
        overrides["seed"] = seed
    env = CongestionControlEnv(scenario, flow, record=True, vary_seed=False, overrides=overrides, **env_kwargs)
    obs, _ = env.reset()
    while True:
        obs, _, term, trunc, _ = env.step(policy(obs))
        if term or trunc:
            break
    return env.finish_run()
