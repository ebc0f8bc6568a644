#!/usr/bin/env python3
# ratios.py DIR: the benchmark ratios (GEMM alone / fused) of call1's logs, per variant and pass.
import collections, glob, gzip, os, re, sys
d = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(os.path.join(d, '*.log')) + glob.glob(os.path.join(d, '*.log.gz'))):
    name = re.sub(r'\.log(\.gz)?$', '', os.path.basename(f))
    m = re.match(r'([A-Z0-9]+)\.(np\d)(\.ag)?(?:\.(\d))?$', name)
    if not m: continue
    var, np, ag = m.group(1), m.group(2), m.group(3) or ''
    for line in (gzip.open(f, 'rt', errors='replace') if f.endswith('.gz') else open(f, errors='replace')):
        if not line.startswith('csv,'): continue
        p = line.rstrip('\n').split(',')
        if len(p) < 6: continue
        title, ratio, what = p[1], p[4], p[5]
        if not re.search(r'fused|unfused|copy warps|A not kept', what): continue
        try: r = float(ratio)
        except ValueError: continue
        rows[(np + ag, title, what)][var].append(r)
vars_ = ['M', 'Q', 'F', 'F2', 'P', 'X', 'QT', 'FT']
print('| PEs | shape | variant | ' + ' | '.join(vars_) + ' |')
print('|---|---|---|' + '---|' * len(vars_))
for k in sorted(rows):
    cells = []
    for v in vars_:
        x = rows[k].get(v)
        cells.append('' if not x else (f'{min(x):.3f}' if len(x) == 1 else f'{min(x):.3f}-{max(x):.3f}'))
    print(f'| {k[0]} | {k[1]} | {k[2]} | ' + ' | '.join(cells) + ' |')
