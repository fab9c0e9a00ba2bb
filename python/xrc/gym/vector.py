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
from .env import _F, _OBS_HIGH, _OBS_LOW, OBS_FIELDS, RTT_STEP_BEFORE_SAMPLES_S, RTT_STEP_MIN_S, CongestionControlEnv

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
        self._last_rtt = np.zeros(n)
        self._rtt = np.full(n, np.nan)
        self._now = np.zeros(n)
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
        self._last_rtt[i] = env._last_rtt_ms
        self._rtt[i] = env._rtt_s
        self._now[i] = env._now_s
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
        m = self._metrics(rows, idx, ns)
        n = self.num_envs
        rewards = np.zeros(n)
        if e.reward_fn is None:
            w = e.reward_weights
            rewards[idx] = (w["throughput"] * m[:, 0] - w["delay"] * m[:, 2] - w["loss"] * m[:, 7])
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
        now[idx] = rows[:, _F["now_s"]]
        xrc = np.zeros(n, dtype=bool)
        xrc[idx] = ~np.isnan(rows[:, _F["xrc_rate_bps"]])
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

    def _metrics(self, rows: np.ndarray, idx: np.ndarray, ns: np.ndarray) -> np.ndarray:
        """The observation's columns (float64) of each stepped
        sub-environment, its history shifted and the new row written, as
        ``CongestionControlEnv._record`` does one at a time."""
        e = self._e
        c = lambda name: rows[:, _F[name]]   # noqa: E731
        now = c("now_s")
        dt = np.where(c("done") != 0.0, now - self._now[idx], ns * 1e-9)
        dt = np.where(dt > 0, dt, ns * 1e-9)
        self._now[idx] = now
        srtt = c("srtt_s")
        self._rtt[idx] = np.where(np.isnan(srtt), c("min_rtt_s"), srtt)
        sent, acked, lost = c("sent"), c("acked"), c("lost")
        rtt, srtt = c("rtt_mean_s"), c("srtt_s")
        rtt_ms = np.where(np.isnan(rtt), np.where(np.isnan(srtt), self._last_rtt[idx], srtt * 1e3), rtt * 1e3)
        self._last_rtt[idx] = rtt_ms
        mr = c("min_rtt_s")
        min_rtt_ms = np.where(np.isnan(mr), 0.0, mr * 1e3)
        grad = np.where(c("rtt_samples") >= 2, (c("rtt_last_s") - c("rtt_first_s")) / dt, 0.0)
        m = np.empty((len(idx), len(OBS_FIELDS)))
        m[:, 0] = c("delivered_bytes") * 8e-6 / dt
        m[:, 1] = sent * e._mss * 8e-6 / dt
        m[:, 2] = rtt_ms
        m[:, 3] = min_rtt_ms
        m[:, 4] = np.divide(rtt_ms, min_rtt_ms, out=np.ones(len(idx)), where=min_rtt_ms > 0)
        m[:, 5] = grad
        ratio = np.divide(sent, acked, out=np.where(sent == 0, 1.0, sent), where=acked > 0)
        m[:, 6] = np.minimum(ratio, 1e9)
        m[:, 7] = np.divide(lost, lost + acked, out=np.zeros(len(idx)), where=lost + acked > 0)
        m[:, 8] = c("in_flight")
        m[:, 9] = c("cwnd")
        for j, name, scale in ((10, "pacing_rate_bps", 1e-6), (11, "xrc_rate_bps", 1e-6), (12, "xrc_hol_s", 1e3)):
            x = c(name)
            m[:, j] = np.where(np.isnan(x), 0.0, x * scale)
        obs = self._obs
        hist = obs[idx]
        hist[:, :-1] = hist[:, 1:]
        last = m.astype(np.float32)
        np.maximum(last, _OBS_LOW, out=last)
        np.minimum(last, _OBS_HIGH, out=last)
        hist[:, -1] = last
        obs[idx] = hist
        return m


def _batch(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The sub-environments' infos as Gymnasium's vector infos: one array per
    key, with the ``_key`` mask (every sub-environment reports every key)."""
    mask = np.ones(len(infos), dtype=bool)
    out: dict[str, Any] = {}
    for k in infos[0]:
        out[k] = np.array([d[k] for d in infos])
        out["_" + k] = mask
    return out
