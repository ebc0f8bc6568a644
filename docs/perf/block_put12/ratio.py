import csv,sys,collections
# usage: ratio.py label=file.csv ...  -> block_{put,get}/smcopy ratio per (op,sms,bytes)
res=collections.defaultdict(dict)
labels=[]
for a in sys.argv[1:]:
    lab,f=a.split('=');labels.append(lab)
    rows=list(csv.DictReader(open(f)))
    ref={(r['op'].split('_')[1],r['sms'],r['bytes']):float(r['gbps_median']) for r in rows if r['op'].startswith('smcopy')}
    for r in rows:
        if r['op'].startswith('smcopy'): continue
        k=(r['op'],r['sms'],r['bytes'])
        res[k][lab]=float(r['gbps_median'])/ref[(r['op'].split('_')[1],r['sms'],r['bytes'])]
        if r['check']!='ok': print('CHECK',lab,k,r['check'])
print('op sms bytes', *labels)
for k in sorted(res,key=lambda k:(k[0],int(k[1]),int(k[2]))):
    print(*k, *['%.2f'%res[k].get(l,0) for l in labels])
