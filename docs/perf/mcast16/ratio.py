# The ratios of docs/perf/mcast16/ratios.txt: for each (PEs, sources, CTAs, size), per build
# (A, B1, B2 of run.sh), the puts' time over the fan-out's and the hand-written fan-out's over
# the fallback's (range over the passes), and the fallback's mean time in us.
#   python3 docs/perf/mcast16/ratio.py docs/perf/mcast16/out
import csv,glob,collections,sys
d=collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1]+'/mcast_np*_src*_*_p*.csv')):
    name=f.split('/')[-1][:-4]; _,np,src,v,p=name.split('_')
    for r in csv.DictReader(open(f)):
        d[(np,src,int(r['sms']),int(r['bytes']))][(v,p,r['op'])]=float(r['time_us_median'])
V=sorted({k[0] for x in d.values() for k in x})
P=sorted({k[1] for x in d.values() for k in x})
print('np src sms bytes | ' + ' | '.join(f'{v}: puts/fan hand/fan fan_us' for v in V))
for k in sorted(d):
    x=d[k]; cells=[]
    for v in V:
        a=[x[(v,p,'put_per_pe')]/x[(v,p,'multicast_store')] for p in P if (v,p,'multicast_store') in x]
        b=[x[(v,p,'store_per_pe')]/x[(v,p,'multicast_store')] for p in P if (v,p,'multicast_store') in x]
        t=[x[(v,p,'multicast_store')] for p in P if (v,p,'multicast_store') in x]
        cells.append('%.2f-%.2f %.2f-%.2f %6.3f'%(min(a),max(a),min(b),max(b),sum(t)/len(t)))
    print(*k,'|',' | '.join(cells))
