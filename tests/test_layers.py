"""The library's folders are its layers (issue 34; api.md's layout), and these tests hold them to it.

Every import of every module is read from its source (module level and inside functions alike, since a
lazy import is a dependency too): the layers depend one way (``toy`` <- ``math`` <- ``studies``;
``math`` <- ``llm`` <- ``trl``), nothing imports the charts or the course machinery (``exercises``, the checks a
student calls, and ``course`` are that machinery), the numpy layers
never import torch, and no module reaches itself through its imports.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[1] / "code" / "rl4llm"
#: what each folder may import from the library, besides itself and the root's ``_checks``
MAY_IMPORT = {
    "toy": set(),
    "math": {"toy"},
    "studies": {"toy", "math"},
    "llm": {"toy", "math"},
    "trl": {"toy", "math", "llm"},
    "viz": {"toy", "math", "studies", "llm", "trl", "root"},
    "exercises": {"toy", "math", "studies", "llm", "trl", "course", "root"},
    "course": {"toy", "math", "studies", "llm", "trl", "exercises", "root"},
    "root": {"toy", "math", "studies", "llm", "trl"},
}
NUMPY_LAYERS = ("toy", "math", "studies")
HEAVY = ("torch", "trl", "transformers", "accelerate", "datasets")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIBRARY).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(LIBRARY.rglob("*.py")) if "__pycache__" not in p.parts}


def layer(module: str) -> str:
    head = module.split(".")[0] if module else ""
    return head if head in MAY_IMPORT and "." in module or head in MAY_IMPORT and (LIBRARY / head).is_dir() else "root"


def imports(module: str) -> tuple[set[str], set[str]]:
    """(the library modules ``module`` imports, the top-level names of the other packages it imports)."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    own, other = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rl4llm":
                    own.add(alias.name.removeprefix("rl4llm").lstrip("."))
                else:
                    other.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] != "rl4llm":
                other.add(node.module.split(".")[0])
                continue
            if node.level == 0:
                base = node.module.removeprefix("rl4llm").lstrip(".")
            else:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:           # `from . import model` imports a module, not a name
                candidate = f"{base}.{alias.name}" if base else alias.name
                own.add(candidate if candidate in MODULES else base)
    return own, other


def test_every_folder_is_a_layer_with_a_one_line_purpose():
    folders = sorted(p.name for p in LIBRARY.iterdir() if p.is_dir() and any(p.glob("*.py")))
    assert folders == sorted(set(MAY_IMPORT) - {"root"})
    for folder in folders:
        doc = ast.get_docstring(ast.parse((LIBRARY / folder / "__init__.py").read_text()))
        assert doc, f"rl4llm/{folder}/__init__.py says what the folder is for"
    assert sorted(p.name for p in LIBRARY.glob("*.py")) == ["__init__.py", "_checks.py"]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_module_imports_only_the_layers_below_it(module):
    allowed = MAY_IMPORT[layer(module)] | {layer(module)}
    wrong = sorted(m for m in imports(module)[0] if m != "_checks" and layer(m) not in allowed)
    assert not wrong, f"rl4llm.{module} ({layer(module)}) imports {wrong}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) in NUMPY_LAYERS))
def test_the_numpy_layers_never_import_torch(module):
    heavy = sorted(imports(module)[1] & set(HEAVY))
    assert not heavy, f"rl4llm.{module} imports {heavy}"


def test_the_imports_form_no_circle():
    graph = {m: {t for t in imports(m)[0] if t in MODULES and t != m} for m in MODULES}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):                                            # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_importing_a_numpy_layer_loads_no_torch():
    import subprocess
    import sys
    names = " ".join(f"rl4llm.{m}" for m in MODULES if layer(m) in NUMPY_LAYERS)
    code = f"import sys, importlib\nfor m in '{names}'.split(): importlib.import_module(m)\nprint('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
