"""Sum check_run.py outputs (all_checks.txt + full_thunder_check.txt) into totals."""
import re, collections, sys
tot = collections.Counter(); viol = []; runs = []
for fn in sys.argv[1:]:
    cur = None
    for line in open(fn):
        if line.startswith('== results/'):
            cur = line[3:].strip(); runs.append(cur); continue
        if 'VIOLATION' in line:
            viol.append((cur.split('/')[-1], line.strip()[:200])); continue
        m = re.match(r'\s+(.*): (\d+)$', line.rstrip('\n'))
        if m:
            tot[m.group(1)] += int(m.group(2))
print('runs', len(runs))
for k, v in sorted(tot.items()): print(f'{v:>10}  {k}')
print('violations:')
for r, v in viol: print(' ', r, '|', v)
