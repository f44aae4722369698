// SPDX-License-Identifier: Apache-2.0
#pragma once
// How `tensor`'s warpgroup kernel (kernels/tensor_dense_wgmma.cuh) is launched: the input as a
// tensor map for the box copies, and the grid. Shared by its launcher (launch_tensor_wgmma.cu) and
// bench/wgmma_tune.cu, which times the kernel alone exactly as the product launches it. Both are
// built for sm_90a only.
#include "gpu/launch/occupancy.cuh"  // resident_blocks, strip_rows_for_waves, strip_grid

#include <kernels/tensor_dense_wgmma.cuh>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstddef>

namespace cuconv::gpu {

/// The driver's tensor-map encoder, found once through the runtime (no link to libcuda); null
/// where the driver has none.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encoder = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUCONV_CUDA_TRY(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found));
    return found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function)
                                                : nullptr;
  }();
  return encoder;
}

/// The one-channel 8-bit input (rows 16-byte aligned) as a 2-D tensor map whose boxes are one slab
/// of the kernel for a kh-row filter: 16 bytes by wgmma_staged_rows(kh) rows. False where the
/// driver cannot encode it (the caller then runs the mma.sync kernel).
inline bool wgmma_source_map(CUtensorMap& map, const void* src, std::size_t pitch, int width, int height, int kh) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(width), static_cast<cuuint64_t>(height)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(pitch)};
  const cuuint32_t box[2] = {16, static_cast<cuuint32_t>(kernels::wgmma_staged_rows(kh))};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(src), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// The grid: blocks of 128 columns, and rows of blocks from the resident blocks at the largest
/// filter (cached per kernel): one per 256 rows (four 64-row tiles a block, which takes every
/// gridDim.y-th tile), more below four waves.
inline dim3 wgmma_grid(int width, int height) {
  using namespace kernels;
  const int column_blocks = (width + kWgmmaTileColumns - 1) / kWgmmaTileColumns;
  const int resident = resident_blocks<tensor_dense_wgmma_kernel<kWgmmaMaxSide, true>>(
      kWgmmaThreads, static_cast<std::size_t>(wgmma_shared_bytes(kWgmmaMaxSide)));
  const int strip_rows = strip_rows_for_waves(height, column_blocks, resident, 4 * kWgmmaTileRows, kWgmmaTileRows);
  return strip_grid(column_blocks, height, strip_rows);
}

}  // namespace cuconv::gpu
