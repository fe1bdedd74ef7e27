"""List the import circles among a package's modules, and the imports written inside functions.

Only imports that run when a module is loaded count as edges (module level, ``if`` / ``try`` blocks
included; ``if TYPE_CHECKING:`` blocks excluded); ``--all`` counts the imports inside functions too,
which is where a circle hides when it is "broken" by deferring one of its imports. ``from a.b import c``
is an edge to ``a.b.c`` when that is a module, else to ``a.b``. A circle is a strongly connected
component of more than one module (Tarjan 1972).

    python tools/import_circles.py annotate            # circles; exit status 1 if there are any
    python tools/import_circles.py annotate --all      # circles, deferred imports counted
    python tools/import_circles.py annotate --inline   # also every in-function import, by file
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name of every module under the package directory ``root``."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def load_time_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is loaded."""
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node):
                stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(
                node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
            )
        elif isinstance(node, ast.With):
            stack.extend(node.body)


def inline_imports(tree: ast.Module) -> list[int]:
    """Line numbers of imports written inside a function body."""
    lines = []
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(func):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    lines.append(node.lineno)
    return sorted(set(lines))


def all_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import of the module, inside functions too (``if TYPE_CHECKING:`` blocks excluded)."""
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node)
            for n in ast.walk(node)}  # fmt: skip
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip:
            yield node


def import_graph(known: dict[str, Path], *, deferred: bool = False) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        for node in all_imports(tree) if deferred else load_time_imports(tree):
            targets: set[str] = set()
            if isinstance(node, ast.Import):
                for alias in node.names:
                    targets |= {alias.name} & known.keys()
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    targets |= {target if target in known else base} & known.keys()
            graph[name] |= targets - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path, help="the package directory, e.g. annotate")
    parser.add_argument("--all", action="store_true", help="count the imports inside functions as edges")
    parser.add_argument("--inline", action="store_true", help="list the imports inside functions too")
    args = parser.parse_args(argv)
    known = module_names(args.package.resolve())
    found = circles(import_graph(known, deferred=args.all))
    for component in found:
        print("circle:", " <-> ".join(component))
    print(f"{len(found)} circle(s) among {len(known)} modules")
    if args.inline:
        total = 0
        for path in known.values():
            lines = inline_imports(ast.parse(path.read_text(), str(path)))
            if lines:
                total += len(lines)
                print(f"{path.relative_to(args.package.resolve().parent)}: {len(lines)} at {lines}")
        print(f"{total} import(s) inside functions")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
