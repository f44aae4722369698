// SPDX-License-Identifier: Apache-2.0
// One warp-level FP16 MMA with FP32 accumulation (mma.sync m16n8k16) on the device, for the test of
// the accumulation model that tensor_mma_error_bound assumes (tests/gpu/test_gpu_tensor_mma.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace cuconv::test {

/// D = C + A B for `count` independent problems: A 16x16 FP16 bits row-major (256 a problem), B
/// 16x8 FP16 bits stored column by column (column n's 16 values at 16 n; 128 a problem), C and D
/// 16x8 floats row-major (128 a problem). Runs on the current device (sm_80 or newer).
[[nodiscard]] std::vector<float> mma_f16_f32_on_device(const std::vector<std::uint16_t>& a,
                                                       const std::vector<std::uint16_t>& b, const std::vector<float>& c,
                                                       int count);

}  // namespace cuconv::test
