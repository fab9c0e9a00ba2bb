"""The Gymnasium environment (docs/gym.md): xrc/CongestionControl-v0, its
spaces, reward and determinism, its vector form, and the errors bad input
gets."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip(
    "gymnasium", reason="xrc.gym needs the gymnasium package (the gym and test extras install it)")

import xrc.gym  # noqa: E402  (registers the environment)
from xrc import _core  # noqa: E402
from xrc.gym import AURORA_WEIGHTS, OBS_FIELDS, CongestionControlEnv, CongestionControlVectorEnv  # noqa: E402

FIG1 = "paper/fig1-time-varying"
LTE = "bench/lte-1ue-20s"
COL = {name: i for i, name in enumerate(OBS_FIELDS)}

WIRED = {
    "name": "wired", "seed": 3, "duration_s": 2.0, "topology": "wired",
    "internet": {"delay_ms": 10.0, "rate_mbps": 20.0, "buffer_packets": 50},
    "flows": [{"id": "a", "cc": "cubic"}, {"id": "b", "cc": "cubic"}],
}


def rollout(env, seed, actions):
    """Observations, rewards, ends and infos of one episode's first steps."""
    obs, info = env.reset(seed=seed)
    out = [(obs.tobytes(), None, None, None, repr(sorted(info.items())))]
    for a in actions:
        obs, r, term, trunc, info = env.step(np.array([a], dtype=np.float32))
        out.append((obs.tobytes(), r, term, trunc, repr(sorted(info.items()))))
        if term or trunc:
            break
    return out


def test_the_same_seed_and_the_same_actions_give_the_same_trajectory_byte_for_byte():
    env = gymnasium.make("xrc/CongestionControl-v0", scenario=FIG1, flow=0, episode_s=4.0)
    actions = np.random.default_rng(5).uniform(-1, 1, 400)
    first = rollout(env, 11, actions)
    # Another episode in between must not matter: reset(seed=...) is exact.
    rollout(env, 12, actions[:50])
    again = rollout(env, 11, actions)
    assert first == again
    assert len(first) == 400
    other = rollout(env, 12, actions)
    assert other != first, "another seed moves the UE differently"


def test_without_a_seed_the_first_episode_is_seeded_by_the_scenario_not_the_os():
    a = CongestionControlEnv(FIG1, 0, episode_s=0.5)
    b = CongestionControlEnv(FIG1, 0, episode_s=0.5)
    assert rollout(a, None, [0.3] * 40) == rollout(b, None, [0.3] * 40)


