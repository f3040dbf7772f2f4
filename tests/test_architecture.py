"""The package's rooms: no import cycles, no import of a higher room, a docstring that
says what each sub-package holds and may import. Read from the source with ast, so
imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ecocompute"

# Lower ranks are lower rooms; a module may import its own room and lower ranks only.
RANK = {
    "errors": 0,
    "core": 0,
    "boundary": 1,
    "formats": 1,
    "published": 2,
    "params": 3,
    "telemetry": 3,
    "monitor": 4,
    "llm": 5,
    "task": 6,
    "report": 7,
    "summary": 8,
    "jobs": 9,
    "results": 10,
    "pooling": 11,
    "plots": 12,
    "sweeps": 13,
    "fleet": 14,
    "api": 15,
    "cli": 16,
    "__main__": 17,
}
SUBPACKAGES = (
    "core",
    "boundary",
    "params",
    "formats",
    "telemetry",
    "monitor",
    "llm",
    "task",
    "published",
    "report",
    "summary",
    "jobs",
    "results",
    "pooling",
    "plots",
    "sweeps",
    "fleet",
    "cli",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # None: the package root itself


def imports_of(path: Path) -> set[str]:
    """ecocompute modules a file imports (anywhere in it)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("ecocompute")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "ecocompute":
                found |= {f"ecocompute.{a.name}" for a in node.names}
            elif node.module.startswith("ecocompute."):
                found.add(node.module)
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {
        name: {m for m in imports_of(path) if m in modules and m != name}
        for name, path in modules.items()
    }


def test_every_module_belongs_to_a_known_room():
    unknown = {m for m in graph() if room(m) is not None and room(m) not in RANK}
    assert unknown == set()


def test_no_module_imports_a_higher_room():
    upward = [
        f"{m} ({room(m)}) imports {d} ({room(d)})"
        for m, deps in graph().items()
        for d in deps
        if room(m) is not None and room(d) is not None and RANK[room(d)] > RANK[room(m)]
    ]
    assert upward == []


def test_the_import_graph_has_no_cycles():
    g = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(g[node]):
            if state.get(dep) == 1:
                cycles.append(" -> ".join([*path[path.index(dep) :], dep]))
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node, [node])
    assert cycles == []


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_says_what_it_holds_and_may_import(name):
    doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text()))
    assert doc and doc.startswith(f"{name}:") and "May import:" in doc


def _calls_of(name: str) -> list[str]:
    """Where the package calls a function of this name (module: line)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == name:
                    found.append(f"{module_name(path)}:{node.lineno}")
    return found


def test_measured_or_published_is_decided_in_one_place():
    # the published path's outcome is made at one call site (task/run.py), and its
    # report sections at one (report/build.py's build_report)
    assert [c.split(":")[0] for c in _calls_of("published_run")] == ["ecocompute.task.run"]
    assert [c.split(":")[0] for c in _calls_of("published_report")] == ["ecocompute.report.build"]
    assert [c.split(":")[0] for c in _calls_of("measured_report")] == ["ecocompute.report.build"]
    # and a report's figures are derived at one place too, whoever derives them
    assert {c.split(":")[0] for c in _calls_of("derive_results")} <= {
        "ecocompute.report.build",
        "ecocompute.report.checks",
        "ecocompute.report.compare",  # the checker's rounding bounds of an older format
    }


def test_the_top_of_the_package_holds_the_api_and_little_else():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


def test_no_module_is_over_600_lines():
    """Modules are sized by what they hold, not by a cap; this only catches one that
    has grown into several."""
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert long == {}


def _writes_to_a_stream(tree: ast.AST) -> list[int]:
    """Lines that print, or write to sys.stdout / sys.stderr (flushing is not writing)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Name) and f.id == "print") or (
            isinstance(f, ast.Attribute)
            and f.attr in ("write", "writelines")
            and isinstance(f.value, ast.Attribute)
            and f.value.attr in ("stdout", "stderr")
        ):
            lines.append(node.lineno)
    return lines


def test_only_the_command_line_prints():
    """The library returns data; cli/ renders it (boundary/ holds the process's edges)."""
    printing = {
        f"{module_name(p)}:{line}"
        for p in PACKAGE.rglob("*.py")
        if room(module_name(p)) not in ("cli", "boundary", "__main__")
        for line in _writes_to_a_stream(ast.parse(p.read_text()))
    }
    assert printing == set()
    assert _writes_to_a_stream(ast.parse("import sys\nprint(1)\nsys.stderr.write('x')")) == [2, 3]


def test_every_name_a_package_exports_is_there():
    """__all__ lists only names the module has (a star import would raise otherwise)."""
    import importlib

    missing = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        listed = [
            elt.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
            for elt in node.value.elts
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str)
        ]
        if listed:
            module = importlib.import_module(module_name(path))
            gone = [name for name in listed if not hasattr(module, name)]
            if gone:
                missing[module_name(path)] = gone
    assert missing == {}
