"""Many environments stepped in one call into the core: the simulations
run without the GIL, on up to `threads` threads (``docs/gym.md``)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .. import _core
from .env import CongestionControlEnv


class CongestionControlVectorEnv(VectorEnv):
    """`num_envs` copies of :class:`CongestionControlEnv` (the same
    arguments), each with its own simulation and generator, stepped
    together: the actions are checked and applied in Python, then every
    simulation runs to its next decision point in one call into the core
    (``_core.step_many``) on `threads` threads (default: the cores this
    process may use).

    Sub-environment ``i`` is seeded with ``seed + i`` (``reset(seed=s)``);
    without a seed ever given, with the scenario's master seed ``+ i``.
    An episode that ends is reset at the next step, whose action it
    ignores (Gymnasium's ``AutoresetMode.NEXT_STEP``).
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 2, *, threads: int | None = None, **env_kwargs: Any):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or not 1 <= num_envs <= 100_000:
            raise ValueError(f"num_envs: must be an integer from 1 to 100000, not {num_envs!r}")
        if threads is None:
            threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
            raise ValueError(f"threads: must be a positive integer, not {threads!r}")
        self.num_envs = int(num_envs)
        self.threads = int(threads)
        self.envs = [CongestionControlEnv(**env_kwargs) for _ in range(self.num_envs)]
        e = self.envs[0]
        self.single_observation_space = e.observation_space
        self.single_action_space = e.action_space
        self.observation_space = batch_space(e.observation_space, self.num_envs)
        self.action_space = batch_space(e.action_space, self.num_envs)
        self._interval_ns = e._interval_ns
        self._needs_reset = np.zeros(self.num_envs, dtype=bool)
        self._started = False

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        if seed is None:
            seeds = [None] * self.num_envs
            if not self._started:
                seeds = [int(env._base["seed"]) + i for i, env in enumerate(self.envs)]
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed: one per environment ({self.num_envs}), not {len(seeds)}")
        self._started = True
        obs = np.empty(self.observation_space.shape, dtype=np.float32)
        infos = []
        for i, (env, s) in enumerate(zip(self.envs, seeds)):
            obs[i], info = env.reset(seed=s, options=options)
            infos.append(info)
        self._needs_reset[:] = False
        return obs, _batch(infos)

    def step(self, actions):
        a = np.asarray(actions)
        want = (self.num_envs, *self.single_action_space.shape)
        if a.shape != want:
            raise ValueError(f"actions: must have shape {want}, not {a.shape}")
        stepping, rates, cwnds = [], [], []
        for i, env in enumerate(self.envs):
            if self._needs_reset[i]:
                continue
            try:
                r, w = env._before(a[i])
            except ValueError as e:
                raise ValueError(f"actions[{i}]: {e}") from None
            stepping.append(i)
            rates.append(r)
            cwnds.append(w)
        rows = _core.step_many([self.envs[i]._sim for i in stepping], self._interval_ns, rates, cwnds, self.threads)
        obs = np.empty(self.observation_space.shape, dtype=np.float32)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        for i, row in zip(stepping, rows):
            obs[i], rewards[i], terminated[i], truncated[i], infos[i] = self.envs[i]._after(row)
        if self._needs_reset.any():
            for i in np.flatnonzero(self._needs_reset):
                obs[i], infos[i] = self.envs[i].reset()
        self._needs_reset = terminated | truncated
        return obs, rewards, terminated, truncated, _batch(infos)


def _batch(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The sub-environments' infos as Gymnasium's vector infos: one array per
    key, with the ``_key`` mask (every sub-environment reports every key)."""
    mask = np.ones(len(infos), dtype=bool)
    keys = list(infos[0])
    numbers = [k for k in keys if k not in ("seed", "has_xrc_agent")]
    table = np.array([[d[k] for k in numbers] for d in infos], dtype=np.float64)
    out: dict[str, Any] = {}
    for j, k in enumerate(numbers):
        out[k] = table[:, j]
        out["_" + k] = mask
    out["seed"] = np.array([d["seed"] for d in infos], dtype=np.int64)
    out["has_xrc_agent"] = np.array([d["has_xrc_agent"] for d in infos], dtype=bool)
    out["_seed"] = out["_has_xrc_agent"] = mask
    return out
