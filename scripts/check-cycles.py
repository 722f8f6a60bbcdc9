#!/usr/bin/env python3
"""Import cycles between the modules of each crate of the workspace.

For every crate root (src/lib.rs, src/main.rs, src/bin/*.rs) the module tree is followed through
its `mod` declarations, and every path a file names (`use crate::..`, `use super::..`,
`crate::a::b` and `super::a` in code) is resolved to the module that defines the item, through
`use` re-exports. An import from module A to module B is an edge between the two siblings under
their closest common parent: `knowledge::graph` importing `crate::knowledge::extract::RULE_SET`
is graph -> extract inside `knowledge`, and `knowledge::graph` importing `crate::metrics` is
knowledge -> metrics at the crate's root. A module is not in a cycle with its own parent or
children (a parent owns its children; a child may read its parent's items), and inline modules
(`mod tests { .. }`) belong to their file.

Each strongly connected component of more than one module is printed, with one import per edge.
The script exits non-zero when a component is not allowed by scripts/cycles-allowed.txt: a line
there (`CRATE-ROOT: MOD MOD ..`, `#` starts a comment) allows any component whose modules are all
on that line, so a cycle may shrink but not grow or appear. Python 3 standard library only.

Usage: scripts/check-cycles.py [--all] [--allowed FILE]
  --all       list allowed components too, and the allowlist lines that match no cycle
"""

import argparse
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ITEM = re.compile(
    r"\b(?:fn|struct|enum|union|trait|type|const|static|macro_rules!)\s+([A-Za-z_]\w*)"
)
MOD_DECL = re.compile(r"\bmod\s+([A-Za-z_]\w*)\s*([;{])")
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*$')
USE = re.compile(r"\buse\s+([^;]+);")
CODE_PATH = re.compile(r"(?<![\w$:])(crate|super|self)((?:\s*::\s*[A-Za-z_]\w*)+)")


def blank(text, start, end):
    """`text[start:end]` with everything but newlines turned into spaces."""
    return "".join(c if c == "\n" else " " for c in text[start:end])


def strip(text):
    """The source with comments and string and char literals blanked, lines kept in place."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text, i, j))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text, i, j))
            i = j
        elif re.match(r'b?r#*"', text[i : i + 40]) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'b?r(#*)"', text[i:])
            if m is None:
                out.append(c)
                i += 1
                continue
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append(blank(text, i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text, i, j + 1))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i:])
            if m:
                out.append(blank(text, i, i + m.end()))
                i += m.end()
            else:  # a lifetime or label
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def use_paths(tree):
    """The flat paths of a use tree: `a::{b, c::{d as e, self}}` gives (path, alias) pairs."""
    tokens = re.findall(r"::|[{},*]|[A-Za-z_]\w*", tree)
    results = []

    def walk(prefix, k):
        """Reads one list of trees from token `k` to its closing brace; returns the next."""
        path = list(prefix)
        while k < len(tokens):
            token = tokens[k]
            if token == "}":
                break
            if token == "{":
                k, path = walk(path, k + 1), None
            elif token == ",":
                path = list(prefix)
            elif token == "as" and k + 1 < len(tokens):
                results.append((path, tokens[k + 1]))
                path, k = None, k + 1
            elif token == "::":
                pass
            elif path is not None:
                path.append(token)
                end = k + 1 >= len(tokens) or tokens[k + 1] in (",", "}")
                if end:
                    segs = path[:-1] if token == "self" else path
                    if segs:
                        results.append((segs, segs[-1] if token != "*" else "*"))
                    path = None
            k += 1
        return k

    walk([], 0)
    return results


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of names below the crate root
        self.file = file
        self.children = {}
        self.items = set()
        self.uses = {}  # name -> absolute path (list), from `use` declarations
        self.globs = []  # absolute paths of `use x::*`
        self.refs = []  # (raw path segments, inline depth, line)


def child_file(module, name, attr_path):
    base = os.path.dirname(module.file)
    stem = os.path.basename(module.file)
    if attr_path:
        return os.path.normpath(os.path.join(base, attr_path))
    if stem not in ("lib.rs", "main.rs", "mod.rs") and module.path:
        base = os.path.join(base, stem[:-3])
    for candidate in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
        if os.path.exists(candidate):
            return candidate
    return None


def inline_depths(code):
    """For each offset of `code`, how many inline `mod x { .. }` blocks enclose it."""
    opens = {m.end() - 1 for m in MOD_DECL.finditer(code) if m.group(2) == "{"}
    depths, stack, depth, current = [0] * (len(code) + 1), [], 0, 0
    for k, ch in enumerate(code):
        if ch == "{":
            stack.append(k in opens)
            if k in opens:
                current += 1
        elif ch == "}" and stack:
            if stack.pop():
                current -= 1
        depths[k] = current
    return depths


def load(module, modules):
    with open(module.file, encoding="utf-8") as handle:
        code = strip(handle.read())
    depths = inline_depths(code)

    def line(offset):
        return code.count("\n", 0, offset) + 1

    lines = code.split("\n")
    for m in MOD_DECL.finditer(code):
        name = m.group(1)
        module.items.add(name)
        if m.group(2) != ";" or depths[m.start()] != 0:
            continue
        row = line(m.start()) - 1
        attr = PATH_ATTR.search(lines[row - 1]) if row > 0 else None
        file = child_file(module, name, attr.group(1) if attr else None)
        if file is None:
            continue
        child = Module(module.path + (name,), file)
        module.children[name] = child
        modules[child.path] = child
        load(child, modules)
    for m in ITEM.finditer(code):
        if depths[m.start()] == 0:
            module.items.add(m.group(1))
    used = []
    for m in USE.finditer(code):
        depth, at = depths[m.start()], line(m.start())
        for path, alias in use_paths(m.group(1)):
            used.append((m.start(), m.end()))
            module.refs.append((path, depth, at))
            if depth == 0:
                if alias == "*":
                    module.globs.append(path[:-1])
                elif alias != "_":
                    module.uses[alias] = path
    for m in CODE_PATH.finditer(code):
        if any(start <= m.start() < end for start, end in used):
            continue
        segs = [m.group(1)] + [s.strip() for s in m.group(2).split("::") if s.strip()]
        module.refs.append((segs, depths[m.start()], line(m.start())))


def absolute(module, segs, depth):
    """`segs` as a path from the crate root, or None for another crate's."""
    base = list(module.path)
    segs = list(segs)
    if segs[0] == "crate":
        return segs[1:]
    if segs[0] in ("super", "self"):
        ups = 0
        while segs and segs[0] in ("super", "self"):
            ups += segs[0] == "super"
            segs = segs[1:]
        ups -= depth  # an inline module's `super` is its file
        if ups > len(base):
            return None
        return base[: len(base) - max(ups, 0)] + segs
    if depth == 0 and segs[0] in module.children:
        return base + segs
    if depth == 0 and segs[0] in module.uses and segs[0] not in module.items:
        target = module.uses[segs[0]]
        if target[:1] == [segs[0]]:
            return None  # an extern crate
        resolved = absolute(module, target, 0)
        return None if resolved is None else resolved + segs[1:]
    return None


