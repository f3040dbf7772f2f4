"""The package's size by room, two ways: every line (`wc -l`), and code lines only (no
blank line, comment or docstring), for issue 28's size figures.

    python benchmarks/code_size.py [ecocompute]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def docstring_lines(tree: ast.Module) -> set[int]:
    """Line numbers of every docstring (module, class, function)."""
    lines: set[int] = set()
    nodes = [
        tree,
        *(
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        ),
    ]
    for node in nodes:
        first = node.body[0] if node.body else None
        value = first.value if isinstance(first, ast.Expr) else None
        if first is not None and isinstance(value, ast.Constant) and isinstance(value.value, str):
            lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(path: Path) -> int:
    text = path.read_text()
    skip = docstring_lines(ast.parse(text))
    count = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and number not in skip:
            count += 1
    return count


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "ecocompute")
    rooms: dict[str, tuple[int, int]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        room = parts[0] if len(parts) > 1 else "(top)"
        total, code = rooms.get(room, (0, 0))
        rooms[room] = (total + len(path.read_text().splitlines()), code + code_lines(path))
    print(f"{'room':<12} {'lines':>7} {'code':>7}")
    for room, (total, code) in sorted(rooms.items()):
        print(f"{room:<12} {total:>7} {code:>7}")
    both = [rooms.get(r, (0, 0)) for r in ("report", "results")]
    print(f"{'report+results':<12} {sum(t for t, _ in both):>5} {sum(c for _, c in both):>7}")
    print(
        f"{'all':<12} {sum(t for t, _ in rooms.values()):>7} {sum(c for _, c in rooms.values()):>7}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
