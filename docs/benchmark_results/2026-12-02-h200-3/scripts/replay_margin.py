"""Replays the switch-margin decision of two tunes from their `hone tune --json` reports, under the
tuner's rule (margin = max(2 %, 3 x the A/A noise floor)) and under two pooled noise estimates
(the median of the A/A floor and the finalists' own ratio spreads; the finalists' spreads alone),
and counts the keys whose picks differ between the tunes. A decision only: the finalists and
their ratios are those each tune measured, and a runoff's pick is kept where it ran.

    python3 replay_margin.py tuneE.json tuneF.json    # the files of run1/ and run2/, unxz'd
"""
import json, statistics, sys
def load(n):
    return {r['key']: r for r in json.load(open(n))['reports']}
E=load(sys.argv[1]); F=load(sys.argv[2])
def pick(r, rule):
    fins=[c for c in r.get('candidates',[]) if c.get('finalist')]
    if not fins or r['op'].startswith('chain'): return r['pick'], r.get('margin',0)
    if rule=='actual': noise=r['noise_floor']
    elif rule=='pooled': noise=statistics.median([r['noise_floor']]+[c.get('ratio_spread') or 0 for c in fins])
    elif rule=='pooledmax': noise=max(statistics.median([c.get('ratio_spread') or 0 for c in fins]), 0)
    margin=max(0.02, 3*noise)
    best=min(fins, key=lambda c: c['ratio'])
    if best['ratio'] < 1-margin:
        # the tune's runoff pick where it ran among finalists that cleared
        if r.get('runoff_ratio') and r['pick']!=r['default']:
            return r['pick'], margin
        return best['tactic'], margin
    return r['default'], margin
for rule in ('actual','pooled','pooledmax'):
    d=[k for k in E if k in F and pick(E[k],rule)[0]!=pick(F[k],rule)[0]]
    sw=sum(1 for k in E if pick(E[k],rule)[0]!=E[k]['default'])
    sw2=sum(1 for k in F if pick(F[k],rule)[0]!=F[k]['default'])
    print(rule, 'differ', len(d), 'switched E', sw, 'F', sw2)
    if rule!='actual':
        for k in d: print('   ', k.split('|')[0], k.split('|')[1][:40], '%.3f %.3f'%(pick(E[k],rule)[1], pick(F[k],rule)[1]))
# check actual rule reproduces real picks
mism=[k for k in E if pick(E[k],'actual')[0]!=E[k]['pick']]
print('replay mismatch E', len(mism), [k[:50] for k in mism[:5]])
