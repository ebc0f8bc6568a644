# B (low_latency.cuh before the flag-period change) time over A (this tree), per row: the
# median of each launch's time_us_median; A and C (the same build here) for the spread.
#   python3 docs/perf/ll16/abratio.py docs/perf/ll16/call2
import csv,glob,collections,sys,statistics as st
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(sys.argv[1]+'/coll_np*_g*_*_l*.csv'):
    _,np,g,v,l=f.split('/')[-1][:-4].split('_')
    for r in csv.DictReader(open(f)):
        d[(np,g,r['op'],int(r['bytes']))][v].append(float(r['time_us_median']))
print('np graph op bytes | A us (3 launches) | B us | C us | B/A (median) | C/A')
for k in sorted(d):
    x=d[k]
    if not all(v in x for v in 'ABC'): continue
    a,b,c=(st.median(x[v]) for v in 'ABC')
    print(*k,'| %s | %s | %s | %.3f | %.3f'%(' '.join('%.2f'%t for t in x['A']),' '.join('%.2f'%t for t in x['B']),' '.join('%.2f'%t for t in x['C']),b/a,c/a))
