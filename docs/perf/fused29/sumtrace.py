#!/usr/bin/env python3
# sumtrace.py LOG...: medians over rounds and PEs of the sum load's phases (us per half-tile).
import collections, gzip, re, statistics, sys
acc = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sys.argv[1:]:
    for line in (gzip.open(f, 'rt', errors='replace') if f.endswith('.gz') else open(f, errors='replace')):
        if not line.startswith('sumtrace,'): continue
        p = line.rstrip('\n').split(',')
        title, rnd, var = p[1], p[2], p[3]
        kv = {}
        for x in p[5:]:
            m = re.match(r'(.*) ([-0-9.]+)$', x)
            if m: kv[m.group(1)] = float(m.group(2))
        if kv.get('sum half-tiles per wg', 0) == 0: continue
        for k, v in kv.items(): acc[(f.split('/')[-1], title, var)][k].append(v)
for k, d in sorted(acc.items()):
    print(k[0], '|', k[1], '|', k[2], '|', ', '.join(f'{n} {statistics.median(v):.2f}' for n, v in d.items()))
