import sys
p=sys.argv[1]
s=open(p).read()
old='''        if (sums_inside_int) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) result.v[k] = saturate_inside_int<Out>(partial[0][k]);
        } else {'''
new='''        if constexpr (std::is_same_v<Out, unsigned char> && kVec % 4 == 0) {
          if (sums_inside_int) {
#pragma unroll
            for (int w = 0; w < kVec / 4; ++w) {
              int n[4];
#pragma unroll
              for (int i = 0; i < 4; ++i)
                n[i] = __float_as_int(__fadd_rn(fmaxf(partial[0][4 * w + i], -4194304.0f), 12582912.0f)) - 0x4B400000;
              unsigned high, word;
              asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(high) : "r"(n[3]), "r"(n[2]), "r"(0));
              asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(word) : "r"(n[1]), "r"(n[0]), "r"(high));
              memcpy(&result.v[4 * w], &word, 4);
            }
          } else {
#pragma unroll
            for (int k = 0; k < kVec; ++k) result.v[k] = saturate_from_float<Out>(partial[0][k]);
          }
        } else if (sums_inside_int) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) result.v[k] = saturate_inside_int<Out>(partial[0][k]);
        } else {'''
assert old in s; s=s.replace(old,new)
open(p,'w').write(s)
