#!/usr/bin/env python3
"""Fail when the top-level modules of a crate import each other in a loop.

Reads every `crate::<module>` path (and `super::<module>` in a top-level module's own
file) in each crate's `src/` (comments skipped), builds the
graph of top-level modules, and prints each strongly connected component of more than one
module with the lines that close it. Run from the repository root:

    python3 infra/scripts/module-loops.py            # every crate of the workspace
    python3 infra/scripts/module-loops.py shared/core/src
"""

import collections
import os
import re
import sys

USE = re.compile(r"crate::([a-z_][a-z0-9_]*)")
# In a top-level module's own file (`foo.rs`, `foo/mod.rs`), `super::` is the crate root.
SUPER = re.compile(r"(?<![a-z_:])super::([a-z_][a-z0-9_]*)")


def top_module(relative):
    first = relative.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def graph(src):
    modules = {top_module(name) for name in os.listdir(src)} - {"lib", "main"}
    edges = collections.defaultdict(set)
    lines = collections.defaultdict(list)
    for folder, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, src)
            module = top_module(relative)
            if module not in modules:
                continue
            at_top = os.sep not in relative or relative == os.path.join(module, "mod.rs")
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if line.lstrip().startswith("//"):
                        continue
                    targets = USE.findall(line) + (SUPER.findall(line) if at_top else [])
                    for target in targets:
                        if target != module and target in modules:
                            edges[module].add(target)
                            lines[(module, target)].append(f"{path}:{number}")
    return sorted(modules), edges, lines


def loops(modules, edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
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
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def crates():
    for parent in ("shared", "functions", "infra", "tests"):
        if not os.path.isdir(parent):
            continue
        for name in sorted(os.listdir(parent)):
            src = os.path.join(parent, name, "src")
            if os.path.isdir(src):
                yield src


def main():
    sources = sys.argv[1:] or list(crates())
    failed = False
    for src in sources:
        modules, edges, lines = graph(src)
        for component in loops(modules, edges):
            failed = True
            print(f"{src}: modules import each other in a loop: {', '.join(component)}")
            for a in component:
                for b in component:
                    if b in edges[a]:
                        print(f"  {a} -> {b}: {', '.join(lines[(a, b)][:3])}")
    if not failed:
        print(f"module-loops: no loop among the top-level modules of {len(sources)} crates")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
