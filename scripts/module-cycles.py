#!/usr/bin/env python3
"""Prints the import cycles of the crate. Exit 1 when there is one.

Two checks:

1. Top-level modules of src/: the strongly connected components of more
   than one module in their import graph. A module is a file `src/X.rs` or a
   directory `src/X/`; an edge X -> Y is any mention of `crate::Y` in X's
   files (use lines and paths alike), tests included, since a test-only
   cycle still ties the modules together.

2. Files inside each module that has files of its own (a folder, or a file
   `X.rs` beside a folder `X/`): the nodes are the module's own file (its
   `mod.rs`, or `X.rs`, shown as `mod`) and each child module declared with
   `mod name;` (a file, or a folder taken whole). An edge a -> b is a path
   in a's code or doc comments (`super::b`, `self::b`, `crate::…::b`, or
   `b::…` where `b` is in scope as a child module) that leads to b; a path
   to an item of the module itself leads to `mod`. A test module inside a
   file (inline, or a file given by `#[path]`) is part of that file."""
import os, re, sys

root = os.path.join(os.path.dirname(__file__), "..", "src")


def top_level():
    """The crate's top-level modules and the cycles among them."""
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
    return edges


def strong_components(edges):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return [sorted(c) for c in out if len(c) > 1]


# ---- file level ----

IDENT = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")
CHAR = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'")


def tokens(text):
    """The tokens of a Rust file that matter here: identifiers, `::`,
    punctuation and string literals (as ("str", value)); comments are
    dropped but doc comments come back as ("doc", text)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            body = text[i:end]
            if (body.startswith("///") and not body.startswith("////")) or body.startswith("//!"):
                out.append(("doc", body))
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            body = text[i:j]
            if body.startswith("/**") or body.startswith("/*!"):
                out.append(("doc", body))
            i = j
        elif c in "rb" and re.match(r"(?:br|r)#*\"", text[i:i + 260]):
            m = re.match(r"(?:br|r)(#*)\"", text[i:])
            close = '"' + m.group(1)
            start = i + m.end()
            end = text.find(close, start)
            end = n if end < 0 else end
            out.append(("str", text[start:end]))
            i = end + len(close)
        elif c == '"' or (c == "b" and text.startswith('b"', i)):
            j = i + (2 if c == "b" else 1)
            start = j
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(("str", text[start:j]))
            i = j + 1
        elif c == "b" and text.startswith("b'", i) and CHAR.match(text, i + 1):
            i = CHAR.match(text, i + 1).end()
        elif c == "'":
            m = CHAR.match(text, i)
            i = m.end() if m else i + 1  # a char literal, or a lifetime's quote
        elif c == "_" or c.isalpha():
            m = IDENT.match(text, i)
            out.append(("id", m.group(0).removeprefix("r#")))
            i = m.end()
        elif text.startswith("::", i):
            out.append(("p", "::"))
            i += 2
        else:
            out.append(("p", c))
            i += 1
    return out


class File:
    """One source file: its module path and its tokens."""

    def __init__(self, path, modpath, mod_rs):
        self.path = path
        self.modpath = modpath
        self.mod_rs = mod_rs  # lib.rs or mod.rs: child files sit beside it
        self.toks = tokens(open(path).read())


def child_dir(f):
    """The directory a file's `mod x;` children are looked up in."""
    d = os.path.dirname(f.path)
    if f.mod_rs:
        return d
    return os.path.join(d, os.path.basename(f.path)[:-3])


def declarations(f):
    """The `mod name;` and `mod name {` of a file: (inline module path
    inside the file, name, #[path] value or None, inline?)."""
    out, frames, path_attr = [], [], None
    toks = f.toks
    for i, (kind, val) in enumerate(toks):
        if kind == "p" and val == "#" and i + 4 < len(toks):
            # #[path = "x.rs"]
            if toks[i + 1] == ("p", "[") and toks[i + 2] == ("id", "path") and toks[i + 3] == ("p", "=") \
                    and toks[i + 4][0] == "str":
                path_attr = toks[i + 4][1]
        if kind == "id" and val == "mod" and i + 2 < len(toks) and toks[i + 1][0] == "id":
            name, after = toks[i + 1][1], toks[i + 2]
            if after == ("p", ";"):
                out.append((tuple(m for m in frames if m), name, path_attr, False))
            elif after == ("p", "{"):
                out.append((tuple(m for m in frames if m), name, None, True))
            path_attr = None
        if kind == "p" and val == "{":
            named = i >= 2 and toks[i - 2] == ("id", "mod") and toks[i - 1][0] == "id"
            frames.append(toks[i - 1][1] if named else None)
        elif kind == "p" and val == "}" and frames:
            frames.pop()
    return out


def module_tree():
    """Every file of the library crate, by module path, from lib.rs down."""
    files, children = [], {}
    todo = [(os.path.join(root, "lib.rs"), (), True)]
    while todo:
        path, modpath, mod_rs = todo.pop()
        f = File(path, modpath, mod_rs)
        files.append(f)
        for inner, name, attr, inline in declarations(f):
            parent = modpath + inner
            children.setdefault(parent, {})[name] = "inline" if inline else "file"
            if inline:
                continue
            if attr is not None:
                todo.append((os.path.join(os.path.dirname(path), attr), parent + (name,), False))
                continue
            base = os.path.join(child_dir(f), *inner)
            if os.path.exists(os.path.join(base, name + ".rs")):
                todo.append((os.path.join(base, name + ".rs"), parent + (name,), False))
            elif os.path.exists(os.path.join(base, name, "mod.rs")):
                todo.append((os.path.join(base, name, "mod.rs"), parent + (name,), True))
    return files, children