def test_the_environment_passes_gymnasiums_checker_without_warnings():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("xrc/CongestionControl-v0", scenario=FIG1, flow=0, episode_s=2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []


# The absolute modes are in physical units (Mbit/s, segments) on purpose;
# the checker recommends [-1, 1] for every Box.
@pytest.mark.filterwarnings("ignore:.*symmetric and normalized")
@pytest.mark.parametrize("action", ["rate", "cwnd", "cwnd_ratio"])
def test_every_action_mode_passes_the_checker(action):
    from gymnasium.utils.env_checker import check_env

    check_env(gymnasium.make("xrc/CongestionControl-v0", scenario=LTE, action=action, episode_s=1.0).unwrapped)


def test_the_observation_is_the_last_k_steps_newest_last():
    env = CongestionControlEnv(LTE, 0, history=4, episode_s=1.0)
    assert env.observation_space.shape == (4, len(OBS_FIELDS))
    assert env.observation_space.dtype == np.float32
    prev, _ = env.reset(seed=1)
    assert np.all(prev[:3] == 0), "before the first steps the history is zeros"
    for _ in range(10):
        obs, *_ = env.step(np.array([0.2], dtype=np.float32))
        assert np.array_equal(obs[:-1], prev[1:])
        assert env.observation_space.contains(obs)
        prev = obs


def test_a_multiplicative_action_changes_the_rate_by_its_documented_factor():
    env = CongestionControlEnv(LTE, 0, action_scale=0.5, initial_rate_mbps=4.0, episode_s=1.0)
    env.reset(seed=1)
    _, _, _, _, info = env.step(np.array([1.0], dtype=np.float32))
    assert info["rate_mbps"] == pytest.approx(6.0, abs=1e-6)       # x (1 + 0.5)
    _, _, _, _, info = env.step(np.array([-1.0], dtype=np.float32))
    assert info["rate_mbps"] == pytest.approx(4.0, abs=1e-6)       # / (1 + 0.5)
    _, _, _, _, info = env.step(np.array([0.0], dtype=np.float32))
    assert info["rate_mbps"] == pytest.approx(4.0, abs=1e-6)
    for _ in range(40):
        _, _, _, _, info = env.step(np.array([-1.0], dtype=np.float32))
    assert info["rate_mbps"] == pytest.approx(env.min_rate_mbps, abs=1e-6), "clamped at min_rate_mbps"


def test_an_absolute_rate_is_what_the_flow_sends_at():
    env = CongestionControlEnv(LTE, 0, action="rate", episode_s=2.0)
    env.reset(seed=1)
    sent = []
    for _ in range(150):
        _, _, _, _, info = env.step(np.array([5.0], dtype=np.float32))
        sent.append(info["send_rate_mbps"])
    assert info["rate_mbps"] == pytest.approx(5.0)
    # Paced at 5 Mbit/s of payload: over the last second.
    assert np.mean(sent[-100:]) == pytest.approx(5.0, rel=0.02)


def test_a_window_action_bounds_what_is_in_flight():
    env = CongestionControlEnv(LTE, 0, action="cwnd", initial_cwnd=6, episode_s=1.0)
    _, info = env.reset(seed=1)
    assert info["cwnd"] == 6 and info["in_flight"] <= 6, "the first setpoint applies from the first segment"
    for _ in range(30):
        obs, _, _, _, info = env.step(np.array([6.0], dtype=np.float32))
        assert info["cwnd"] == 6 and info["in_flight"] <= 6
        assert info["rate_mbps"] == 0.0, "a window alone is not paced"
    # A smaller window lets no new segment out until in flight falls below it.
    for _ in range(10):
        obs, _, _, _, info = env.step(np.array([3.0], dtype=np.float32))
    assert info["cwnd"] == 3 and info["in_flight"] <= 3


def test_the_default_reward_is_aurora_throughput_minus_delay_and_loss_penalties():
    env = CongestionControlEnv(FIG1, 0, action="rate", episode_s=3.0)
    env.reset(seed=2)
    w = AURORA_WEIGHTS
    saw_loss = False
    for _ in range(250):
        _, r, _, _, m = env.step(np.array([60.0], dtype=np.float32))
        want = w["throughput"] * m["delivery_rate_mbps"] - w["delay"] * m["rtt_ms"] - w["loss"] * m["loss_fraction"]
        assert r == pytest.approx(want, rel=1e-12, abs=1e-12)
        saw_loss |= m["loss_fraction"] > 0
    assert saw_loss, "60 Mbit/s into a cell of at most 34 overflows RLC's buffer"


def test_the_reward_weights_and_a_reward_function_replace_the_default():
    env = CongestionControlEnv(LTE, 0, reward_weights={"delay": 1.0}, episode_s=1.0)
    env.reset(seed=1)
    _, r, _, _, m = env.step(np.array([0.0], dtype=np.float32))
    assert r == pytest.approx(AURORA_WEIGHTS["throughput"] * m["delivery_rate_mbps"] - m["rtt_ms"]
                              - AURORA_WEIGHTS["loss"] * m["loss_fraction"])
    env = CongestionControlEnv(LTE, 0, reward_fn=lambda m: m["rtt_ms"] * 2, episode_s=1.0)
    env.reset(seed=1)
    _, r, _, _, m = env.step(np.array([0.0], dtype=np.float32))
    assert r == m["rtt_ms"] * 2


def test_where_the_cell_has_an_xrc_agent_the_observation_carries_its_rate_and_hol_delay():
    env = CongestionControlEnv(FIG1, 0, action="rate", episode_s=2.0)
    env.reset(seed=1)
    for _ in range(100):
        obs, _, _, _, info = env.step(np.array([50.0], dtype=np.float32))
    assert info["has_xrc_agent"]
    # The UE's fair share is between fig1's 6.7 and 34 Mbit/s; sending
    # at 50 keeps RLC's buffer full, so its head waits.
    assert 5.0 < obs[-1, COL["xrc_rate_mbps"]] < 40.0
    assert obs[-1, COL["xrc_hol_ms"]] > 1.0


def test_without_an_agent_the_xrc_columns_are_zero_and_the_info_says_so():
    env = CongestionControlEnv(WIRED, 1, episode_s=0.5)
    env.reset(seed=1)
    for _ in range(20):
        obs, _, _, _, info = env.step(np.array([0.5], dtype=np.float32))
    assert not info["has_xrc_agent"]
    assert np.all(obs[:, COL["xrc_rate_mbps"]] == 0) and np.all(obs[:, COL["xrc_hol_ms"]] == 0)
    assert obs[-1, COL["min_rtt_ms"]] == pytest.approx(20.0, abs=1.0), "2 x 10 ms, the other flow runs beside it"


def test_an_episode_is_the_scenarios_duration_and_ends_truncated():
    env = CongestionControlEnv(LTE, 0, episode_s=0.25)
    obs, info = env.reset(seed=1)
    steps = 1
    while True:
        obs, r, term, trunc, info = env.step(np.array([0.0], dtype=np.float32))
        steps += 1
        if term or trunc:
            break
    assert (term, trunc) == (False, True)
    assert steps == 25 and info["time_s"] == pytest.approx(0.25)
    with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
        env.step(np.array([0.0], dtype=np.float32))


def test_once_per_rtt_each_step_lasts_the_smoothed_rtt_at_its_start():
    env = CongestionControlEnv(LTE, 0, step_ms="rtt", action="rate", episode_s=3.0)
    _, info = env.reset(seed=1)
    assert info["time_s"] == pytest.approx(0.1), "100 ms before any RTT sample"
    times, srtts = [info["time_s"]], [env._rtt_s]
    for _ in range(40):
        _, _, _, _, info = env.step(np.array([8.0], dtype=np.float32))
        times.append(info["time_s"])
        srtts.append(env._rtt_s)
    steps = np.diff(times)
    assert np.allclose(steps, srtts[:-1], atol=1e-9)
    # 8 Mbit/s into a cell of about 36 with a 30 ms Internet RTT.
    assert np.all((steps > 0.03) & (steps < 0.08)), steps


def test_a_step_cut_by_the_scenarios_end_is_measured_over_what_ran():
    env = CongestionControlEnv(LTE, 0, step_ms=7.0, action="rate", episode_s=0.1)
    env.reset(seed=1)
    for _ in range(14):
        _, _, _, trunc, info = env.step(np.array([40.0], dtype=np.float32))
    # The reset's step and 13 more of 7 ms end at 0.098 s; the last runs 2 ms, to 0.1:
    # about 7 segments paced at 40 Mbit/s, counted over 2 ms, not 7.
    assert trunc and info["time_s"] == pytest.approx(0.1)
    assert info["send_rate_mbps"] == pytest.approx(40.0, rel=0.25)


def test_a_random_start_moves_the_first_decision_by_the_seed():
    env = CongestionControlEnv(FIG1, 0, random_start_s=5.0, episode_s=10.0)
    starts = {round(env.reset(seed=s)[1]["time_s"], 6) for s in range(5)}
    assert len(starts) == 5 and all(0.01 <= t <= 5.01 for t in starts)
    assert env.reset(seed=3)[1]["time_s"] == env.reset(seed=3)[1]["time_s"]


@pytest.mark.parametrize("step_ms", [10.0, "rtt"])
def test_the_vector_env_steps_each_simulation_as_the_single_env_would(step_ms):
    n = 3
    vec = gymnasium.make_vec("xrc/CongestionControl-v0", num_envs=n, vectorization_mode="vector_entry_point",
                             scenario=FIG1, episode_s=0.3 if step_ms == 10.0 else 3.0, threads=2, step_ms=step_ms)
    assert isinstance(vec.unwrapped, CongestionControlVectorEnv)
    actions = np.random.default_rng(2).uniform(-1, 1, (40, n, 1)).astype(np.float32)
    obs, _ = vec.reset(seed=7)
    got = [obs]
    rewards, infos, ends = [], [], []
    for a in actions:
        obs, r, term, trunc, info = vec.step(a)
        got.append(obs)
        rewards.append(r)
        infos.append(info)
        ends.append(trunc.copy())
    # Each sub-environment is the single environment seeded seed + i; the
    # 30-step episode ends at step 29, and the next step resets (autoreset).
    kw = dict(episode_s=0.3) if step_ms == 10.0 else dict(episode_s=3.0, step_ms="rtt")
    for i in range(n):
        single = CongestionControlEnv(FIG1, 0, **kw)
        o, _ = single.reset(seed=7 + i)
        assert np.array_equal(got[0][i], o)
        for t in range(29):
            o, r, _, _, info = single.step(actions[t, i])
            assert np.array_equal(got[t + 1][i], o), (i, t)
            assert rewards[t][i] == r
            assert {k: infos[t][k][i] for k in info} == info
    if step_ms != 10.0:
        # Once per RTT the sub-environments' clocks part.
        assert len(set(infos[20]["time_s"])) > 1
        return
    assert [bool(e.all()) for e in ends[:30]] == [False] * 28 + [True, False]
    # The reset episode is the single environment's next one (its own
    # generator draws the seed).
    for i in range(n):
        single = CongestionControlEnv(FIG1, 0, **kw)
        single.reset(seed=7 + i)
        o, _ = single.reset()
        assert np.array_equal(got[30][i], o)


def test_the_sync_vector_env_of_gymnasium_runs_it_too():
    vec = gymnasium.make_vec("xrc/CongestionControl-v0", num_envs=2, vectorization_mode="sync", scenario=LTE,
                             episode_s=0.1)
    vec.reset(seed=1)
    obs, r, term, trunc, _ = vec.step(np.zeros((2, 1), dtype=np.float32))
    assert obs.shape == (2, 10, len(OBS_FIELDS)) and r.shape == (2,)


# ----- bad input: a ValueError naming the field and the value -----

def test_an_unknown_scenario_is_named():
    with pytest.raises(ValueError, match="paper/fig9"):
        CongestionControlEnv("paper/fig9", 0)


@pytest.mark.parametrize("flow", [2, -1, 1.5, "0", True])
def test_a_flow_the_scenario_has_not_is_named_with_how_many_it_has(flow):
    with pytest.raises(ValueError, match=r"flow: .* has 2 \(0 to 1\)"):
        CongestionControlEnv(WIRED, flow)


@pytest.mark.parametrize("bad, match", [
    (np.array([np.nan], dtype=np.float32), r"action: nan is outside .* \(not a finite number\)"),
    (np.array([np.inf], dtype=np.float32), r"action: inf is outside"),
    (np.array([-0.5], dtype=np.float32), r"action: -0.5 is outside the action space \[0.1, 1000\]"),
    (np.array([2000.0], dtype=np.float32), r"action: 2000.0 is outside"),
    (np.array([1.0, 2.0], dtype=np.float32), r"action: must have shape \(1,\), not \(2,\)"),
    (np.zeros((1, 1), dtype=np.float32), r"action: must have shape \(1,\), not \(1, 1\)"),
    ("fast", r"action: must be a number"),
    (None, r"action: must be a number"),
    ([1.0, 2.0], r"action: must hold one number, not 2"),
])
def test_a_bad_action_is_refused_naming_it_and_the_run_goes_on(bad, match):
    env = CongestionControlEnv(LTE, 0, action="rate", episode_s=0.5)
    env.reset(seed=1)
    with pytest.raises(ValueError, match=match):
        env.step(bad)
    # Nothing was applied: the next good step continues the episode.
    _, _, _, _, info = env.step(np.array([3.0], dtype=np.float32))
    assert info["time_s"] == pytest.approx(0.02) and info["rate_mbps"] == pytest.approx(3.0)


def test_a_step_before_reset_says_to_reset():
    env = CongestionControlEnv(LTE, 0)
    with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
        env.step(np.array([0.0], dtype=np.float32))
    wrapped = gymnasium.make("xrc/CongestionControl-v0", scenario=LTE)
    with pytest.raises(gymnasium.error.ResetNeeded):
        wrapped.step(np.array([0.0], dtype=np.float32))


@pytest.mark.parametrize("kwargs, match", [
    ({"step_ms": 0}, r"step_ms: .* not 0"),
    ({"step_ms": math.nan}, r"step_ms: .* not nan"),
    ({"step_ms": "fast"}, r"step_ms: must be a number of milliseconds or \"rtt\", not 'fast'"),
    ({"history": 0}, r"history: .* not 0"),
    ({"history": 2.5}, r"history: must be an integer"),
    ({"action": "speed"}, r"action: must be one of rate_ratio, rate, cwnd_ratio, cwnd, not 'speed'"),
    ({"reward_weights": {"latency": 1.0}}, r"reward_weights: unknown weight 'latency'"),
    ({"reward_weights": {"loss": math.inf}}, r"reward_weights.loss: .* not inf"),
    ({"min_rate_mbps": 5.0, "max_rate_mbps": 1.0}, r"max_rate_mbps: .* from 5 to .* not 1.0"),
    ({"initial_rate_mbps": -2}, r"initial_rate_mbps: .* not -2"),
    ({"cwnd_gain": 0}, r"cwnd_gain: .* not 0"),
    ({"random_start_s": 30.0}, r"random_start_s: .* 20 s"),
    ({"episode_s": -1}, r"episode_s: .* not -1"),
    ({"overrides": {"flows.0.ue": 4}}, r"flows.0.ue"),
    ({"render_mode": "human"}, r"render_mode: .* 'human'"),
    ({"reward_fn": 3}, r"reward_fn: must be callable"),
])
def test_a_bad_argument_is_named_with_its_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CongestionControlEnv(LTE, 0, **kwargs)


def test_the_core_refuses_a_flow_that_is_not_driven_from_outside_and_a_bad_setpoint_by_name():
    import json

    from xrc.api import _scenario

    doc = _scenario(LTE, [], None).resolved
    with pytest.raises(ValueError, match=r'flows.0.cc: "cubic" is not driven from outside'):
        _core.Controlled(json.dumps(doc), 0)
    doc["flows"][0]["cc"], doc["flows"][0]["cc_params"] = "external", {}
    sim = _core.Controlled(json.dumps(doc), 0)
    for rate, match in [(math.nan, "rate_bps: .* not NaN"), (0.0, "rate_bps: .* not 0"),
                        (-1e6, "rate_bps: .* not -1000000")]:
        with pytest.raises(ValueError, match=match):
            sim.step(10_000_000, rate, None)
    with pytest.raises(ValueError, match="cwnd: .* not inf"):
        sim.step(10_000_000, None, math.inf)
    with pytest.raises(ValueError, match="interval"):
        sim.step(0, 1e6, None)
    with pytest.raises(ValueError, match=r"\[1\] rate_bps"):
        _core.step_many([sim, _core.Controlled(json.dumps(doc), 0)], [10_000_000] * 2, [1e6, math.nan], [None, None])
    with pytest.raises(ValueError, match=r"intervals_ns, rates_bps, cwnds: one per simulation \(1\), not 2, 1 and 1"):
        _core.step_many([sim], [1, 2], [1e6], [None])


def test_a_vector_env_names_the_sub_environment_of_a_bad_action():
    vec = CongestionControlVectorEnv(2, scenario=LTE, episode_s=0.2)
    vec.reset(seed=1)
    with pytest.raises(ValueError, match=r"actions\[1\]: action: nan"):
        vec.step(np.array([[0.0], [np.nan]], dtype=np.float32))
    with pytest.raises(ValueError, match=r"actions: must have shape \(2, 1\), not \(2,\)"):
        vec.step(np.zeros(2, dtype=np.float32))


# ----- a policy as a scheme: run_policy and LinearPolicy -----

def test_a_policy_runs_the_scenario_as_written_and_is_reported_as_a_scheme_is():
    import xrc
    from xrc.gym import run_policy

    hold = lambda obs: np.zeros(1, dtype=np.float32)   # noqa: E731
    run = run_policy(hold, FIG1, seed=5, episode_s=4.0, initial_rate_mbps=3.0)
    base = xrc.run(FIG1, seed=5, duration_s=4.0, flows__0__cc="cubic")
    flow = run.summary["flows"][0]
    assert flow["cc"] == "external" and run.summary["seed"] == 5
    assert flow["goodput_mbps"] == pytest.approx(3.0, rel=0.05)
    # 3 Mbit/s for 4 s is about 1,040 segments: a sample per delayed ACK of two.
    assert len(run.rtt) > 400 and run.summary["sim_time_s"] == 4.0
    # The same seed: the UE meets the same channel as under a built-in scheme.
    assert run.summary["ues"][0]["capacity_mbps"] == base.summary["ues"][0]["capacity_mbps"]
    assert run_policy(hold, FIG1, seed=5, episode_s=4.0, initial_rate_mbps=3.0).summary["flows"] == run.summary["flows"]


@pytest.mark.parametrize("given", ["record", "vary_seed", "random_start_s"])
def test_run_policy_refuses_what_would_change_the_scenario_naming_it(given):
    from xrc.gym import run_policy

    with pytest.raises(ValueError, match=f"{given}: run_policy runs the scenario as it is written"):
        run_policy(lambda o: np.zeros(1, dtype=np.float32), LTE, **{given: 1})


def test_finish_run_needs_a_recorded_environment():
    env = CongestionControlEnv(LTE, 0, episode_s=0.1)
    env.reset(seed=1)
    with pytest.raises(ValueError, match="record: .* record=True"):
        env.finish_run()


def test_a_linear_policy_saved_and_loaded_acts_the_same(tmp_path):
    from xrc.gym import LinearPolicy

    rng = np.random.default_rng(1)
    p = LinearPolicy(rng.normal(size=(2, len(OBS_FIELDS))), 0.3, np.full(len(OBS_FIELDS), 10.0))
    p.save(tmp_path / "p.npz")
    q = LinearPolicy.load(tmp_path / "p.npz")
    obs = rng.uniform(0, 50, size=(10, len(OBS_FIELDS))).astype(np.float32)
    a = p(obs)
    assert a.shape == (1,) and a.dtype == np.float32 and -1 <= a[0] <= 1
    assert np.array_equal(q(obs), a)
    # It reads the last rows of the history: tanh(sum(W * obs[-2:] / norm) + b).
    assert a[0] == pytest.approx(np.tanh(np.sum(p.weights * obs[-2:] / 10.0) + 0.3), rel=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    ({"weights": np.zeros(13)}, r"weights: must have shape \(history, 13\), not \(13,\)"),
    ({"weights": np.full((1, 13), np.nan)}, "weights: must be finite"),
    ({"weights": np.zeros((1, 13)), "bias": np.inf}, "bias: must be a finite number, not inf"),
    ({"weights": np.zeros((1, 13)), "norm": np.zeros(13)}, "norm: must be 13 positive numbers"),
])
def test_a_bad_linear_policy_is_named(kwargs, match):
    from xrc.gym import LinearPolicy

    with pytest.raises(ValueError, match=match):
        LinearPolicy(**kwargs)