def resolve(modules, path, seen=None):
    """The module defining the item at `path` (a list from the crate root), re-exports
    followed."""
    seen = seen or set()
    key = tuple(path)
    if key in seen:
        return ()
    seen.add(key)
    module = modules[()]
    k = 0
    while k < len(path) and path[k] in module.children:
        module = module.children[path[k]]
        k += 1
    if k == len(path):
        return module.path
    name = path[k]
    if name in module.items or name in module.children:
        return module.path
    if name in module.uses:
        target = absolute(module, module.uses[name], 0)
        if target is not None:
            return resolve(modules, target + path[k + 1 :], seen)
        return module.path
    for glob in module.globs:
        target = absolute(module, glob, 0)
        if target is None:
            continue
        found = resolve(modules, target + path[k:], seen)
        if found != tuple(target):
            return found
    return module.path


def edges(modules):
    """(from, to) sibling pairs with one example import `file:line` each."""
    found = {}
    for module in modules.values():
        for segs, depth, at in module.refs:
            path = absolute(module, segs, depth)
            if path is None:
                continue
            target = resolve(modules, path)
            source = module.path
            common = 0
            while (
                common < min(len(source), len(target)) and source[common] == target[common]
            ):
                common += 1
            if common in (len(source), len(target)):
                continue  # the same module, an ancestor or a descendant
            a, b = source[: common + 1], target[: common + 1]
            where = f"{os.path.relpath(module.file, ROOT)}:{at}"
            found.setdefault((a, b), f"{where} {'::'.join(segs)}")
    return found


def components(graph):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on, stack, result, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    members.append(top)
                    if top == node:
                        break
                if len(members) > 1:
                    result.append(sorted(members))
    return result


def workspace_members():
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as handle:
        text = handle.read()
    block = re.search(r"^members\s*=\s*\[(.*?)\]", text, re.S | re.M)
    return re.findall(r'"([^"]+)"', block.group(1)) if block else []


def crate_roots(member):
    src = os.path.join(ROOT, member, "src")
    roots = [os.path.join(src, f) for f in ("lib.rs", "main.rs")]
    bins = os.path.join(src, "bin")
    if os.path.isdir(bins):
        roots += [os.path.join(bins, f) for f in sorted(os.listdir(bins)) if f.endswith(".rs")]
    return [r for r in roots if os.path.exists(r)]


def name(path):
    return "::".join(path) or "crate"


def read_allowed(file):
    allowed = []
    if not os.path.exists(file):
        return allowed
    with open(file, encoding="utf-8") as handle:
        for raw in handle:
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            root, _, mods = text.partition(":")
            allowed.append((raw.strip(), root.strip(), set(mods.split())))
    return allowed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true")
    parser.add_argument(
        "--allowed", default=os.path.join(ROOT, "scripts", "cycles-allowed.txt")
    )
    args = parser.parse_args()
    allowed = read_allowed(args.allowed)
    used_lines, failed, total = set(), 0, 0
    for member in workspace_members():
        for root_file in crate_roots(member):
            root = Module((), root_file)
            modules = {(): root}
            load(root, modules)
            found = edges(modules)
            graph = defaultdict(set)
            for a, b in found:
                graph[a].add(b)
                graph.setdefault(b, set())
            label = os.path.relpath(root_file, ROOT)
            for component in components(graph):
                total += 1
                names = {name(p) for p in component}
                match = next(
                    (line for line, r, mods in allowed if r == label and names <= mods), None
                )
                if match is not None:
                    used_lines.add(match)
                    if not args.all:
                        continue
                verdict = "allowed" if match is not None else "CYCLE"
                failed += match is None
                print(f"{verdict} in {label}: {' '.join(sorted(names))}")
                members = set(component)
                for (a, b), where in sorted(found.items()):
                    if a in members and b in members:
                        print(f"  {name(a)} -> {name(b)}  ({where})")
    if args.all:
        for line, _, _ in allowed:
            if line not in used_lines:
                print(f"stale allowlist line (no such cycle now): {line}")
    if failed:
        print(
            f"{failed} import cycle(s) between modules; break them (see the edges above) "
            f"or, for a known one being fixed, list it in {os.path.relpath(args.allowed, ROOT)}",
            file=sys.stderr,
        )
        return 1
    if args.all:
        print(f"{total} cycle(s), all allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
