import sys
p=sys.argv[1]
s=open(p).read()
old='''#pragma unroll
        for (int q = 0; q < K; ++q)
#pragma unroll
          for (int j = 0; j < K; ++j)
#pragma unroll
            for (int k = 0; k < kVec; ++k)
              partial[q][k] = fmaf(taps.w[(K - 1 - q) * K + j], in[kFirstTap + k + j * Channels], partial[q][k]);'''
new='''#pragma unroll
        for (int q = 0; q < K; ++q) {
          if (kStaged && r + q < K - 1) continue;  // output row above the strip: never stored
#pragma unroll
          for (int j = 0; j < K; ++j)
#pragma unroll
            for (int k = 0; k < kVec; ++k)
              partial[q][k] = fmaf(taps.w[(K - 1 - q) * K + j], in[kFirstTap + k + j * Channels], partial[q][k]);
        }'''
assert old in s; s=s.replace(old,new)
open(p,'w').write(s)
