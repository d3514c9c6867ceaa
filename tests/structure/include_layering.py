#!/usr/bin/env python3
"""Fails when two folders of src/ include each other, directly or in a circle,
or when a folder includes one it must not know (FORBIDDEN).

The layering (DESIGN.md section 2, docs/layout.md) is a call going down api ->
dispatch -> mode -> algo -> transport, never back; an include circle between
folders is the first sign of a call turning back. Usage: include_layering.py SRC_DIR
"""
import os
import re
import sys

# from -> folders it must not include, and why.
FORBIDDEN = {
    'api': ({'gpu'}, 'api/ describes a call and submits it to dispatch/, which decides '
                     'host or device'),
    'comm': ({'gpu', 'mask', 'ternary', 'subnet', 'dispatch', 'api', 'plan'},
             'comm/ knows no mode and no device'),
    'gpu': ({'mask', 'ternary', 'subnet', 'dispatch', 'api'},
            'gpu/ is the device runtime; modes build on it'),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/', re.M)


def folder_edges(src):
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    edges = {f: {} for f in folders}  # from -> {to: a file that includes it}
    for top in folders:
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in files:
                if not name.endswith(('.h', '.cc', '.cu', '.def', '.cuh')):
                    continue
                path = os.path.join(root, name)
                with open(path, encoding='utf-8', errors='replace') as f:
                    for to in INCLUDE.findall(f.read()):
                        if to in folders and to != top:
                            edges[top].setdefault(to, os.path.relpath(path, src))
    return edges


def circles(edges):
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
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
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else 'src'
    edges = folder_edges(src)
    found = circles(edges)
    for comp in found:
        print('include circle between src/ folders: ' + ' '.join(comp))
        for a in comp:
            for b in comp:
                if b in edges[a]:
                    print('  %s -> %s (%s)' % (a, b, edges[a][b]))
    bad = 0
    for a, (banned, why) in sorted(FORBIDDEN.items()):
        for b in sorted(banned & set(edges.get(a, {}))):
            print('%s includes %s (%s): %s' % (a, b, edges[a][b], why))
            bad += 1
    if not found and not bad:
        print('no include circle among %d folders of %s, no forbidden include' %
              (len(edges), src))
    return 1 if found or bad else 0


if __name__ == '__main__':
    sys.exit(main())