def test_the_python_block_of_docs_gym_md_runs_as_written(capsys, monkeypatch, tmp_path):
    from .conftest import ROOT
    from .test_examples import python_blocks

    blocks = python_blocks((ROOT / "docs" / "gym.md").read_text())
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "docs/gym.md", "exec"), {"__name__": "__docs__"})
    assert "500 steps to 5.00 s: rate 8.0 Mbit/s (fair share 8.0), mean reward 9.00" in capsys.readouterr().out


# ----- a trained policy under `xrc run --policy` -----

def saved_policy(path, **env):
    from xrc.gym import LinearPolicy

    w = np.zeros((2, len(OBS_FIELDS)))
    w[-1, COL["xrc_rate_mbps"]], w[-1, COL["rate_mbps"]] = 1.0, -1.0   # toward the agent's fair share
    LinearPolicy(w, 0.0, np.full(len(OBS_FIELDS), 10.0), env={"history": 2, "initial_rate_mbps": 5.0, **env}).save(path)
    return path


def test_xrc_run_with_a_policy_writes_the_run_directory_that_run_policy_reports(tmp_path, capsys):
    import json

    from xrc.cli import main
    from xrc.gym import LinearPolicy, run_policy

    pol = saved_policy(tmp_path / "p.npz")
    out = tmp_path / "run"
    assert main(["run", FIG1, "--seed", "9", "--set", "duration_s=3", "--policy", str(pol), "--out", str(out),
                 "--no-plots"]) == 0
    assert "external" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    resolved = json.loads((out / "scenario.resolved.json").read_text())
    assert resolved["flows"][0]["cc"] == "external" and resolved["seed"] == 9
    p = LinearPolicy.load(pol)
    same = run_policy(p, FIG1, seed=9, overrides={"duration_s": 3}, **p.env)
    assert summary["flows"] == json.loads(json.dumps(same.summary["flows"]))
    # The policy steers the rate to the agent's fair share: the cell is used.
    assert summary["ues"][0]["utilization"] > 0.8


