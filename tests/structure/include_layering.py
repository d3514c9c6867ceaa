#!/usr/bin/env python3
"""Fails when two folders of src/ include each other, directly or in a circle,
when a folder includes one it must not know (FORBIDDEN), or when a file on a
host call's way down includes a folder it must not (FORBIDDEN_FILES: the seam
never names gpu/, so host buffers never enter it).

The layering (DESIGN.md section 2, docs/layout.md) is a call going down api ->
dispatch -> mode -> algo -> transport, never back; an include circle between
folders is the first sign of a call turning back. Usage: include_layering.py SRC_DIR
"""
import os
import re
import sys

# The folders that are not a mode; every other folder of src/ is one (mask/,
# ternary/, subnet/, topk/, ...), so a new mode's folder is held to the rules
# below without an edit here.
NOT_MODES = {'api', 'dispatch', 'plan', 'algo', 'coll', 'comm', 'core', 'gpu', 'topo', 'tools'}
MODES = object()  # stands for every mode folder in FORBIDDEN

# from -> folders it must not include, and why.
FORBIDDEN = {
    'api': ({'gpu'}, 'api/ describes a call and submits it to dispatch/, which decides '
                     'host or device'),
    'comm': ({'gpu', MODES, 'dispatch', 'api', 'plan'}, 'comm/ knows no mode and no device'),
    'gpu': ({MODES, 'dispatch', 'api'}, 'gpu/ is the device runtime; modes build on it'),
    'plan': ({'gpu', MODES, 'dispatch', 'api'},
             'plan/ decides host or device below gpu/: gpu/ answers for pointers through '
             'the query it installs (plan/memory_kind.h)'),
}

# file (relative to src/) -> folders it must not include, and why: the files a
# call on host buffers passes through on its way to a mode.
FORBIDDEN_FILES = {
    'dispatch/dispatch.h': ({'gpu'}, 'host buffers never enter gpu/: the seam asks '
                                     'plan::ChooseMemory, a mode reaches its device path'),
    'dispatch/dispatch.cc': ({'gpu'}, 'host buffers never enter gpu/: the seam asks '
                                      'plan::ChooseMemory, a mode reaches its device path'),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/', re.M)


def folder_edges(src, file_edges):
    """from folder -> {to folder: a file that includes it}; fills file_edges
    (file relative to src -> the set of folders it includes)."""
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    edges = {f: {} for f in folders}
    for top in folders:
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in files:
                if not name.endswith(('.h', '.cc', '.cu', '.def', '.cuh')):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, src)
                with open(path, encoding='utf-8', errors='replace') as f:
                    for to in INCLUDE.findall(f.read()):
                        if to in folders and to != top:
                            edges[top].setdefault(to, rel)
                            file_edges.setdefault(rel, set()).add(to)
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
    file_edges = {}
    edges = folder_edges(src, file_edges)
    found = circles(edges)
    for comp in found:
        print('include circle between src/ folders: ' + ' '.join(comp))
        for a in comp:
            for b in comp:
                if b in edges[a]:
                    print('  %s -> %s (%s)' % (a, b, edges[a][b]))
    bad = 0
    modes = set(edges) - NOT_MODES
    for a, (named, why) in sorted(FORBIDDEN.items()):
        banned = {f for f in named if f is not MODES} | (modes if MODES in named else set())
        for b in sorted(banned & set(edges.get(a, {}))):
            print('%s includes %s (%s): %s' % (a, b, edges[a][b], why))
            bad += 1
    for path, (banned, why) in sorted(FORBIDDEN_FILES.items()):
        if not os.path.exists(os.path.join(src, path)):
            print('%s is gone: update FORBIDDEN_FILES' % path)
            bad += 1
            continue
        for b in sorted(banned & file_edges.get(path, set())):
            print('%s includes %s/: %s' % (path, b, why))
            bad += 1
    if not found and not bad:
        print('no include circle among %d folders of %s, no forbidden include' %
              (len(edges), src))
    return 1 if found or bad else 0


if __name__ == '__main__':
    sys.exit(main())
