import csv, sys, collections, statistics, glob, os
# usage: ab.py DIR  (DIR holds base_1.csv base_2.csv new_1.csv new_2.csv)
d = sys.argv[1]
def load(prefix):
    t = collections.defaultdict(list); dflt = {}
    for f in sorted(glob.glob(os.path.join(d, prefix + '_*.csv'))):
        for r in csv.DictReader(open(f)):
            cell = (int(r['group']), int(r['n']), int(r['k']), int(r['rows']))
            t[cell + (r['candidate'],)].append(float(r['us']))
            if r['default'] == '1': dflt[cell] = r['candidate']
    return {k: statistics.mean(v) for k, v in t.items()}, dflt
b, bd = load('base'); n, nd = load('new')
cells = sorted({k[:4] for k in n}, key=lambda c: (c[0], -c[1], c[2], c[3]))
print('group shape rows | default base -> new (ratio) | best base -> best new (ratio) | new best config')
ratios = []
for c in cells:
    bc = {k[4]: v for k, v in b.items() if k[:4] == c}; nc = {k[4]: v for k, v in n.items() if k[:4] == c}
    if not bc: continue
    dn = nd[c]; db = bd[c]
    bb = min(bc, key=bc.get); nb = min(nc, key=nc.get)
    same = [nc[x] / bc[x] for x in nc if x in bc]
    gm = statistics.geometric_mean(same)
    ratios.append(nc[dn] / bc[db])
    print(f"g{c[0]:<3} {c[1]}x{c[2]} r{c[3]:<2} | {bc[db]:7.2f} -> {nc[dn]:7.2f} ({nc[dn]/bc[db]:.3f}) | {bc[bb]:7.2f} -> {nc[nb]:7.2f} ({nc[nb]/bc[bb]:.3f}) | same-config geomean {gm:.3f} | {nb.split(':')[1]}")
print('default new/base geomean', statistics.geometric_mean(ratios))