@pytest.mark.parametrize("extra, match", [
    (["--policy", "missing.npz"], r"--policy: policy 'missing.npz': not a saved LinearPolicy"),
    (["--policy", "{pol}", "--policy-flow", "3"], r"--policy-flow: flow: 3 is not a flow of scenario .* has 1"),
    (["--policy-flow", "0"], r"--policy-flow: names the flow a --policy drives; give --policy too"),
    (["--policy", "{pol}", "--set", "output.pcap=true"], r"output.pcap: a run driven by a policy"),
])
def test_xrc_run_with_a_bad_policy_says_what_is_wrong(tmp_path, monkeypatch, capsys, extra, match):
    import re

    from xrc.cli import main

    monkeypatch.chdir(tmp_path)
    pol = saved_policy(tmp_path / "p.npz")
    argv = ["run", FIG1, "--out", str(tmp_path / "run"), "--quiet", *[a.format(pol=pol) for a in extra]]
    assert main(argv) == 2
    assert re.search(match, capsys.readouterr().err)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("env, match", [
    ({"action": "rate"}, r"env.action: a linear policy's actions are in \[-1, 1\]"),
    ({"speed": 3}, r"env: unknown setting 'speed'"),
    ({"history": 1}, r"env.history: the policy reads 2 rows, more than the 1"),
])
def test_a_policy_saved_with_settings_it_cannot_run_with_is_refused(env, match):
    from xrc.gym import LinearPolicy

    with pytest.raises(ValueError, match=match):
        LinearPolicy(np.zeros((2, len(OBS_FIELDS))), env=env)


def test_the_delivery_rates_of_an_episode_add_up_to_what_the_run_delivered():
    env = CongestionControlEnv(FIG1, 0, action="rate", record=True, vary_seed=False, episode_s=2.0)
    _, info = env.reset()
    delivered = info["delivery_rate_mbps"] * 0.01 / 8e-6
    while True:
        _, _, term, trunc, info = env.step(np.array([12.0], dtype=np.float32))
        delivered += info["delivery_rate_mbps"] * 0.01 / 8e-6
        if term or trunc:
            break
    flow = env.finish_run().summary["flows"][0]
    assert flow["bytes_delivered"] > 2_000_000
    assert delivered == pytest.approx(flow["bytes_delivered"], rel=1e-9)
