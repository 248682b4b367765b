"""The README's Python snippets run as written: every name they use is defined in the snippet
(imported, assigned or a builtin), so a reader can paste them."""
import ast
import builtins
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _snippets():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def _undefined(source):
    tree = ast.parse(source)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    used = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return sorted(set(used) - defined)


def test_readme_has_python_snippets():
    assert _snippets(), "README.md has no ```python block"


def test_readme_python_snippets_define_every_name_they_use():
    for snippet in _snippets():
        assert _undefined(snippet) == [], "README snippet uses undefined names:\n" + snippet
