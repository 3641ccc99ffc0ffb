"""No function of plugins/ is longer than MAX_LINES lines, from its `def` to its last line (decorators not counted).

A longer function is split into named helpers. The one exception is systemd's environment-file state machine,
kept whole on purpose so that it reads side by side with systemd's C (src/basic/env-file.c).
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"
MAX_LINES = 80
# "path relative to the repository::qualified name" of each function allowed to be longer.
EXCEPTIONS = {
    "plugins/module_utils/service_environment.py::parse_environment_file",
}


def functions(path):
    """(qualified name, first line, length) of every function and method in the file, nested ones included."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found.append((name, child.lineno, child.end_lineno - child.lineno + 1))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), "")
    return found


def all_functions():
    """{"path::qualified name": (first line, length)} over every Python file under plugins/."""
    out = {}
    for path in sorted(PLUGINS.rglob("*.py")):
        for name, line, length in functions(path):
            out["%s::%s" % (path.relative_to(REPO).as_posix(), name)] = (line, length)
    return out


def test_no_function_is_longer_than_the_limit():
    found = all_functions()
    too_long = ["%s (line %d): %d lines" % (key, line, length)
                for key, (line, length) in sorted(found.items())
                if length > MAX_LINES and key not in EXCEPTIONS]
    assert too_long == [], "functions longer than %d lines (split them into named helpers):\n%s" % (
        MAX_LINES, "\n".join(too_long))


def test_the_exceptions_still_exist():
    # An exception whose function was renamed or removed would silently allow nothing; name it again or drop it.
    assert sorted(EXCEPTIONS - set(all_functions())) == []


def test_the_walk_measures_from_def_to_the_last_line(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("@decorator\ndef f():\n    x = 1\n\n    return x\n\n\nclass C:\n    def m(self):\n"
                      "        def inner():\n            pass\n        return inner\n")
    assert functions(source) == [("f", 2, 4), ("C.m", 9, 4), ("C.m.inner", 10, 2)]
