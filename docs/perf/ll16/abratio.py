# Each variant's time over A's, per row, from ab.sh / run.sh CSVs (coll_np{P}_g{G}_{V}_l{L}.csv):
# the per-launch time_us_median values, and the ratio of their medians. call1, call2: A = this
# tree, B = before the flag-period change, C = the zeroing out of line (= A in call1); call3:
# D = the step split into two instantiations (split_step.patch).
#   python3 docs/perf/ll16/abratio.py docs/perf/ll16/call3
import collections, csv, glob, statistics as st, sys

d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(sys.argv[1] + '/coll_np*_g*_*_l*.csv'):
    _, np, g, v, _ = f.split('/')[-1][:-4].split('_')
    for r in csv.DictReader(open(f)):
        d[(np, g, r['op'], int(r['bytes']))][v].append(float(r['time_us_median']))
V = sorted({v for x in d.values() for v in x})
print('np graph op bytes | ' + ' | '.join(f'{v} us' for v in V) + ' | ' +
      ' | '.join(f'{v}/A' for v in V if v != 'A'))
for k in sorted(d):
    x = d[k]
    if any(v not in x for v in V):
        continue
    a = st.median(x['A'])
    times = ' | '.join(' '.join('%.2f' % t for t in x[v]) for v in V)
    print(*k, '|', times, '|', ' | '.join('%.3f' % (st.median(x[v]) / a) for v in V if v != 'A'))
