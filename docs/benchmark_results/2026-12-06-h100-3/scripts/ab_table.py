import collections,math,sys
ws=sys.argv[1].split(','); rounds=int(sys.argv[2])
d=collections.defaultdict(dict)
for w in ws:
    for r in range(1,rounds+1):
        for line in open(f'table_{w}_{r}.csv').read().split('\n')[1:]:
            if not line: continue
            f=line.split(',')
            key=(f[2],f[3],f[4],','.join(f[5:-2]))
            d[key].setdefault(w,[]).append(float(f[-2]))
            if f[-1]=='1': d[key]['default']=1
rat=collections.defaultdict(list)
cells=collections.defaultdict(dict)
med=lambda a: sorted(a)[len(a)//2]
for key,v in d.items():
    if any(w not in v for w in ws): continue
    t={w:med(v[w]) for w in ws}
    cand=key[3]
    if 'ahead=2' in cand and 'async' not in cand:
        for w in ws[1:]: rat['ahead2 '+w].append(t[w]/t[ws[0]])
        print(key[0],key[1],key[2],cand.split(':')[1][:64], round(t[ws[0]],2), *[round(t[w]/t[ws[0]],3) for w in ws[1:]])
    cell=key[:3]
    for w in ws:
        cells[cell][w]=min(cells[cell].get(w,1e9),t[w])
        if v.get('default'): cells[cell][w+'_def']=t[w]
for k,v in rat.items(): print(k, len(v), 'geomean',round(math.exp(sum(map(math.log,v))/len(v)),4), 'min',round(min(v),3), 'max',round(max(v),3))
print('cell: best base us; best x/base; default x/base')
for c,v in sorted(cells.items(), key=lambda kv:(-int(kv[0][0])*int(kv[0][1]),int(kv[0][2]))):
    print(c, round(v[ws[0]],2), *[round(v[w]/v[ws[0]],3) for w in ws[1:]], '|', *[round(v.get(w+'_def',0)/v.get(ws[0]+'_def',1),3) for w in ws[1:]])
