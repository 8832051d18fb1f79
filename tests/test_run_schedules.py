"""``rl4llm.studies.run_schedules``' ``extra_forwards`` (chapter 19's schedule table at 8 and 10 Psi a token),
against the FLOPs counted by hand: (6 + 2 e) Psi a token over 40% of an H100's 989 TFLOP/s."""
import pytest

from rl4llm.studies import run_schedules as rs

F = 0.4 * 989e12                                     # RUN's utilisation of the H100's dense bf16 peak
TOKENS = 64 * 8 * (512 + 4096)                       # RUN's 64 prompts, G = 8, 512 + 4096 tokens


@pytest.mark.parametrize("extra_forwards, flops", [(1, 8), (2, 10)])
def test_training_seconds_count_6_plus_2e_psi_a_token(extra_forwards, flops):
    step = rs.step_seconds(7e9, 8, 4096, 8, 8, extra_forwards=extra_forwards)
    assert step["train"] == pytest.approx(flops * 7e9 * TOKENS / (F * 8), rel=1e-12)


def test_the_default_is_8_psi_and_the_rollout_and_sync_do_not_change():
    eight, ten = rs.step_seconds(7e9, 8, 4096, 8, 8), rs.step_seconds(7e9, 8, 4096, 8, 8, extra_forwards=2)
    assert eight == rs.step_seconds(7e9, 8, 4096, 8, 8, extra_forwards=1)
    assert ten["rollout"] == eight["rollout"] and ten["sync"] == eight["sync"]
    assert ten["train"] == pytest.approx(eight["train"] * 10 / 8, rel=1e-12)


def test_schedule_walls_at_10_psi_by_hand():
    walls = rs.schedule_walls(7e9, 8, extra_forwards=2)
    together = rs.step_seconds(7e9, 8, 4096, 16, 16)
    apart = rs.step_seconds(7e9, 8, 4096, 8, 8)
    train_16, train_8 = 10 * 7e9 * TOKENS / (F * 16), 10 * 7e9 * TOKENS / (F * 8)
    nvlink = 2 * 7e9 / 450e9                          # bf16 weights over NVLink, one way
    assert walls["synchronous"]["wall"] == pytest.approx(together["rollout"] + train_16 + nvlink, rel=1e-12)
    assert walls["one_step_off"]["wall"] == pytest.approx(max(apart["rollout"], train_8) + apart["sync"], rel=1e-12)
    assert walls["asynchronous"]["wall"] == pytest.approx(max(apart["rollout"], train_8 + apart["sync"]), rel=1e-12)
