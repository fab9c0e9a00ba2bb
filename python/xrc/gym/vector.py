"""Many environments stepped in one call into the core: the simulations
run without the GIL on up to `threads` threads, and the actions,
observations and rewards are computed for all of them at once with NumPy
(``docs/gym.md``)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .. import _core
from .env import _F, _OBS_HIGH, _OBS_LEN, _OBS_LOW, _SRTT, OBS_FIELDS, RTT_STEP_BEFORE_SAMPLES_S, RTT_STEP_MIN_S, \
    CongestionControlEnv

_NUMBERS = len(_core.Controlled.FIELDS)


class CongestionControlVectorEnv(VectorEnv):
    """`num_envs` copies of :class:`CongestionControlEnv` (the same
    arguments), each with its own simulation and generator, stepped
    together: every simulation runs to its next decision point in one call
    into the core (``_core.step_many``) on `threads` threads (default: the
    cores this process may use), and the rest is array arithmetic over all
    of them. Sub-environment ``i`` gives exactly the trajectory the single
    environment gives with the same seed and actions.

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
        self.num_envs = n = int(num_envs)
        self.threads = int(threads)
        # One environment per simulation, for its generator and its resets;
        # the stepping state is kept here, in arrays.
        self._envs = [CongestionControlEnv(**env_kwargs) for _ in range(n)]
        e = self._envs[0]
        self.single_observation_space = e.observation_space
        self.single_action_space = e.action_space
        self.observation_space = batch_space(e.observation_space, n)
        self.action_space = batch_space(e.action_space, n)
        self._e = e
        self._sims: list[Any] = [None] * n
        self._obs = np.zeros((n, e.history, len(OBS_FIELDS)), dtype=np.float32)
        self._rate = np.zeros(n)
        self._cwnd = np.zeros(n)
        self._rtt = np.full(n, np.nan)
        self._seeds = np.zeros(n, dtype=np.int64)
        self._needs_reset = np.zeros(n, dtype=bool)
        self._started = False

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        if seed is None:
            seeds = [None] * self.num_envs
            if not self._started:
                seeds = [int(env._base["seed"]) + i for i, env in enumerate(self._envs)]
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed: one per environment ({self.num_envs}), not {len(seeds)}")
        self._started = True
        infos = []
        for i, s in enumerate(seeds):
            infos.append(self._reset_one(i, s, options))
        self._needs_reset[:] = False
        return self._obs.copy(), _batch(infos)

    def _reset_one(self, i: int, seed: int | None, options=None) -> dict[str, Any]:
        env = self._envs[i]
        _, info = env.reset(seed=seed, options=options)
        self._sims[i] = env._sim
        self._obs[i] = env._obs
        self._rate[i] = env._rate_mbps
        self._cwnd[i] = env._cwnd
        self._rtt[i] = env._rtt_s
        self._seeds[i] = env._episode_seed
        return info

    # ----- the actions -----

    def _actions(self, actions, idx: np.ndarray) -> tuple[list, list]:
        """Checks the actions of the sub-environments `idx` and applies them:
        their setpoints. A bad one raises ValueError naming its index."""
        e = self._e
        want = (self.num_envs, *self.single_action_space.shape)
        try:
            a = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"actions: must be numbers of shape {want}, not {actions!r}") from None
        if a.shape != want:
            raise ValueError(f"actions: must have shape {want}, not {a.shape}")
        a = a[:, 0]
        v = a[idx]
        bad = ~((v >= e._low) & (v <= e._high))      # NaN too
        if bad.any():
            j = int(idx[np.flatnonzero(bad)[0]])
            x = float(a[j])
            raise ValueError(f"actions[{j}]: action: {x!r} is outside the action space [{e._low:g}, {e._high:g}]"
                             + (" (not a finite number)" if not np.isfinite(x) else ""))
        mode = e.action_mode
        k = e.action_scale * v
        if mode == "rate_ratio" or mode == "cwnd_ratio":
            cur = self._rate if mode == "rate_ratio" else self._cwnd
            lo, hi = (e.min_rate_mbps, e.max_rate_mbps) if mode == "rate_ratio" else (1.0, float(e.max_cwnd))
            old = cur[idx]
            up = np.where(v >= 0, old * (1.0 + k), old / (1.0 - k))
            cur[idx] = np.minimum(np.maximum(up, lo), hi)
        elif mode == "rate":
            self._rate[idx] = v
        else:
            self._cwnd[idx] = v
        if mode in ("rate_ratio", "rate"):
            return (self._rate[idx] * 1e6).tolist(), [None] * len(idx)
        return [None] * len(idx), np.round(self._cwnd[idx]).tolist()

    # ----- one step of all -----

    def step(self, actions):
        idx = np.flatnonzero(~self._needs_reset)
        rates, cwnds = self._actions(actions, idx)
        e = self._e
        if e._per_rtt:
            r = self._rtt[idx]
            ns = np.round(np.where(np.isnan(r), RTT_STEP_BEFORE_SAMPLES_S, np.maximum(r, RTT_STEP_MIN_S)) * 1e9)
            ns = ns.astype(np.int64)
        else:
            ns = np.full(len(idx), e._interval_ns, dtype=np.int64)
        raw = _core.step_many([self._sims[i] for i in idx], ns.tolist(), rates, cwnds, self.threads)
        rows = np.frombuffer(raw, dtype="<f8").reshape(len(idx), _NUMBERS)
        m = rows[:, :_OBS_LEN]
        self._rtt[idx] = rows[:, _SRTT]
        hist = self._obs[idx]
        hist[:, :-1] = hist[:, 1:]
        last = m.astype(np.float32)
        np.maximum(last, _OBS_LOW, out=last)
        np.minimum(last, _OBS_HIGH, out=last)
        hist[:, -1] = last
        self._obs[idx] = hist
        n = self.num_envs
        rewards = np.zeros(n)
        if e.reward_fn is None:
            w = e.reward_weights
            rewards[idx] = (w["throughput"] * m[:, _F["delivery_rate_mbps"]] - w["delay"] * m[:, _F["rtt_ms"]]
                            - w["loss"] * m[:, _F["loss_fraction"]])
        else:
            for j, i in enumerate(idx):
                rewards[i] = float(e.reward_fn(dict(zip(OBS_FIELDS, m[j].tolist()))))
        done = rows[:, _F["done"]] != 0.0
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        terminated[idx] = (rows[:, _F["live"]] == 0.0) & ~done
        truncated[idx] = done
        table = np.zeros((n, len(OBS_FIELDS)))
        table[idx] = m
        now = np.zeros(n)
        now[idx] = rows[:, _F["time_s"]]
        xrc = np.zeros(n, dtype=bool)
        xrc[idx] = rows[:, _F["has_xrc_agent"]] != 0.0
        if self._needs_reset.any():
            for i in np.flatnonzero(self._needs_reset):
                info = self._reset_one(int(i), None)
                table[i] = [info[k] for k in OBS_FIELDS]
                now[i] = info["time_s"]
                xrc[i] = info["has_xrc_agent"]
        self._needs_reset = terminated | truncated
        infos: dict[str, Any] = {k: table[:, j] for j, k in enumerate(OBS_FIELDS)}
        infos.update(time_s=now, seed=self._seeds.copy(), has_xrc_agent=xrc)
        mask = np.ones(n, dtype=bool)
        for k in list(infos):
            infos["_" + k] = mask
        return self._obs.copy(), rewards, terminated, truncated, infos


def _batch(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The sub-environments' infos as Gymnasium's vector infos: one array per
    key, with the ``_key`` mask (every sub-environment reports every key)."""
    mask = np.ones(len(infos), dtype=bool)
    out: dict[str, Any] = {}
    for k in infos[0]:
        out[k] = np.array([d[k] for d in infos])
        out["_" + k] = mask
    return out