def use_tree(toks, i, prefix, out):
    """Reads a path from toks[i] (after a `::` or at its first segment),
    with `{…}` groups; appends each full path to out, with the name it
    brings into scope (its last segment, or its `as` name). Returns the
    index after it."""
    path = list(prefix)
    while i < len(toks):
        kind, val = toks[i]
        if kind == "id":
            if not (val == "self" and path and len(path) == len(prefix)):
                path.append(val)  # (`{self, …}` names the prefix itself)
            i += 1
            if i < len(toks) and toks[i] == ("p", "::"):
                i += 1
                continue
            alias = path[-1] if path else None
            if i + 1 < len(toks) and toks[i] == ("id", "as"):
                alias = toks[i + 1][1]
                i += 2
            out.append((path, alias))
            return i
        if (kind, val) == ("p", "{"):
            i += 1
            while i < len(toks) and toks[i] != ("p", "}"):
                if toks[i] == ("p", ","):
                    i += 1
                    continue
                before = i
                i = use_tree(toks, i, path, out)
                if i == before:
                    i += 1
            return i + 1
        if (kind, val) == ("p", "*"):
            out.append((path, None))
            return i + 1
        out.append((path, None))
        return i
    out.append((path, None))
    return i


def resolve(path, context, children):
    """An absolute module path for a path written in module `context`, or
    None when it does not start inside the crate."""
    head = path[0]
    if head == "crate":
        return tuple(path[1:])
    if head == "self":
        return context + tuple(path[1:])
    if head == "super":
        here = list(context)
        rest = list(path)
        while rest and rest[0] == "super":
            if not here:
                return None
            here.pop()
            rest.pop(0)
        return tuple(here) + tuple(rest)
    if head in children.get(context, {}):
        return context + tuple(path)
    return None


def references(f, children):
    """(module path of the code, absolute path referred to) for each path
    in the file."""
    out, frames = [], []
    toks = f.toks

    def context():
        return f.modpath + tuple(m for m in frames if m)

    i = 0
    while i < len(toks):
        kind, val = toks[i]
        if kind == "doc":
            i += 1
            continue
        if kind == "p" and val == "{":
            named = i >= 2 and toks[i - 2] == ("id", "mod") and toks[i - 1][0] == "id"
            frames.append(toks[i - 1][1] if named else None)
        elif kind == "p" and val == "}":
            if frames:
                frames.pop()
        elif kind == "id" and i + 1 < len(toks) and toks[i + 1] == ("p", "::"):
            prev = toks[i - 1] if i else None
            starts = prev != ("p", "::") and prev != ("id", "in")
            if starts and (val in ("crate", "self", "super") or val in children.get(context(), {})):
                paths = []
                i = use_tree(toks, i, [], paths)
                for p, _ in paths:
                    if p:
                        target = resolve(p, context(), children)
                        if target is not None:
                            out.append((context(), target))
                continue
        i += 1
    return out


def reexports(f, parent, children):
    """The names a module's own file brings into scope from its children
    (`pub use x::Y;`, `use x::Y;`): name -> child."""
    out, depth, toks = {}, 0, f.toks
    for i, (kind, val) in enumerate(toks):
        if (kind, val) == ("p", "{"):
            depth += 1
        elif (kind, val) == ("p", "}"):
            depth -= 1
        elif depth == 0 and (kind, val) == ("id", "use"):
            paths = []
            use_tree(toks, i + 1, [], paths)
            for path, alias in paths:
                target = resolve(path, parent, children) if path and alias else None
                k = len(parent)
                if target and target[:k] == parent and len(target) > k + 1:
                    if children.get(parent, {}).get(target[k]) == "file":
                        out[alias] = target[k]
    return out


def file_level():
    """For each module with child files: its node graph (see the doc)."""
    files, children = module_tree()
    graphs, names = {}, {}
    for parent, kids in children.items():
        # The crate root's graph is the top-level check's.
        if parent and any(k == "file" for k in kids.values()):
            graphs[parent] = {"mod": set()} | {k: set() for k, how in kids.items() if how == "file"}
    for f in files:
        if f.modpath in graphs:
            names[f.modpath] = reexports(f, f.modpath, children)
    for f in files:
        own = f.modpath
        for context, target in references(f, children):
            for parent, graph in graphs.items():
                k = len(parent)
                if own[:k] != parent or target[:k] != parent or len(target) <= k:
                    continue
                src = own[k] if len(own) > k else "mod"
                if target[k] in graph and target[k] != "mod":
                    dst = target[k]
                elif target[k] in names[parent]:
                    dst = names[parent][target[k]]
                else:
                    continue  # an item of the module's own file
                if src in graph and src != dst:
                    graph[src].add(dst)
    return graphs


def name(parent):
    return "/".join(parent) if parent else "crate"


def main():
    bad = 0
    edges = top_level()
    for c in strong_components(edges):
        bad += 1
        print("cycle:", " <-> ".join(c))
        for a in c:
            print("  ", a, "->", ", ".join(sorted(e for e in edges[a] if e in c)))
    graphs = file_level()
    for parent in sorted(graphs):
        graph = graphs[parent]
        for c in strong_components(graph):
            bad += 1
            print("cycle in %s/: %s" % (name(parent), " <-> ".join(c)))
            for a in c:
                print("  ", a, "->", ", ".join(sorted(e for e in graph[a] if e in c)))
    if "-v" in sys.argv:
        for m in sorted(edges):
            print(m, "->", ", ".join(sorted(edges[m])))
        for parent in sorted(graphs):
            for a in sorted(graphs[parent]):
                print("%s/%s ->" % (name(parent), a), ", ".join(sorted(graphs[parent][a])))
    sys.exit(1 if bad else 0)


main()
