# The collectives benchmark table of docs/perf/ll14 (median us per call, NVSHMEM over tmashmem):
#   python3 docs/perf/ll14/table.py docs/perf/ll14/final
import csv,sys,glob,os
d=sys.argv[1]
rows={}
for f in sorted(glob.glob(d+'/coll_*.csv')):
    name=os.path.basename(f)[:-4]
    for r in csv.DictReader(open(f)):
        rows[(name,r['op'],int(r['bytes']))]=float(r['time_us_median'])
names=sorted({k[0] for k in rows})
ops=sorted({(k[1],k[2]) for k in rows}, key=lambda x:(x[0],x[1]))
for np_ in ('np2','np4'):
  for g in ('g0','g1'):
    cols=[n for n in names if n.startswith('coll_%s_%s_'%(np_,g))]
    print('\n',np_,g,' | '.join(c.split('_',3)[3] for c in cols), '| nv/ll16K nv/ll0')
    for op,b in ops:
        vals=[rows.get((c,op,b)) for c in cols]
        nv=[v for c,v in zip(cols,vals) if '_nv_' in c][0] if any('_nv_' in c for c in cols) else None
        l16=[v for c,v in zip(cols,vals) if 'll16K' in c][0]
        l0=[v for c,v in zip(cols,vals) if 'll0_' in c][0]
        print('%-14s %8d '%(op,b)+' '.join('%7.2f'%v if v else '    -  ' for v in vals), ' %5.2f %5.2f'%((nv/l16) if nv and l16 else 0,(nv/l0) if nv and l0 else 0))
