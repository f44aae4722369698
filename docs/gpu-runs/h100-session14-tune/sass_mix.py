#!/usr/bin/env python3
"""Executed SASS by opcode from an ncu source page (ncu -i REP --page source --csv --print-source sass).
usage: sass_mix.py SOURCE.csv [N]   (N most frequent opcodes; .xz files are read too)"""
import collections
import csv
import lzma
import sys

path = sys.argv[1]
opener = lzma.open if path.endswith('.xz') else open
with opener(path, 'rt') as f:
    rows = list(csv.reader(f))
header = rows[1]
source, executed, samples = (header.index(k) for k in ('Source', 'Instructions Executed',
                                                        'Warp Stall Sampling (All Samples)'))
body = [r for r in rows[2:] if len(r) == len(header)]
total = sum(int(r[executed]) for r in body)
total_samples = sum(int(r[samples]) for r in body) or 1
by_op, samples_by_op = collections.Counter(), collections.Counter()
for r in body:
    words = r[source].split()
    if not words:
        continue
    op = words[1] if words[0].startswith('@') else words[0]
    by_op[op] += int(r[executed])
    samples_by_op[op] += int(r[samples])
print(f'{path}: {total / 1e6:.1f} M warp instructions executed')
for op, n in by_op.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 25):
    print(f'  {op:28s} {100 * n / total:6.2f}%   stall samples {100 * samples_by_op[op] / total_samples:5.1f}%')
