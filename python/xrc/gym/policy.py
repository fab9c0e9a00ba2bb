"""Policies for the environment and a way to report on one as on any
scheme: :func:`run_policy` runs an episode of a scenario with a policy as
the flow's congestion control and returns the :class:`xrc.Run` that
``xrc.run`` returns for a built-in scheme, and :class:`PolicyDriver` runs
it under ``xrc run --policy`` into a run directory (``docs/gym.md``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .env import OBS_FIELDS, CongestionControlEnv


#: The environment's settings a saved policy may carry (what it was trained
#: with, and so what it must be run with).
POLICY_ENV_KEYS = ("step_ms", "history", "action", "action_scale", "initial_rate_mbps", "min_rate_mbps",
                   "max_rate_mbps", "initial_cwnd", "max_cwnd", "cwnd_gain")


class LinearPolicy:
    """``action = tanh(W · obs / norm + b)``: a linear policy on the
    environment's observation (its last ``len(W)`` rows, each column
    divided by `norm`), for the multiplicative actions (``rate_ratio``,
    ``cwnd_ratio``: the action space is [-1, 1]). NumPy only. `env` holds
    the environment's settings it was trained with (:data:`POLICY_ENV_KEYS`),
    saved with it, so that ``xrc run --policy`` runs it as it learned."""

    def __init__(self, weights: np.ndarray, bias: float = 0.0, norm: np.ndarray | None = None,
                 env: Mapping[str, Any] | None = None):
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
        self.env = dict(env or {})
        unknown = sorted(set(self.env) - set(POLICY_ENV_KEYS))
        if unknown:
            raise ValueError(f"env: unknown setting {unknown[0]!r}; a policy carries {', '.join(POLICY_ENV_KEYS)}")
        if self.env.get("action", "rate_ratio") not in ("rate_ratio", "cwnd_ratio"):
            raise ValueError(f"env.action: a linear policy's actions are in [-1, 1], for rate_ratio or "
                             f"cwnd_ratio, not {self.env['action']!r}")
        if self.env.get("history", self.history) < self.history:
            raise ValueError(f"env.history: the policy reads {self.history} rows, more than the "
                             f"{self.env['history']} the environment keeps")

    @property
    def history(self) -> int:
        return self.weights.shape[0]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float64)[-self.history:] / self.norm
        return np.array([np.tanh(float(np.sum(self.weights * x)) + self.bias)], dtype=np.float32)

    def save(self, path: str | Path) -> None:
        """Writes the policy to a NumPy ``.npz`` file (`path` as given)."""
        with open(path, "wb") as f:
            np.savez(f, weights=self.weights, bias=self.bias, norm=self.norm, env=json.dumps(self.env))

    @classmethod
    def load(cls, path: str | Path) -> "LinearPolicy":
        """The policy :meth:`save` wrote; a file that is not one raises
        ValueError naming it."""
        try:
            with np.load(path, allow_pickle=False) as z:
                return cls(z["weights"], float(z["bias"]), z["norm"], json.loads(str(z["env"])))
        except (OSError, KeyError, ValueError, TypeError, json.JSONDecodeError) as e:
            raise ValueError(f"policy {str(path)!r}: not a saved LinearPolicy ({e})") from None


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


class PolicyDriver:
    """A policy driving flow `flow` of a scenario, with the interface of the
    core's ``Simulation`` that a run streamed to a directory uses
    (``run_until``, ``rows_held``, ``drain``, ``finish``, ``now_s``,
    ``end_s``): ``xrc run --policy`` writes its run directory as for any
    scheme. Decisions follow the environment's steps; once the flow has
    ended (a finite transfer) the rest of the scenario runs without them.
    :attr:`scenario` is the scenario as it runs (the flow's ``cc`` is
    ``external``)."""

    def __init__(self, policy: Callable[[np.ndarray], Any], scenario, flow: int = 0, **env_kwargs: Any):
        from ..scenario import Scenario

        self.policy = policy
        self.env = CongestionControlEnv(scenario, flow, record=True, vary_seed=False, **env_kwargs)
        given = scenario if isinstance(scenario, Scenario) else None
        self.scenario = Scenario(path=given.path if given else None,
                                 source_text=given.source_text if given else json.dumps(self.env._base),
                                 overrides=[*(given.overrides if given else []), f"flows.{flow}.cc=external"],
                                 resolved=self.env._base, inputs=dict(self.env._inputs))
        self._obs, _ = self.env.reset()
        self._sim = self.env.simulation
        self._deciding = True

    @property
    def end_s(self) -> float:
        return self._sim.end_s

    @property
    def now_s(self) -> float:
        return self._sim.now_s

    @property
    def rows_held(self) -> int:
        return self._sim.rows_held

    def run_until(self, t_s: float, max_rows: int | None = None) -> bool:
        """Steps the policy until simulated time `t_s`, the end, or
        `max_rows` rows held; returns whether the run is over."""
        sim = self._sim
        while not sim.done and sim.now_s < t_s and (max_rows is None or sim.rows_held < max_rows):
            if not self._deciding:
                sim.run_until(t_s)
                break
            self._obs, _, term, trunc, _ = self.env.step(self.policy(self._obs))
            self._deciding = not (term or trunc)
        return sim.done

    def drain(self):
        return self._sim.drain()

    def finish(self):
        return self._sim.finish()
