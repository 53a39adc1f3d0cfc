#!/usr/bin/env python3
"""Folder-level include graph of the tree: for each folder of src/, tools/ and python/src, the folders its files
include ("..." includes resolved against the file's folder, src/ and include/), then any cycle (Tarjan)."""
import os, re, sys, collections
root = sys.argv[1] if len(sys.argv) > 1 else '.'
inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
files = []
for top in ['src', 'tools/ckey', 'tools/bench', 'python/src', 'include']:
    for dp, dn, fn in os.walk(os.path.join(root, top)):
        for f in fn:
            if f.endswith(('.c', '.h', '.cu', '.cuh', '.cpp')):
                files.append(os.path.relpath(os.path.join(dp, f), root))
def resolve(src, inc):
    d = os.path.dirname(src)
    for base in [d, 'src', 'include']:
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(os.path.join(root, p)): return p
    return None
g = collections.defaultdict(set)
edges = collections.defaultdict(list)
for f in files:
    txt = open(os.path.join(root, f), errors='replace').read()
    for inc in inc_re.findall(txt):
        p = resolve(f, inc)
        if not p: continue
        a, b = os.path.dirname(f), os.path.dirname(p)
        if a != b:
            g[a].add(b); edges[(a, b)].append(f + ' -> ' + p)
for a in sorted(g): print(f'{a:24s} -> {", ".join(sorted(g[a]))}')
# cycles (Tarjan)
idx, low, st, on, out, n = {}, {}, [], set(), [], [0]
def sc(v):
    idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
    for w in g.get(v, ()):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: out.append(comp)
for v in list(g): 
    if v not in idx: sc(v)
print('cycles:', out if out else 'none')
for comp in out:
    for a in comp:
        for b in comp:
            if (a, b) in edges: print('  ', a, '->', b, ':', edges[(a, b)][:3])
