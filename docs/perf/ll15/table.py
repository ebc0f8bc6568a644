# The fifteenth session's collectives table (median us per call over both launches), beside
# NVSHMEM and beside the fourteenth session's run of the same rows with the LL form wherever
# it fits (docs/perf/ll14/final, TMASHMEM_COLL_LL_BYTES=1M: the same form as the default
# 256K for pieces of up to 256 KiB per peer):
#   python3 docs/perf/ll15/table.py docs/perf/ll15 docs/perf/ll14/final
import collections, csv, glob, os, statistics, sys

def load(folder):
    rows = collections.defaultdict(list)
    for path in glob.glob(os.path.join(folder, 'coll_*.csv')):
        _, np_, g, form, _ = os.path.basename(path)[:-4].split('_')
        for r in csv.DictReader(open(path)):
            rows[(np_, g, form, r['op'], int(r['bytes']), int(r['sms']))].append(float(r['time_us_median']))
    return {k: statistics.median(v) for k, v in rows.items()}

now, before = load(sys.argv[1]), load(sys.argv[2])
for np_ in ('np2', 'np4'):
    pes = int(np_[2:])
    for g in ('g0', 'g1'):
        print('\n%s %s (graph %s)    n_sms 0     2     4   nvshmem nv/t(0) | ll14 1M  now/ll14' % (np_, g, g[1]))
        for (n, gg, form, op, b, s), t in sorted(now.items()):
            if (n, gg, form, s) != (np_, g, 'll256K', 0):
                continue
            alt = [now.get((n, gg, form, op, b, x)) for x in (2, 4)]
            nv, old = now.get((n, gg, 'nv', op, b, 0)), before.get((n, gg, 'll1M', op, b, 0))
            piece = b if op in ('allreduce', 'broadcast') else b // pes
            ref = '%7.2f  %6.3f' % (old, t / old) if old and piece <= 256 * 1024 and b else '      -       -'
            print('%-14s %8d %6.2f %5.2f %5.2f %7.2f %6.2f   | %s' % (op, b, t, *(a or 0 for a in alt), nv or 0, nv / t if nv else 0, ref))
