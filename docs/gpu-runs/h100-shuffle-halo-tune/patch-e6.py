import sys
p=sys.argv[1]
s=open(p).read()
old='''#pragma unroll 1
    for (int r = 0; r < input_rows; ++r) process_row(r);'''
new='''    constexpr int kRowUnroll = kStaged ? 1 : K;
#pragma unroll kRowUnroll
    for (int r = 0; r < input_rows; ++r) process_row(r);'''
assert old in s; s=s.replace(old,new)
open(p,'w').write(s)
