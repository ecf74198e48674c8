#!/usr/bin/env python3
"""Prints the strongly connected components of more than one module in the
crate's import graph (top-level modules of src/: `crate::X` and, inside a
module's own files, `super::` stays inside it). Exit 1 when there is one.

A module is a file `src/X.rs` or a directory `src/X/`; an edge X -> Y is any
mention of `crate::Y` in X's files (use lines and paths alike), tests
included, since a test-only cycle still ties the modules together."""
import os, re, sys

root = os.path.join(os.path.dirname(__file__), "..", "src")
mods = {}
for name in os.listdir(root):
    path = os.path.join(root, name)
    if name.endswith(".rs") and name not in ("lib.rs", "main.rs"):
        mods.setdefault(name[:-3], []).append(path)
    elif os.path.isdir(path):
        for d, _, files in os.walk(path):
            mods.setdefault(name, []).extend(os.path.join(d, f) for f in files if f.endswith(".rs"))
edges = {m: set() for m in mods}
pat = re.compile(r"crate::([a-z_][a-z0-9_]*)")
for m, files in mods.items():
    for f in files:
        text = open(f).read()
        # `use crate::{a, b::c}` groups
        for group in re.findall(r"crate::\{([^}]*)\}", text):
            for part in re.split(r"[,\s]+", group):
                head = part.split("::")[0].strip()
                if head in mods and head != m:
                    edges[m].add(head)
        for target in pat.findall(text):
            if target in mods and target != m:
                edges[m].add(target)

index, low, stack, on, out = {}, {}, [], set(), []
counter = [0]
sys.setrecursionlimit(10000)
def strong(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        out.append(comp)
for v in sorted(mods):
    if v not in index:
        strong(v)
bad = [sorted(c) for c in out if len(c) > 1]
for c in bad:
    print("cycle:", " <-> ".join(c))
    for a in c:
        print("  ", a, "->", ", ".join(sorted(e for e in edges[a] if e in c)))
if "-v" in sys.argv:
    for m in sorted(edges):
        print(m, "->", ", ".join(sorted(edges[m])))
sys.exit(1 if bad else 0)
