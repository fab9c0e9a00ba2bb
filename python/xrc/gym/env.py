"""The single environment: one flow of a scenario driven by the agent
(``docs/gym.md`` says what every space, field and weight means)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any, Callable, Mapping

import numpy as np

import gymnasium
from gymnasium import spaces

from .. import _core
from ..scenario import Scenario, ScenarioError, read_input

#: The observation's columns, one row per step of the history (oldest
#: first), as the core computes them (``docs/gym.md`` defines each).
OBS_FIELDS = tuple(_core.Controlled.FIELDS[:_core.Controlled.OBS_LEN])

#: Upper bounds of the observation's columns (the lower bounds are 0 except
#: the latency gradient's, which is the negative of its upper bound).
_OBS_HIGH = np.array([1e5, 1e5, 1e6, 1e6, 1e6, 1e6, 1e9, 1.0, 1e9, 1e9, 1e7, 1e5, 1e6], dtype=np.float32)
_OBS_LOW = np.zeros(len(OBS_FIELDS), dtype=np.float32)
_OBS_LOW[OBS_FIELDS.index("latency_gradient")] = -_OBS_HIGH[OBS_FIELDS.index("latency_gradient")]

ACTIONS = ("rate_ratio", "rate", "cwnd_ratio", "cwnd")

#: Aurora's reward (Jay et al., ICML 2019: 10 · throughput in packets/s −
#: 1000 · latency in s − 2000 · loss rate, scaled by 10^-3), in this
#: environment's units: throughput in Mbit/s (1500-byte packets), RTT in ms.
AURORA_WEIGHTS = {"throughput": 10.0 * 1e6 / (8 * 1500) * 1e-3, "delay": 1e-3, "loss": 2.0}

_F = {name: i for i, name in enumerate(_core.Controlled.FIELDS)}
_OBS_LEN = _core.Controlled.OBS_LEN
_SRTT = _F["srtt_s"]

#: With ``step_ms="rtt"``: the step before any RTT sample, and the shortest.
RTT_STEP_BEFORE_SAMPLES_S = 0.1
RTT_STEP_MIN_S = 0.001


def _number(name: str, value: Any, lo: float, hi: float, *, integer: bool = False) -> float:
    """`value` as a finite number in [lo, hi], or a ValueError naming it."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    v = float(value) if ok else math.nan
    if not (ok and math.isfinite(v) and lo <= v <= hi) or (integer and v != int(v)):
        kind = "an integer" if integer else "a finite number"
        raise ValueError(f"{name}: must be {kind} from {lo:g} to {hi:g}, not {value!r}")
    return v


