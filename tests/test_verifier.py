"""The safe addition verifier: addition_reward, parse_addition_prompt."""
import builtins

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rl4llm import EOS_MARKER, PROMPT, addition_reward
from rl4llm.toy.verifier import MAX_OPERAND_DIGITS, parse_addition_prompt


@pytest.fixture
def no_code_execution(monkeypatch):
    """Make eval and exec fail loudly: a test using this fixture fails if the verifier ever runs text as code.

    (Not applied to the hypothesis tests: hypothesis itself uses exec to build its strategies.)
    """
    calls = []

    def forbidden(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the verifier must never execute text as code")
    for name in ("eval", "exec"):
        monkeypatch.setattr(builtins, name, forbidden)
    yield
    assert calls == []


# ---------------------------------------------------------------- the toy's answers
@pytest.mark.parametrize("completion", ["5", "05", "005", " 5", "5 ", "\t5\n", "5" + EOS_MARKER,
                                        "5" + EOS_MARKER + "garbage after the end", "05" + EOS_MARKER,
                                        " 5 " + EOS_MARKER + EOS_MARKER])
def test_right_answer_scores_one(completion, no_code_execution):
    assert addition_reward(PROMPT, completion) == 1.0


@pytest.mark.parametrize("completion", [
    "", " ", "\t\n ", EOS_MARKER, " " + EOS_MARKER + "5",
    "4", "6", "15", "50", "55", "0",
    "__import__('os')", "__import__('os').system('echo hacked')", "2+3", "(5)", "5.0", "5.", "1e2", "5e0",
    "\u0665",  # ARABIC-INDIC DIGIT FIVE: int() accepts it, the verifier does not
    "\uff15",  # FULLWIDTH DIGIT FIVE
    "+5", "-5", "5 5", "5_0", "0x5", "five", "5\x00", "\x00", "\x005", "5\x00" + EOS_MARKER,
    "5<eo", "5<EOS>", "<eos", "9" * 10**6, "0" * 10**6,
])
def test_anything_else_scores_zero(completion, no_code_execution):
    assert addition_reward(PROMPT, completion) == 0.0


# Unicode whitespace that str.strip() would remove, but the verifier must not: no-break space,
# line and paragraph separators, the information separators U+001C-U+001F, NEL, ideographic space...
NON_ASCII_WHITESPACE = ["\u00a0", "\u2028", "\u2029", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u3000",
                        "\u2003", "\u1680", "\u202f", "\u205f", "\ufeff"]


@pytest.mark.parametrize("completion", ["\u00a05", "5\u2028", "5\x1c", "5\x1f"])
def test_the_issue_23_unicode_whitespace_cases_score_zero(completion, no_code_execution):
    assert addition_reward(PROMPT, completion) == 0.0


@pytest.mark.parametrize("space", NON_ASCII_WHITESPACE)
def test_non_ascii_whitespace_around_the_answer_scores_zero(space, no_code_execution):
    for completion in (space + "5", "5" + space, space + "5" + space, " " + space + "5\n",
                       "5" + space + EOS_MARKER):
        assert addition_reward(PROMPT, completion) == 0.0, repr(completion)


@pytest.mark.parametrize("space", [" ", "\t", "\n", "\r", "\x0c", "\x0b"])
def test_ascii_whitespace_is_tolerated_on_purpose(space, no_code_execution):
    """Space, tab, newline, CR, FF and VT around the digits are ignored (chapter 5 says so)."""
    from rl4llm.toy.verifier import ASCII_WHITESPACE
    assert space in ASCII_WHITESPACE and len(ASCII_WHITESPACE) == 6
    for completion in (space + "5", "5" + space, space * 3 + "05" + space + EOS_MARKER):
        assert addition_reward(PROMPT, completion) == 1.0
    assert addition_reward(PROMPT, "5" + space + "5") == 0.0


def test_a_million_digits_of_the_right_value_scores_one(no_code_execution):
    """Leading zeros count, however many: the check is on digit strings, never int() of the completion."""
    assert addition_reward(PROMPT, "0" * 10**6 + "5") == 1.0
    assert addition_reward("123+877=", "0" * 10**6 + "1000") == 1.0


def test_non_string_completion_scores_zero():
    for completion in (None, 5, 5.0, b"5", ["5"]):
        assert addition_reward(PROMPT, completion) == 0.0


def test_returns_a_python_float():
    assert type(addition_reward(PROMPT, "5")) is float
    assert type(addition_reward(PROMPT, "4")) is float


def test_two_digit_example_of_chapter_5():
    assert addition_reward("47+38=", "85") == 1.0
    assert addition_reward("47+38=", "085" + EOS_MARKER) == 1.0
    assert addition_reward("47+38=", "8") == 0.0
    assert addition_reward("47+38=", "58") == 0.0


def test_zero_padded_operands_and_zero_sum():
    assert addition_reward("007+003=", "10") == 1.0
    assert addition_reward("0+0=", "0") == 1.0
    assert addition_reward("0+0=", "000") == 1.0
    assert addition_reward("0+0=", "") == 0.0


def test_long_operands_are_exact():
    a, b = int("9" * MAX_OPERAND_DIGITS), 1
    assert addition_reward(f"{a}+{b}=", "1" + "0" * MAX_OPERAND_DIGITS) == 1.0
    assert addition_reward(f"{a}+{b}=", "1" + "0" * (MAX_OPERAND_DIGITS - 1) + "1") == 0.0


# ---------------------------------------------------------------- prompts
def test_parse_addition_prompt():
    assert parse_addition_prompt("2+3=") == (2, 3)
    assert parse_addition_prompt("047+38=") == (47, 38)


@pytest.mark.parametrize("prompt", ["", "2+3", "2+3=5", "2-3=", "2*3=", "+3=", "2+=", " 2+3=", "2+3= ", "2 + 3=",
                                    "a+b=", "\u0662+3=", "2+3+4=", "__import__('os')=", "2+3=\x00", "-2+3=",
                                    "1" * (MAX_OPERAND_DIGITS + 1) + "+1=", None, 23, b"2+3="])
def test_malformed_prompt_raises_naming_prompt(prompt, no_code_execution):
    with pytest.raises(ValueError, match="prompt"):
        addition_reward(prompt, "5")
    with pytest.raises(ValueError, match="prompt"):
        parse_addition_prompt(prompt)


def test_huge_malformed_prompt_raises_quickly():
    with pytest.raises(ValueError, match="prompt"):
        addition_reward("1" * 10**6 + "+1=", "5")


# ---------------------------------------------------------------- properties
operand = st.integers(min_value=0, max_value=10**30)


@settings(max_examples=300, deadline=None)
@given(st.text(), operand, operand)
def test_never_raises_and_returns_zero_or_one_on_any_text(completion, a, b):
    assert addition_reward(f"{a}+{b}=", completion) in (0.0, 1.0)


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=50), st.integers(10**4, 10**5))
def test_never_raises_on_huge_texts_with_nul_bytes(chunk, repeats):
    assert addition_reward(PROMPT, ("\x00" + chunk) * repeats) in (0.0, 1.0)


