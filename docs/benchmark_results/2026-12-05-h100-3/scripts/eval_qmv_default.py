#!/usr/bin/env python3
"""qmv.affine's default past 8 rows, re-costed from this run's tunes: for every rows-16 and
rows-32 bucket (batch-invariant numerics, so every admitted config has the default's K order and
was timed in the tune's triage, interleaved), the triage median of the config a candidate rule
names over the fastest admitted one, geomean over the buckets, beside the v9 default's. A rule
whose config was not a candidate of a bucket falls back to that bucket's default. The rule
'bytes<8MB or k<=1536' is the one qmv_affine_default took (docs/notes/qmv_affine.md, v10).

    python3 docs/benchmark_results/2026-12-05-h100-3/scripts/eval_qmv_default.py
"""
import json,lzma,glob,re,math,collections,sys
import os
D=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'decode_matrix') + '/'
op='qmv.affine'
files=sorted(glob.glob(D+op+'_*/matrix.json.xz'))
def cta(ks, w2, p8, p16):
    return {1:(1,1,4),2:(2,1,w2),4:(4,1,4),8:((4,2,4) if p8 else (8,1,8))}.get(ks, (8,2,8) if p16 else (16,1,16))
def tac(r,ks,o,asy=0,w2=2,p8=False,p16=False):
    wk,sk,w=cta(ks,w2,p8,p16)
    s=f"{op}.mma:rows_per_cta={r},warps={w},warps_k={wk},outputs_per_warp={o},split_k={sk}"
    if asy: s+=",async=1"
    return s
def ks_of(t):
    m=dict(re.findall(r'(\w+)=(\d+)',t)); return int(m['warps_k'])*int(m['split_k'])
cells=[]
for f in files:
    d=json.load(lzma.open(f,'rt'))
    for t in d['tunes']:
        rows=int(t['bucket'].split(',')[0].split('=')[1])
        if rows<=8: continue
        med={c['tactic']:c['median_s'] for c in t['candidates'] if c['status']=='ok' and c.get('median_s')}
        fb=dict(p.split('=') for p in t['bucket'].split(','))
        cells.append((rows,int(fb['n']),int(fb['k']),int(fb['bits']),ks_of(t['default']),t['default'],med))
def rule_small_large(small):
    def r(rows,n,k,bits,ks):
        if rows<=16: return tac(8,ks,16) if small(n,k,bits) else tac(16,ks,32)
        return tac(16,ks,16) if small(n,k,bits) else tac(32,ks,32)
    return r
rules={
 'current': None,
 'bytes<8MB': rule_small_large(lambda n,k,b: n*k*b/8 < 8e6),
 'bytes<8MB or k<=1536': rule_small_large(lambda n,k,b: n*k*b/8 < 8e6 or k<=1536),
 'k<=2048': rule_small_large(lambda n,k,b: k<=2048),
 'k<=1536': rule_small_large(lambda n,k,b: k<=1536),
 'tiles<=256 or k<=1536': rule_small_large(lambda n,k,b: n<=4096 and n*k*b/8<8e6 or k<=1536),
 'all small': rule_small_large(lambda n,k,b: True),
 'all large': rule_small_large(lambda n,k,b: False),
}
_taken = rule_small_large(lambda n,k,b: n*k*b/8 < 8e6 or k<=1536)
# The rule qmv_affine_default took: the above below 16 K slices, the v9 default at 16.
rules['taken (16 slices keep v9)'] = lambda rows,n,k,bits,ks: None if ks >= 16 else _taken(rows,n,k,bits,ks)
for name,rule in rules.items():
    for rr in (16,32):
        costs=[];worse=0;fall=0;wst=(0,'')
        for rows,n,k,bits,ks,deft,med in cells:
            if rows!=rr: continue
            best=min(med.values()); base=med[deft]
            t=deft if rule is None else rule(rows,n,k,bits,ks)
            if t is None: t=deft
            elif t not in med: t=deft; fall+=1
            c=med[t]/best; costs.append(c)
            if c>base/best*1.02: worse+=1
            if c/(base/best)>wst[0]: wst=(c/(base/best),f'{n}x{k} i{bits}')
        print(f'{name:28s} rows {rr}: cost {math.exp(sum(map(math.log,costs))/len(costs)):.3f} worse-than-current>2%: {worse:2d} fallback {fall:2d} worst vs current {wst[0]:.3f} {wst[1]}')
print()
rule=rules['taken (16 slices keep v9)']
for rows,n,k,bits,ks,deft,med in cells:
    best=min(med.values()); base=med[deft]; t=rule(rows,n,k,bits,ks)
    if t is None: continue
    if t not in med: print('fallback', rows,n,k,bits,ks, t.split(':')[1]); continue
    if med[t]>base*1.02: print('worse', rows,n,k,bits,'ks',ks, '%.3f vs %.3f'%(med[t]/best, base/best), t.split(':')[1])
