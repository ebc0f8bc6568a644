# ratios.py OPS CSV...: per (SM count, size) the range over the CSVs of each op's GB/s median over the plain SM copy of its direction (smcopy_put / smcopy_get).
import csv,collections,sys
files=sys.argv[2:]; ops=sys.argv[1].split(',')
rows=collections.defaultdict(list)
for f in files:
  for r in csv.DictReader(open(f)):
    rows[(r['op'],int(r['sms']),int(r['bytes']))].append(float(r['gbps_median']))
print('sms bytes  '+'  '.join(ops))
for sms in (16,32,66,132):
  for b in (65536,262144,1048576,4194304):
    out=[]
    for op in ops:
      ref='smcopy_put' if op.endswith('put') else 'smcopy_get'
      rr=[a/c for a,c in zip(rows[(op,sms,b)],rows[(ref,sms,b)])]
      out.append('%.2f-%.2f'%(min(rr),max(rr)) if rr else '-')
    print(sms,b,'  '.join(out))
