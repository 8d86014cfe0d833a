#!/usr/bin/env python3
"""Calls between the module's units (dm-ssdprio-target.c and engine/*.c).

    tests/depgraph.py            print the edges and any cycle
    tests/depgraph.py --check    exit 1 on an edge against LAYERS or a cycle

A unit calls another when it names a function or variable defined (not
static) in that one.  engine/units gives the intended one-way order: a
unit may use units in later layers only.  --check also fails on a .c file
of engine/ that engine/units does not list, and on a unit that
docs/design.md's table of units does not name (or names and the list
does not).
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_units():
    """engine/units: {unit: layer}."""
    layer = {}
    with open(os.path.join(REPO, "engine", "units")) as f:
        for line in f:
            w = line.split()
            if w and not w[0].startswith("#"):
                layer[w[0]] = int(w[1])
    return layer


def design_units():
    """The units docs/design.md's "Units" table names."""
    names, on = set(), False
    with open(os.path.join(REPO, "docs", "design.md")) as f:
        for line in f:
            if line.startswith("## "):
                on = line.strip() == "## Units"
                continue
            m = re.match(r"\| `(?:engine/)?([\w-]+)\.c` \|", line)
            if on and m:
                names.add(m.group(1))
    return names

DEF = re.compile(r"^(?!static\b)[a-z_][\w \*]*?\b(\w+)\s*\(", re.M)


def strip(src):
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    return re.sub(r'"(\\.|[^"\\])*"', '""', src)


def units():
    files = {"dm-ssdprio-target": os.path.join(REPO, "dm-ssdprio-target.c")}
    d = os.path.join(REPO, "engine")
    for f in sorted(os.listdir(d)):
        if f.endswith(".c"):
            files[f[:-2]] = os.path.join(d, f)
    return {u: strip(open(p).read()) for u, p in files.items()}


def main():
    src = units()
    owner = {}
    for u, s in src.items():
        for m in DEF.finditer(s):
            # A definition: the line ends the declarator and a body follows.
            rest = s[m.end():]
            depth, i = 1, 0
            while i < len(rest) and depth:
                depth += {"(": 1, ")": -1}.get(rest[i], 0)
                i += 1
            if rest[i:].lstrip().startswith("{"):
                owner[m.group(1)] = u
    edges = {}
    for u, s in src.items():
        for name in set(re.findall(r"\b[a-z_]\w*\b", s)):
            v = owner.get(name)
            if v and v != u:
                edges.setdefault((u, v), []).append(name)
    rank = read_units()
    unlisted = sorted(set(src) - set(rank))
    for u in unlisted:
        print(f"UNLISTED {u}: not in engine/units")
    undocumented = sorted(set(rank) ^ design_units())
    for u in undocumented:
        print(f"UNDOCUMENTED {u}: engine/units and docs/design.md's units differ")
    bad = []
    for (u, v), names in sorted(edges.items()):
        ok = rank.get(u, -1) < rank.get(v, -1)
        if not ok:
            bad.append((u, v))
        print(f"{'  ' if ok else 'BACK'} {u} -> {v}: {', '.join(sorted(names)[:6])}"
              f"{' ...' if len(names) > 6 else ''}")
    # Cycles (strongly connected components of more than one unit).
    graph = {}
    for u, v in edges:
        graph.setdefault(u, set()).add(v)
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(u):
        index[u] = low[u] = n[0]
        n[0] += 1
        stack.append(u)
        on.add(u)
        for v in graph.get(u, ()):
            if v not in index:
                visit(v)
                low[u] = min(low[u], low[v])
            elif v in on:
                low[u] = min(low[u], index[v])
        if low[u] == index[u]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == u:
                    break
            if len(c) > 1:
                sccs.append(sorted(c))

    for u in src:
        if u not in index:
            visit(u)
    for c in sccs:
        print("cycle:", " <-> ".join(c))
    print(f"{len(edges)} edges, {len(bad)} against the layers, {len(sccs)} cycles")
    if "--check" in sys.argv and (bad or sccs or unlisted or undocumented):
        sys.exit(1)


if __name__ == "__main__":
    main()
