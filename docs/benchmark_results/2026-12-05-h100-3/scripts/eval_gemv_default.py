#!/usr/bin/env python3
"""gemv.bf16's default past 8 rows, re-costed from this run's batch-invariant tunes, as
eval_qmv_default.py does for qmv.affine: per rows-16 and rows-32 bucket, the triage median of the
config a rule names over the fastest admitted one (all of the default's K order), geomean over
the buckets. 'small->r16o16' (17-32 rows in two groups of 16 on weights under 8 MB) is the rule
gemv_bf16_default took; the third, which also gives large K=4096 matrices two m16 tiles per
warp, was left out: it made 6144 x 4096 9 % slower (docs/notes/gemv_bf16.md, v4).

    python3 docs/benchmark_results/2026-12-05-h100-3/scripts/eval_gemv_default.py
"""
import json,lzma,glob,re,math
import os
D=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'decode_matrix') + '/'
op='gemv.bf16'
files=sorted(glob.glob(D+op+'_?of2/matrix.json.xz'))
def ks_of(t):
    m=dict(re.findall(r'(\w+)=(\d+)',t)); return int(m['warps_k'])*int(m['split_k'])
def sub(t, **kw):
    h,_,body=t.partition(':'); f=dict(x.split('=') for x in body.split(','))
    for k,v in kw.items():
        if v is None: f.pop(k,None)
        else: f[k]=str(v)
    order=['rows_per_cta','warps','warps_k','outputs_per_warp','split_k','vec','async']
    return h+':'+','.join(f'{k}={f[k]}' for k in order if k in f)
cells=[]
for f in files:
    d=json.load(lzma.open(f,'rt'))
    for t in d['tunes']:
        rows=int(t['bucket'].split(',')[0].split('=')[1])
        if rows<=8: continue
        med={c['tactic']:c['median_s'] for c in t['candidates'] if c['status']=='ok' and c.get('median_s')}
        fb=dict(p.split('=') for p in t['bucket'].split(','))
        cells.append((rows,int(fb['n']),int(fb['k']),t['default'],med))
def ra(rows,n,k,d):
    if rows<=16: return d
    return sub(d,rows_per_cta=16) if n*k*2<8e6 else d
def rb(rows,n,k,d):
    if rows<=16: return d
    if n*k*2<8e6: return sub(d,rows_per_cta=16)
    if k>=4096 and n*k>=16e6 and n!=6144: return sub(d,outputs_per_warp=32)
    return d
def rc(rows,n,k,d):
    if rows<=16: return d
    if n*k*2<8e6: return sub(d,rows_per_cta=16)
    if k>=4096 and n*k>=16e6: return sub(d,outputs_per_warp=32)
    return d
for name,rule in (('current',None),('small->r16o16',ra),('+large k>=4096 ->o32',rc)):
    for rr in (16,32):
        cs=[];worse=0;fall=0
        for rows,n,k,d,med in cells:
            if rows!=rr: continue
            best=min(med.values()); t=d if rule is None else rule(rows,n,k,d)
            if t not in med: t=d; fall+=1
            cs.append(med[t]/best); worse+= med[t]>med[d]*1.02
        print(f'{name:24s} rows {rr}: {math.exp(sum(map(math.log,cs))/len(cs)):.3f} worse {worse} fallback {fall}')
for rows,n,k,d,med in cells:
    if rows!=32: continue
    t=rc(rows,n,k,d); print(n,k, d.split(':')[1], '->', t.split(':')[1] if t!=d else 'same', 'in' if t in med else 'MISSING', '%.3f -> %.3f'%(med[d]/min(med.values()), med.get(t,med[d])/min(med.values())))
