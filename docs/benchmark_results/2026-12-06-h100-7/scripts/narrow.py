import csv, sys, re, collections
# usage: narrow.py r16_1.csv [r16_2.csv ...]  -> per cell: default us, and for each k_slices-1 mma config its
# time at warps 4/2/1 (mean over files)
times = collections.defaultdict(list)
defaults = {}
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f)):
        key = (r['bits'], r['group'], r['n'], r['k'], r['rows'])
        times[key + (r['candidate'],)].append(float(r['us']))
        if r['default'] == '1': defaults[key] = r['candidate']
mean = {k: sum(v)/len(v) for k, v in times.items()}
cells = sorted({k[:5] for k in mean}, key=lambda k: (int(k[1]), -int(k[2]), int(k[3]), int(k[4])))
def field(c, name):
    m = re.search(name + r'=(\d+)', c); return int(m.group(1)) if m else 0
for cell in cells:
    d = defaults.get(cell)
    cands = {k[5]: v for k, v in mean.items() if k[:5] == cell}
    best = min(cands, key=cands.get)
    line = f"{cell[1]:>3} {cell[2]}x{cell[3]} r{cell[4]:>2}: default {cands[d]:7.2f} best {cands[best]:7.2f} ({best.split(':')[1][:70]})"
    print(line)
    # families: same config except warps, with warps_k == 1 and split_k == 1
    fam = collections.defaultdict(dict)
    for c, t in cands.items():
        if 'qmv.affine.mma' not in c or field(c, 'warps_k') != 1 or field(c, 'split_k') != 1: continue
        base = re.sub(r'warps=\d+,', '', c)
        fam[base][field(c, 'warps')] = t
    for base, ws in sorted(fam.items(), key=lambda x: min(x[1].values())):
        if 4 in ws and len(ws) > 1:
            tag = base.split(':')[1].replace('warps_k=1,', '').replace('split_k=1', '')
            print(f"     {tag[:60]:60s} w4 {ws[4]:7.2f} " + ' '.join(f"w{w}/w4 {ws[w]/ws[4]:.3f}" for w in (2, 1) if w in ws)
                  + ('  <- default' if d and re.sub(r'warps=\d+,', '', d) == base else ''))