class CongestionControlEnv(gymnasium.Env):
    """One flow of a scenario (`flow`) whose congestion control is the
    agent: every `step_ms` of simulated time (or once per smoothed RTT,
    ``step_ms="rtt"``) the agent's action sets its rate or window, every
    other flow of the scenario runs as usual.

    See ``docs/gym.md``. Bad arguments raise ValueError naming the argument
    and the value; so do bad actions (NaN, infinite, out of the action
    space, wrong shape).
    """

    metadata = {"render_modes": []}

    def __init__(self, scenario: str | Mapping[str, Any] | Scenario = "paper/fig1-time-varying", flow: int = 0, *,
                 step_ms: float | str = 10.0, history: int = 10, action: str = "rate_ratio", action_scale: float = 0.5,
                 initial_rate_mbps: float = 2.0, min_rate_mbps: float = 0.1, max_rate_mbps: float = 1000.0,
                 initial_cwnd: int = 10, max_cwnd: int = 100_000, cwnd_gain: float = 2.0,
                 reward_weights: Mapping[str, float] | None = None,
                 reward_fn: Callable[[dict[str, float]], float] | None = None,
                 episode_s: float | None = None, random_start_s: float = 0.0, vary_seed: bool = True,
                 overrides: Mapping[str, Any] | None = None, record: bool = False,
                 render_mode: str | None = None):
        super().__init__()
        if render_mode is not None:
            raise ValueError(f"render_mode: this environment draws nothing, not {render_mode!r}")
        if action not in ACTIONS:
            raise ValueError(f"action: must be one of {', '.join(ACTIONS)}, not {action!r}")
        self._per_rtt = isinstance(step_ms, str) and step_ms == "rtt"
        if self._per_rtt:
            self.step_ms = "rtt"
            self._interval_ns = 0
        else:
            if isinstance(step_ms, str):
                raise ValueError(f"step_ms: must be a number of milliseconds or \"rtt\", not {step_ms!r}")
            self.step_ms = _number("step_ms", step_ms, 1e-3, 1e6)
            self._interval_ns = int(round(self.step_ms * 1e6))
        self.history = int(_number("history", history, 1, 10_000, integer=True))
        self.action_mode = action
        self.action_scale = _number("action_scale", action_scale, 1e-6, 1e3)
        self.min_rate_mbps = _number("min_rate_mbps", min_rate_mbps, 1e-3, 1e7)
        self.max_rate_mbps = _number("max_rate_mbps", max_rate_mbps, self.min_rate_mbps, 1e7)
        self.initial_rate_mbps = _number("initial_rate_mbps", initial_rate_mbps, self.min_rate_mbps,
                                         self.max_rate_mbps)
        self.max_cwnd = int(_number("max_cwnd", max_cwnd, 1, 1e9, integer=True))
        self.initial_cwnd = int(_number("initial_cwnd", initial_cwnd, 1, self.max_cwnd, integer=True))
        self.random_start_s = _number("random_start_s", random_start_s, 0.0, 1e9)
        self.vary_seed = bool(vary_seed)
        weights = dict(AURORA_WEIGHTS)
        for k, v in (reward_weights or {}).items():
            if k not in weights:
                raise ValueError(f"reward_weights: unknown weight {k!r}; known: {', '.join(weights)}")
            weights[k] = _number(f"reward_weights.{k}", v, -1e12, 1e12)
        self.reward_weights = weights
        if reward_fn is not None and not callable(reward_fn):
            raise ValueError(f"reward_fn: must be callable, not {reward_fn!r}")
        self.reward_fn = reward_fn

        self.record = bool(record)
        self._base, self._texts, self._inputs = _controlled_scenario(scenario, flow, episode_s, overrides, cwnd_gain,
                                                                     thin=not self.record)
        self.flow = int(flow)
        f = self._base["flows"][flow]
        start_s = f["start_s"]
        duration = self._base["duration_s"]
        if start_s + self.random_start_s >= duration:
            raise ValueError(f"random_start_s: the flow starts at {start_s:g} s and the episode ends at "
                             f"{duration:g} s, so a random start of up to {self.random_start_s:g} s leaves no "
                             f"step; shorten it")
        self._flow_start_s = start_s
        self.scenario_name = self._base["name"]

        if action == "rate_ratio" or action == "cwnd_ratio":
            self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        elif action == "rate":
            self.action_space = spaces.Box(np.float32(self.min_rate_mbps), np.float32(self.max_rate_mbps),
                                           shape=(1,), dtype=np.float32)
        else:
            self.action_space = spaces.Box(np.float32(1.0), np.float32(self.max_cwnd), shape=(1,),
                                           dtype=np.float32)
        self._low = float(self.action_space.low[0])
        self._high = float(self.action_space.high[0])
        self.observation_space = spaces.Box(np.tile(_OBS_LOW, (self.history, 1)),
                                            np.tile(_OBS_HIGH, (self.history, 1)),
                                            shape=(self.history, len(OBS_FIELDS)), dtype=np.float32)
        self._sim = None
        self._obs = np.zeros((self.history, len(OBS_FIELDS)), dtype=np.float32)
        self._rate_mbps = self.initial_rate_mbps
        self._cwnd = self.initial_cwnd
        self._rtt_s = math.nan
        self._m: dict[str, float] = {}
        self._ended = True
        self._episode_seed: int | None = None

    # ----- Gymnasium's interface -----

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        # Without a seed ever given, the first episode is seeded with the
        # scenario's master seed (deterministic by default, not the OS's
        # entropy); later resets without one draw from the same generator.
        if seed is None and self._np_random is None:
            seed = int(self._base["seed"])
        super().reset(seed=seed)
        if options:
            raise ValueError(f"options: this environment takes none, not {options!r}")
        doc = self._base
        if self.vary_seed:
            doc = dict(doc)
            doc["seed"] = int(self.np_random.integers(0, 2**63 - 1))
        self._episode_seed = int(doc["seed"])
        try:
            self._sim = _core.Controlled(json.dumps(doc), self.flow, *self._texts, keep_rows=self.record)
        except ValueError as e:
            raise ValueError(str(e)) from None
        self._rate_mbps = self.initial_rate_mbps
        self._cwnd = self.initial_cwnd
        self._rtt_s = math.nan
        self._obs[:] = 0.0
        self._ended = False
        start = self._flow_start_s
        if self.random_start_s > 0:
            # Before the first decision the flow sends as the congestion
            # control's defaults say (Reno from the initial window).
            start += float(self.np_random.uniform(0.0, self.random_start_s))
        if start > 0:
            self._sim.run_until(start)
        row = self._sim.step(self._next_interval_ns(), *self._setpoint())
        self._record(row)
        return self._obs.copy(), self._info(row)

    def step(self, action):
        rate_bps, cwnd = self._before(action)
        return self._after(self._sim.step(self._next_interval_ns(), rate_bps, cwnd))

    def _next_interval_ns(self) -> int:
        """The next step's length: `step_ms`, or the flow's smoothed RTT (its
        least RTT before a smoothed one, 100 ms before any), at least 1 ms."""
        if not self._per_rtt:
            return self._interval_ns
        r = self._rtt_s
        s = RTT_STEP_BEFORE_SAMPLES_S if r != r else max(r, RTT_STEP_MIN_S)
        return int(round(s * 1e9))

    def _before(self, action) -> tuple[float | None, float | None]:
        """Checks and applies the action: the setpoint to step with."""
        if self._ended:
            raise gymnasium.error.ResetNeeded("step: call reset() before the first step and after an episode ends")
        self._apply(action)
        return self._setpoint()

    def _after(self, row: list[float]):
        """The step's observation, reward, ends and info from what the core
        returned (``_core.Controlled.FIELDS``)."""
        m = self._record(row)
        reward = float(self.reward_fn(m) if self.reward_fn is not None else
                       self.reward_weights["throughput"] * m["delivery_rate_mbps"]
                       - self.reward_weights["delay"] * m["rtt_ms"]
                       - self.reward_weights["loss"] * m["loss_fraction"])
        done = row[_F["done"]] != 0.0
        # The flow ended before the scenario did (a finite transfer).
        terminated = row[_F["live"]] == 0.0 and not done
        truncated = done
        self._ended = terminated or truncated
        return self._obs.copy(), reward, terminated, truncated, self._info(row)

    # ----- the action -----

    def _apply(self, action) -> None:
        a = action
        if isinstance(a, np.ndarray):
            if a.shape != (1,):
                raise ValueError(f"action: must have shape (1,), not {a.shape}")
            a = a[0]
        elif isinstance(a, (list, tuple)):
            if len(a) != 1:
                raise ValueError(f"action: must hold one number, not {len(a)}: {action!r}")
            a = a[0]
        if not isinstance(a, (int, float, np.integer, np.floating)) or isinstance(a, bool):
            raise ValueError(f"action: must be a number (an array of shape (1,)), not {action!r}")
        v = float(a)
        if not (self._low <= v <= self._high):   # False for NaN too
            raise ValueError(f"action: {v!r} is outside the action space [{self._low:g}, {self._high:g}]"
                             + (" (not a finite number)" if not math.isfinite(v) else ""))
        mode = self.action_mode
        if mode == "rate_ratio":
            k = self.action_scale * v
            r = self._rate_mbps * (1.0 + k) if v >= 0 else self._rate_mbps / (1.0 - k)
            self._rate_mbps = min(max(r, self.min_rate_mbps), self.max_rate_mbps)
        elif mode == "rate":
            self._rate_mbps = v
        elif mode == "cwnd_ratio":
            k = self.action_scale * v
            w = self._cwnd * (1.0 + k) if v >= 0 else self._cwnd / (1.0 - k)
            self._cwnd = min(max(w, 1.0), float(self.max_cwnd))
        else:
            self._cwnd = v

    def _setpoint(self) -> tuple[float | None, float | None]:
        if self.action_mode in ("rate_ratio", "rate"):
            return self._rate_mbps * 1e6, None
        return None, float(round(self._cwnd))

    # ----- the observation -----

    def _record(self, row: list[float]) -> dict[str, float]:
        """Shifts the history and writes the step's row (as float32, within
        the observation space); returns the step's columns as floats."""
        n = _OBS_LEN
        self._rtt_s = row[_SRTT]
        obs = self._obs
        obs[:-1] = obs[1:]
        last = obs[-1]
        last[:] = row[:n]
        np.maximum(last, _OBS_LOW, out=last)
        np.minimum(last, _OBS_HIGH, out=last)
        self._m = m = dict(zip(OBS_FIELDS, row[:n]))
        return m

    def _info(self, row: list[float]) -> dict[str, Any]:
        info = dict(self._m)
        info["time_s"] = row[_F["time_s"]]
        info["seed"] = self._episode_seed
        info["has_xrc_agent"] = row[_F["has_xrc_agent"]] != 0.0
        return info

    # ----- inspection -----

    @property
    def simulation(self):
        """The core's controlled simulation of this episode (``None``
        before the first reset)."""
        return self._sim

    def finish_run(self):
        """The episode as an :class:`xrc.Run` (the tables and summary
        ``xrc.run`` gives), for an environment built with ``record=True``;
        ends the episode (``reset`` starts another)."""
        if not self.record:
            raise ValueError("record: finish_run reports on a recorded episode; build the environment with "
                             "record=True")
        if self._sim is None:
            raise gymnasium.error.ResetNeeded("finish_run: call reset() and step through an episode first")
        from ..api import Run
        from ..results import columns_to_arrays, summarize
        from ..runner import exact_seconds, metadata

        raw = self._sim.finish()
        self._sim = None
        self._ended = True
        tables = columns_to_arrays(raw["tables"])
        names = np.array(list(raw["mode_names"]) or [""], dtype=object)
        cw = tables["cwnd"]
        cw["mode"] = names[cw["mode"].astype(np.int64)].astype(str) if cw["mode"].size else np.array([], dtype=str)
        doc = dict(self._base, seed=self._episode_seed)
        summary = summarize(doc, tables, events=int(raw["events"]), sim_time_s=exact_seconds(raw["sim_time_s"]),
                            wall_time_s=0.0)
        sc = Scenario(path=None, source_text=json.dumps(doc), overrides=[], resolved=doc, inputs=self._inputs)
        return Run(scenario=doc, summary=summary, metadata=metadata(sc, None), arrays=tables)


