"""A Gymnasium environment for learning congestion control over the cell
(``docs/gym.md``)::

    import gymnasium
    import xrc.gym   # registers xrc/CongestionControl-v0

    env = gymnasium.make("xrc/CongestionControl-v0", scenario="paper/fig1-time-varying", flow=0)
    obs, info = env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

One flow of any scenario is driven by the agent (its congestion control
becomes ``external``); every other flow runs as the scenario says. The
simulation runs in the Rust core from decision to decision; the same seed
and the same actions give the same trajectory, byte for byte.

Needs the ``gymnasium`` package (``pip install 'xrc-lab[gym]'``).
"""

from __future__ import annotations

try:
    import gymnasium as _gymnasium
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("xrc.gym needs the gymnasium package: pip install 'xrc-lab[gym]' (or gymnasium>=1.0)") from e

from .env import ACTIONS, AURORA_WEIGHTS, OBS_FIELDS, CongestionControlEnv
from .policy import LinearPolicy, PolicyDriver, run_policy
from .vector import CongestionControlVectorEnv

ENV_ID = "xrc/CongestionControl-v0"

if ENV_ID not in _gymnasium.registry:
    _gymnasium.register(id=ENV_ID, entry_point="xrc.gym.env:CongestionControlEnv",
                        vector_entry_point="xrc.gym.vector:CongestionControlVectorEnv")

__all__ = ["ACTIONS", "AURORA_WEIGHTS", "CongestionControlEnv", "CongestionControlVectorEnv", "ENV_ID", "LinearPolicy",
           "OBS_FIELDS", "PolicyDriver", "run_policy"]
