"""The declared checks of rl4llm._checks: each rule returns what the function body receives and
refuses a bad value with a ValueError naming the parameter and its range."""
import ast
import pathlib

import numpy as np
import pytest

import rl4llm
from rl4llm._checks import (checked, flag, generator, integer_in_range, logits_vector, one_reward_per_answer,
                            reward_vector)


def test_an_integer_in_a_range_is_an_integer_between_its_ends():
    rule = integer_in_range(1, 5)
    assert rule(np.int64(5), "n") == 5 and type(rule(1, "n")) is int
    for bad in (0, 6, 2.0, True, "3"):
        with pytest.raises(ValueError, match=r"n must be an integer in \[1, 5\]"):
            rule(bad, "n")


def test_a_reward_vector_has_one_finite_reward_per_answer():
    assert reward_vector([0, 1, 0], 3).dtype == np.float64
    for bad in ([0, 1], [[0, 1, 0]], [0, np.nan, 1]):
        with pytest.raises(ValueError, match="rewards"):
            reward_vector(bad, 3)


def test_one_reward_per_answer_relates_the_rewards_to_the_policys_last_axis():
    @checked(one_reward_per_answer("logits"), logits=logits_vector)
    def mean_reward(logits, rewards):
        return rewards.mean()

    assert mean_reward([0.0, 1.0], [1, 0]) == 0.5
    with pytest.raises(ValueError, match=r"rewards must be a 1-D vector of length 2 \(one reward per answer\)"):
        mean_reward([0.0, 1.0], [1, 0, 0])


def test_a_generator_is_a_numpy_generator():
    rng = np.random.default_rng(0)
    assert generator(rng, "rng") is rng
    with pytest.raises(ValueError, match=r"rng must be a numpy.random.Generator"):
        generator(np.random.RandomState(0), "rng")


def test_a_flag_is_true_or_false_and_nothing_truthy():
    assert flag(True, "switch") is True and flag(False, "switch") is False
    for bad in (1, 0, "yes", None):
        with pytest.raises(ValueError, match="switch must be True or False"):
            flag(bad, "switch")


# ---- one style: no inline ValueError outside the rules and relations --------------------------------
#: Where a ``raise ValueError`` stays outside a rule or relation, and why.
INLINE_RAISES = {
    "math/step_time.py": {"schedule": "chapter 19 shows its source; that torch chapter is not re-executed here"},
    "trl/run.py": {"trl_grpo_trainer": "chapter 16 shows its source; that torch chapter is not re-executed here"},
    "trl/knobs.py": {"trl_defaults": "the fields are read against trl's own GRPOConfig, built in the body"},
    "llm/model.py": {"GPT.forward": "the limit counts the KV cache's tokens, the module's state, not an argument"},
    "llm/samplers.py": {"RolloutEngineSampler.check_with": "a relation's step: strategies_agree calls it"},
    "llm/tasks.py": {"CharTokenizer.encode": "a parse: each character is checked as it is read"},
    "viz/charts.py": {"grid": "checks what the reader's compute returns, not an argument",
                      "line_chart.at": "checks what the reader's compute and notes return, not an argument"},
    "exercises/_core.py": {"NumericExercise.value": "the answer is computed on first use, then checked",
                           "NumericExercise.mistakes": "the mistakes are computed on first use, then checked"},
    "course/assignments.py": {"exercises": "checks a chapter notebook's cells, read from disk",
                              "_answer_cell": "checks the library's exercise registry against a notebook"},
    "course/reading.py": {"reading_load": "checks a chapter notebook's headings, read from disk"},
    "course/grading/gradebook.py": {"autograde": "the assignment must be a folder on disk"},
    "course/grading/runner.py": {"encode": "the last branch of a switch on a student's value's type"},
}


def _called_in(node, kind):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, kind)]


def _checks_of_the_package():
    """Per module (path under rl4llm/): its tree; and every name a ``checked(...)`` or ``check_fields(...)``
    call refers to, directly or through a module-level constant (``_CLIP = {...}``)."""
    root = pathlib.Path(rl4llm.__file__).parent
    trees = {p.relative_to(root).as_posix(): ast.parse(p.read_text()) for p in root.rglob("*.py")
             if p.name != "_checks.py"}
    declared = set()
    for tree in trees.values():
        constants = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                     for t in node.targets if isinstance(t, ast.Name)}
        todo = [arg for call in _called_in(tree, (ast.Name, ast.Attribute))
                if getattr(call.func, "id", getattr(call.func, "attr", None)) in ("checked", "check_fields")
                for arg in [*call.args, *(k.value for k in call.keywords)]]
        while todo:
            for n in ast.walk(todo.pop()):
                name = getattr(n, "id", None) or getattr(n, "attr", None)
                if isinstance(n, (ast.Name, ast.Attribute)) and name not in declared:
                    declared.add(name)
                    if name in constants:
                        todo.append(constants[name])
    return trees, declared


def _inline_raises(tree, declared):
    """(qualified function, line) of each ``raise ValueError`` outside a rule or relation: a function
    ``declared`` (passed to checked or check_fields anywhere in the package), a module function one of
    those calls (its helper), or a function nested in either (a rule factory's rule)."""
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    rules, todo = set(), [name for name in declared if name in functions]
    while todo:
        name = todo.pop()
        if name not in rules:
            rules.add(name)
            todo += [c.func.id for c in _called_in(functions[name], ast.Name) if c.func.id in functions]
    found = []

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                visit(child, scope + [child.name])
                continue
            exc = getattr(child, "exc", None) if isinstance(child, ast.Raise) else None
            exc = exc.func if isinstance(exc, ast.Call) else exc
            if getattr(exc, "id", None) == "ValueError" and not rules & set(scope):
                found.append((".".join(scope), child.lineno))
            visit(child, scope)
    visit(tree, [])
    return found


def test_no_module_raises_valueerror_inline_outside_its_rules_and_relations():
    trees, declared = _checks_of_the_package()
    inline = {(path, function) for path, tree in trees.items() for function, _ in _inline_raises(tree, declared)}
    allowed = {(path, function) for path, functions in INLINE_RAISES.items() for function in functions}
    assert inline <= allowed, f"validate with @checked rules and relations instead: {sorted(inline - allowed)}"
    assert allowed <= inline, f"no longer raising inline, drop from INLINE_RAISES: {sorted(allowed - inline)}"
