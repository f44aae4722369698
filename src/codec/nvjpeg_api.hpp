// SPDX-License-Identifier: Apache-2.0
#pragma once
// nvJPEG, loaded with dlopen when the GPU JPEG codec is first used, as cuFFT is (cufft_api.hpp):
// the binary and its bundle run without it, and `--codec auto` then uses OpenCV. The functions
// cuconv calls are listed once (CUCONV_NVJPEG_FUNCTIONS); the table and the loader are made from
// that list.
#include <nvjpeg.h>

#include <string>

namespace cuconv::codec {

// X(member, symbol) for every nvJPEG function cuconv calls.
#define CUCONV_NVJPEG_FUNCTIONS(X)                                      \
  X(create_ex, nvjpegCreateEx)                                          \
  X(destroy, nvjpegDestroy)                                             \
  X(state_create, nvjpegJpegStateCreate)                                \
  X(state_destroy, nvjpegJpegStateDestroy)                              \
  X(get_image_info, nvjpegGetImageInfo)                                 \
  X(decode, nvjpegDecode)                                               \
  X(batched_initialize, nvjpegDecodeBatchedInitialize)                  \
  X(decode_batched, nvjpegDecodeBatched)                                \
  X(batched_supported, nvjpegDecodeBatchedSupported)                    \
  X(stream_create, nvjpegJpegStreamCreate)                              \
  X(stream_destroy, nvjpegJpegStreamDestroy)                            \
  X(stream_parse, nvjpegJpegStreamParse)                                \
  X(encoder_state_create, nvjpegEncoderStateCreate)                     \
  X(encoder_state_destroy, nvjpegEncoderStateDestroy)                   \
  X(encoder_params_create, nvjpegEncoderParamsCreate)                   \
  X(encoder_params_destroy, nvjpegEncoderParamsDestroy)                 \
  X(encoder_params_set_quality, nvjpegEncoderParamsSetQuality)          \
  X(encoder_params_set_sampling, nvjpegEncoderParamsSetSamplingFactors) \
  X(encode_image, nvjpegEncodeImage)                                    \
  X(encode_yuv, nvjpegEncodeYUV)                                        \
  X(encode_retrieve_bitstream, nvjpegEncodeRetrieveBitstream)

struct NvjpegApi {
// NOLINTNEXTLINE(bugprone-macro-parentheses): the arguments are a member's name and a function's
#define CUCONV_NVJPEG_MEMBER(member, symbol) decltype(&symbol) member = nullptr;
  CUCONV_NVJPEG_FUNCTIONS(CUCONV_NVJPEG_MEMBER)
#undef CUCONV_NVJPEG_MEMBER
};

/// The loaded API, or nullptr with `reason` set (searched: libnvjpeg.so.13 on the loader's path,
/// which includes the bundle's lib/; the folder of the nvidia-nvjpeg wheel the build used;
/// $CUDA_HOME/lib64; /usr/local/cuda/lib64).
[[nodiscard]] const NvjpegApi* nvjpeg_api(std::string* reason = nullptr);

/// "NVJPEG_STATUS_BAD_JPEG" ... for a status code.
[[nodiscard]] const char* nvjpeg_status_name(nvjpegStatus_t status) noexcept;

/// Throws Error{gpu} naming the call and the nvJPEG status when `status` is not success.
void check_nvjpeg(nvjpegStatus_t status, const char* call);

}  // namespace cuconv::codec

/// The nvJPEG form of CUCONV_CUDA_TRY: throws Error{gpu} with the call's text and status.
#define CUCONV_NVJPEG_TRY(call) ::cuconv::codec::check_nvjpeg((call), #call)
