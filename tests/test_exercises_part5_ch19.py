"""Chapter 19's checked exercises (rl4llm.exercises.part5): each answer is right by an independent route
(the arithmetic written out), each typical wrong answer gets its own message, and the experiment's
stated answer (the best split of 16 GPUs) holds."""
import pytest

from rl4llm.exercises import EXERCISES, SPECS, check
from rl4llm.exercises._core import MALFORMED
from rl4llm.viz import real_runs as rr

CH19 = ("ex-ch19-bytes", "ex-ch19-zero2", "ex-ch19-kv", "ex-ch19-decode")

#: The answers by hand: 18 bytes x 3e9; 2 Psi + 14 Psi / 8; 2 x 28 x 2 x 128 x 2 bytes x 64 x 4096;
#: max(14e9 / 3.35e12, 2 x 7e9 x 8 / 989e12) s, in GB and milliseconds.
BY_HAND = {"ex-ch19-bytes": 18 * 3e9 / 1e9, "ex-ch19-zero2": 2 * 7 + 14 * 7 / 8,
           "ex-ch19-kv": 2 * 28 * 2 * 128 * 2 * 64 * 4096 / 1e9,
           "ex-ch19-decode": 1e3 * max(14e9 / 3.35e12, 2 * 7e9 * 8 / 989e12)}


def test_ids_and_chapter():
    assert all(EXERCISES[k] == 19 for k in CH19)


@pytest.mark.parametrize("exercise", CH19)
def test_the_answer_by_hand_is_correct(exercise):
    spec = SPECS[exercise]
    assert spec.value == pytest.approx(BY_HAND[exercise], rel=1e-12)
    assert check(exercise, BY_HAND[exercise]).startswith("Correct:")
    assert check(exercise, f"{BY_HAND[exercise]:.4f}").startswith("Correct:")
    assert check(exercise, "many") == MALFORMED


@pytest.mark.parametrize("exercise", CH19)
def test_every_mistake_gets_its_own_message(exercise):
    spec = SPECS[exercise]
    assert len(spec.mistakes) >= 4
    for wrong, explanation in spec.mistakes:
        assert check(exercise, wrong) == f"Not yet: {explanation}."
    assert check(exercise, 10 * BY_HAND[exercise] + 1) == spec.wrong_message


def test_the_mistakes_are_the_values_named():
    assert [round(w, 4) for w, _ in SPECS["ex-ch19-bytes"].mistakes] == [48, 42, 30, 6, 50.2914, 36]
    assert [round(w, 4) for w, _ in SPECS["ex-ch19-zero2"].mistakes] == [14, 38.5, 112, 24.4472, 24.5, 40.25, 22.75]
    assert 3 * (2 + 2 + 8) == 36 and 2 * 7 + (2 + 8) * 7 / 8 == 22.75          # by hand: the two forgotten copies
    assert (2 * 7 + 14 * 7 / 8) * 1e9 / 2 ** 30 == pytest.approx(24.4472, abs=1e-4)  # 26.25 GB in GiB
    assert check("ex-ch19-zero2", 24.45).startswith("Not yet: that is in GiB")        # as a student would round it
    assert [round(w, 4) for w, _ in SPECS["ex-ch19-kv"].mistakes] == [3.7581, 45.0972, 7.0, 15.0324, 0.2684]
    assert [round(w, 4) for w, _ in SPECS["ex-ch19-decode"].mistakes] == [0.1132, 33.4328, 2.0896, 4.2924, 0.0042]


@pytest.mark.parametrize("completion", [4096, 16384])
def test_the_split_experiment(completion):
    """ex-ch19-split's solution: 9 sampling GPUs of 16 give the shortest one-step-off step at 4096 completion
    tokens and 12 at 16384, each shorter than the colocated synchronous step."""
    walls = {split: rr.schedule_walls(7e9, split, completion=completion) for split in range(1, 16)}
    best = min(walls, key=lambda split: walls[split]["one_step_off"]["wall"])
    assert best == {4096: 9, 16384: 12}[completion]
    assert walls[best]["one_step_off"]["wall"] < walls[best]["synchronous"]["wall"]


def _student_kv_bytes(n_layers, n_kv_heads, head_dim, precision="bf16"):
    """A right answer written another way: a key and a value of head_dim numbers per head, summed layer by layer."""
    bits = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8}[precision]
    return sum(2 * n_kv_heads * head_dim * bits // 8 for _ in range(n_layers))


def test_the_kv_coding_exercise_passes_the_library_and_a_students_loop():
    from rl4llm import kv_bytes_per_token
    assert EXERCISES["kv_bytes_per_token"] == 19
    assert check("kv_bytes_per_token", kv_bytes_per_token).startswith("Correct:")
    assert check("kv_bytes_per_token", _student_kv_bytes).startswith("Correct:")
    assert kv_bytes_per_token(32, 32, 128, "fp16") == 2 * 32 * 32 * 128 * 2 == 2 ** 19       # 0.5 MiB


def test_the_kv_cases_cover_every_precision_and_the_default():
    calls = SPECS["kv_bytes_per_token"].calls()
    assert calls[0].args == (32, 32, 128) and calls[0].kwargs == {"precision": "fp16"}
    assert {c.kwargs.get("precision", "bf16") for c in calls} == {"fp32", "bf16", "fp16", "fp8"}
    assert any("precision" not in c.kwargs for c in calls)


@pytest.mark.parametrize("slip,needle", [
    (lambda L, n, d, precision="bf16": L * n * d * {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}[precision],
     "the factor 2 is missing"),
    (lambda L, n, d, precision="bf16": 2 * L * n * d * {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8}[precision],
     "counts bits, not bytes"),
    (lambda L, n, d, precision="bf16": 2 * n * d * {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}[precision],
     "one layer's cache"),
    (lambda L, n, d, precision="bf16": 2 * L * n * d * 2, "the precision is ignored"),
])
def test_the_kv_slips_written_as_a_student_would_are_named(slip, needle):
    assert needle in check("kv_bytes_per_token", slip)


def test_every_kv_mistake_gets_its_own_message_and_crashes_are_reported():
    spec = SPECS["kv_bytes_per_token"]
    assert len(spec.mistakes) == 4
    for explanation, mistake in spec.mistakes:
        assert check("kv_bytes_per_token", mistake) == f"Not yet: {explanation}."
    assert check("kv_bytes_per_token", lambda L, n, d, precision="bf16": None).startswith(
        "Not yet: your function returned None")
    assert check("kv_bytes_per_token", lambda L, n, d: 2 * L * n * d * 2).startswith("Not yet: your function raised")