def _controlled_scenario(scenario, flow, episode_s, overrides, cwnd_gain, *,
                         thin: bool = True) -> tuple[dict[str, Any], list, dict[str, str]]:
    """The resolved scenario with flow `flow` driven from outside (and, with
    `thin`, the tables the environment does not read thinned), its trace
    texts and its input files."""
    from ..api import _plain, _scenario, overrides_from_kwargs

    if isinstance(scenario, (str, Scenario)) or isinstance(scenario, Mapping):
        sc = _scenario(scenario, overrides_from_kwargs(dict(overrides or {})), None)
    else:
        raise ValueError(f"scenario: expected a bundled scenario's name, a path, a dict or a Scenario, not "
                         f"{scenario!r}")
    n = len(sc.resolved["flows"])
    if isinstance(flow, bool) or not isinstance(flow, (int, np.integer)) or not 0 <= flow < n:
        raise ValueError(f"flow: {flow!r} is not a flow of scenario {sc.name!r}, which has {n} "
                         f"(0 to {n - 1})")
    flow = int(flow)
    doc = copy.deepcopy(sc.resolved)
    f = doc["flows"][flow]
    f["cc"] = "external"
    f["cc_params"] = {"cwnd_gain": _number("cwnd_gain", cwnd_gain, 1e-3, 1e3)}
    if episode_s is not None:
        doc["duration_s"] = _number("episode_s", episode_s, 1e-3, 1e9)
    out = doc["output"]
    if out["pcap"] and not thin:
        raise ScenarioError("output.pcap: a run driven by a policy writes no packet captures; set "
                            "output.pcap = false")
    out["pcap"] = False
    if thin:
        out.update(cwnd_trace=False, rtt_trace=False, queue_delay_trace=False,
                   bin_ms=max(out["bin_ms"], 1000.0), rlc_sample_ttis=max(out["rlc_sample_ttis"], 1000))
    try:
        doc = json.loads(_core.resolve(json.dumps(_plain(doc))))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    trace = doc.get("trace") or {}
    texts = [read_input(f"trace.{key}", trace[key], trace[key]) if trace.get(key) else None
             for key in ("downlink", "uplink")]
    return doc, texts, dict(sc.inputs)