@settings(max_examples=300, deadline=None)
@given(operand, operand, st.integers(0, 10**31), st.integers(0, 5), st.sampled_from(["", " ", "\n", "\t "]),
       st.sampled_from(["", EOS_MARKER, EOS_MARKER + "7", EOS_MARKER + EOS_MARKER]))
def test_never_one_for_a_wrong_sum(a, b, value, zeros, space, end):
    if value == a + b:
        value += 1
    completion = space + "0" * zeros + str(value) + space + end
    assert addition_reward(f"{a}+{b}=", completion) == 0.0


@settings(max_examples=300, deadline=None)
@given(operand, operand, st.integers(0, 3), st.integers(0, 3), st.integers(0, 20),
       st.text(alphabet=" \t\n\r\x0b\x0c", max_size=4), st.text(alphabet=" \t\n\r\x0b\x0c", max_size=4),
       st.sampled_from(["", EOS_MARKER, EOS_MARKER + "garbage", EOS_MARKER + "\x00" + "1e2"]))
def test_always_one_for_the_right_sum(a, b, pad_a, pad_b, zeros, before, after, end):
    prompt = "0" * pad_a + str(a) + "+" + "0" * pad_b + str(b) + "="
    completion = before + "0" * zeros + str(a + b) + after + end
    assert addition_reward(prompt, completion) == 1.0
