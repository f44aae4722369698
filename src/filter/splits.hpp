// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rank-1 (separable) filters: k[i][j] = vertical[i] * horizontal[j]. A separable kh x kw filter
// costs kw + kh multiply-adds per output instead of kw * kh. Also the integer splits of the
// weights that `tensor` feeds to tensor cores (rank-1 and dense) and their error bounds, judged
// by the same pass-rule test. Defined in filter/rank1_splits.cpp (factoring, the rank-1 paths'
// bounds, separable_for), filter/dense_splits.cpp (dense_tensor_for) and filter/splits.cpp
// (filter_splits, which keeps recent answers).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace cuconv::filter {

struct SeparableFactors {
  std::vector<float> horizontal;        ///< kw weights, applied along each row first
  std::vector<float> vertical;          ///< kh weights, applied down the columns
  std::vector<double> horizontal_wide;  ///< the same factors before rounding to float
  std::vector<double> vertical_wide;
  bool exact = false;            ///< every float product equals the float weight exactly
  bool fits_float_rank1 = true;  ///< float row and column sums (`fast`) meet the pass rule
  bool fits_tensor_split =
      false;  ///< 8-bit results from the FP16 row split and FP32 column sums (tensor_split) meet it
  bool fits_tensor_mma_split = false;  ///< the same with the column pass on tensor cores too (tensor_mma_error_bound)
  bool fits_double_rank1 = false;      ///< 16-bit results from double row and column sums (fast_wide.cuh) meet it
};

/// The horizontal weights as `tensor` feeds them to FP16 tensor cores: h * 2^exponent rounded to
/// integers H = 2048 * high + low, |high| <= 2048 and |low| <= 1024 (both exact in FP16), so
/// the row sums of 8-bit pixels are exact integers (kernels/tensor_separable.cuh).
struct TensorSplit {
  int exponent = 0;
  std::vector<int> high;
  std::vector<int> low;
  double quantization = 0.0;  ///< sum_j |h_j - H_j / 2^exponent|: what the rounding to integers changes
};

/// The split of `horizontal`; nullopt when every weight is zero or not finite.
[[nodiscard]] std::optional<TensorSplit> tensor_split(const std::vector<float>& horizontal);

/// Largest error of `tensor` on 8-bit input against the exact sum: the factorisation's and the
/// split's change of the weights, the rounding of each exact row sum to float, and kh float
/// multiply-adds down the column (n = kh + 1 rounding steps; the row sums add none).
[[nodiscard]] double tensor_error_bound(const SeparableFactors& f, const TensorSplit& split,
                                        const std::vector<double>& weights, double delta);

/// How `tensor`'s both-passes kernel (kernels/tensor_separable_mma.cuh) scales a split: the row
/// sums by 2^-sigma (below 2^15, so their FP16 high part is finite), the vertical weights by 2^tau
/// (the largest in [2^14, 2^15): their FP16 low parts stay clear of the subnormals). nullopt when
/// the scaled horizontal parts are not exact in FP16, every vertical weight is zero, or the
/// kernel's output scale 2^(sigma - exponent - tau) is no normal float.
struct TensorMmaScales {
  int sigma = 0;
  int tau = 0;
};

/// Largest side of a filter that kernel takes, and the 16-row steps of row sums one 16-row output
/// step reads for kh rows of weights (16 + kh - 1 rows: 2 up to 17, 3 up to 33); the kernel's
/// tensor_mma_vertical_steps must agree (src/gpu/launch/launch_tensor.cu checks it).
inline constexpr int kTensorMmaMaxSide = 31;
[[nodiscard]] constexpr int tensor_mma_row_steps(int kh) { return kh <= 17 ? 2 : 3; }
[[nodiscard]] std::optional<TensorMmaScales> tensor_mma_scales(const TensorSplit& split,
                                                               const std::vector<float>& vertical);

/// Whether a finite double is a binary16 value (normal or subnormal) exactly.
[[nodiscard]] bool exact_in_half(double v);

/// Largest error of that kernel on 8-bit input against the exact sum: the factorisation's and the
/// split's change of the weights, the row sums' float rounding and FP16 split, the vertical
/// weights' FP16 split, the dropped product of the two low parts, the tensor cores' FP32
/// accumulation (assumed at most (k + 1) 2^-23 of the largest of an MMA's k = 16 products and C:
/// NVIDIA does not specify it; tests/gpu/test_gpu_tensor_mma.cpp checks it on the device), and the
/// epilogue's additions.
[[nodiscard]] double tensor_mma_error_bound(const SeparableFactors& f, const TensorSplit& split,
                                            const TensorMmaScales& scales, const std::vector<double>& weights,
                                            double delta);

/// Largest sides of a filter `tensor` sums densely on tensor cores: 8-bit images on their own
/// kernel (kernels/tensor_dense.cuh); float, 16-bit and larger 8-bit filters on the planes kernel
/// (kernels/tensor_dense_planes.cuh).
inline constexpr int kTensorDenseMaxSide = 17;
inline constexpr int kTensorDensePlanesMaxSide = 31;

/// Largest error bound, relative to the 32F pass rule's scale (sum |w| max |x| + |delta|), with
/// which float images take `tensor`'s dense kernel: half the rule's 1e-5.
inline constexpr double kDenseFloatErrorLimit = 5e-6;

/// A dense filter as `tensor`'s dense kernels feed it to byte MMAs: every weight w * 2^exponent
/// rounded to an integer H written as signed base-256 digits (three; four for 16-bit images),
/// summed with the pixels (8-bit images) or with the pixels' own digits (float and 16-bit images)
/// in exact 32-bit chains.
struct DenseTensorSplit {
  int exponent = 0;
  /// kh x kw row-major each: w * 2^exponent ~ d0 + 256 d1 + 65536 d2 (+ 2^24 d3), |d| <= 128
  std::vector<std::vector<int>> digits;
  double bound =
      0.0;  ///< largest error against the exact sum: absolute for 8- and 16-bit, relative to the rule's scale for float
  bool holds = false;  ///< results meet the pass rule
};

/// The split of a kh x kw row-major filter for 8-bit input and the given delta, with its error
/// bound (the weights' rounding to integers, the epilogue's two float FMAs joining the digit
/// chains, the final scaling and delta) and whether results then meet the pass rule (the bound under
/// kSeparableErrorLimit and no flat area at a tie, as separable_for judges `tensor`). nullopt
/// when every weight is zero, one is not finite, or 2^-exponent would leave float's normal range.
/// The planes kernel (sides past kTensorDenseMaxSide) joins the chains in double, within the same bound.
[[nodiscard]] std::optional<DenseTensorSplit> dense_tensor_split(const std::vector<double>& weights, int kw, int kh,
                                                                 double delta);

/// The split for float input and output (largest weight scaled into (2^21, 2^22]), with the bound
/// of kernels/tensor_dense_planes.cuh relative to sum |w| max |x| + |delta| (the weights' and the
/// pixels' rounding, the three dropped low digit products, the epilogue) and `holds` when it is at
/// most kDenseFloatErrorLimit. nullopt as dense_tensor_split.
[[nodiscard]] std::optional<DenseTensorSplit> dense_tensor_split_float(const std::vector<double>& weights, int kw,
                                                                       int kh);

/// The split for 16-bit input and output: four digits (largest weight scaled into (2^29, 2^30]), with
/// the absolute bound of kernels/tensor_dense_planes.cuh (the weights' rounding, which keeps their
/// sum to the nearest integer, the double epilogue and delta in float)
/// and `holds` when the bound is under kSeparableErrorLimit and the kernel's arithmetic, emulated
/// for every flat area (one 16-bit value under the whole window), rounds each as the exact sum;
/// never where a sum may leave int's range (65535 sum |w| + |delta| >= 2^31), where filter2D's
/// rounding gives the lowest value. nullopt as dense_tensor_split.
[[nodiscard]] std::optional<DenseTensorSplit> dense_tensor_split_u16(const std::vector<double>& weights, int kw, int kh,
                                                                     double delta);

/// The split `tensor` uses for these depths: 8-bit, float or 16-bit in and out up to
/// kTensorDensePlanesMaxSide; nullopt for other depths and sizes.
[[nodiscard]] std::optional<DenseTensorSplit> dense_tensor_for(const std::vector<double>& weights, int kw, int kh,
                                                               int input_depth, int output_depth, double delta);

/// Factors a kh x kw row-major filter when it is rank 1 within `relative_tolerance` of its
/// largest weight. Among the possible scalings it prefers one whose float products reproduce the
/// weights bit for bit (gaussian presets with power-of-two sums, Sobel, ...), so results agree
/// with the direct sum on exactly representable sums.
[[nodiscard]] std::optional<SeparableFactors> factor_separable(const std::vector<double>& weights, int kw, int kh,
                                                               double relative_tolerance = 1e-6);

/// Largest error of the separable float evaluation (a kw-term row pass, then a kh-term column
/// pass from `delta`) against the exact sum, for inputs in [0, max_input]: the factorisation's own
/// change of each weight plus the rounding of n = kw + kh + 1 float steps.
[[nodiscard]] double separable_error_bound(const SeparableFactors& f, const std::vector<double>& weights,
                                           double max_input, double delta);

/// Largest error of the double-precision separable evaluation (kernels/fast_wide.cuh: the double
/// factors, kw row FMAs, kh column FMAs from `delta`; kernels/fast_wide_mma.cuh: the same terms
/// through FP64 MMAs) against the exact sum, for inputs in [0, max_input]: the factorisation's
/// change of each weight plus the rounding steps of unit 2^-53 either takes (kw + kh + 1 on the
/// FMA units; up to 4 a k-step of the MMAs, counted as if each product and addition rounded).
[[nodiscard]] double wide_error_bound(const SeparableFactors& f, const std::vector<double>& weights, double max_input,
                                      double delta);

/// An integer result rounds the other way than the exact sum only when the exact sum lies within
/// the error bound of a tie (n + 1/2). Below this bound such sums are rare enough on any image
/// without flat areas at a tie (checked in separable_for) for the pass rule's 0.1%; docs/accuracy.md,
/// "Each path's rounding and bound", has the bound.
inline constexpr double kSeparableErrorLimit = 5e-4;

/// The factors `fast` may use, or nullopt when it must sum densely. Float outputs: any rank-1
/// filter (the float rule is relative, and one pass of kw and one of kh terms round less than a
/// kw * kh sum). Integer outputs: 8U input with short dyadic factors (multiples of 1/256, at most
/// 16 in magnitude, products equal to the weights: the presets' gaussians, Sobel, 2^n boxes) give
/// exact sums, so ties round exactly as the direct sum. Other rank-1 filters on 8U input are taken
/// when the error bound stays under kSeparableErrorLimit and no flat area (every pixel of the
/// window equal, any byte value) sums to within the bound of a tie: results then meet the pass rule
/// against the exact sum (a result off by one needs an exact sum within the bound of n + 1/2).
/// 16U input to 16U output: float sums leave too few bits below the unit, so `fast` is never
/// set; `fits_double_rank1` says whether double sums meet the rule (wide_error_bound, the same
/// flat-area test over every 16-bit value), and nullopt when they do not.
/// For 8-bit input and integer output `fits_float_rank1`, `fits_tensor_split` and
/// `fits_tensor_mma_split` say which of the evaluations holds the rule (tensor_error_bound for the
/// second, tensor_mma_error_bound up to 31 rows of weights for the third; the dyadic presets are
/// exact on the first two); nullopt when none does.
[[nodiscard]] std::optional<SeparableFactors> separable_for(const std::vector<double>& weights, int kw, int kh,
                                                            int input_depth, int output_depth, double delta);

/// What a job derives from its filter alone: separable_for and dense_tensor_for of one request.
struct FilterSplits {
  std::optional<SeparableFactors> separable;
  std::optional<DenseTensorSplit> dense_tensor;
};

/// Answers each thread keeps for its most recent distinct requests (filter_splits).
inline constexpr std::size_t kFilterSplitsKept = 8;

/// separable_for and dense_tensor_for of a request, answered from this thread's last
/// kFilterSplitsKept distinct requests when it is one of them (weights, sides, depths and delta bit
/// for bit equal). A batch asks once an image with the same filter, and the answers' bounds
/// emulate flat areas and tensor-core steps (their cost: docs/accuracy.md, "Filter analysis per job").
[[nodiscard]] FilterSplits filter_splits(const std::vector<double>& weights, int kw, int kh, int input_depth,
                                         int output_depth, double delta);

/// How many requests filter_splits has computed rather than answered from the kept ones (all threads).
[[nodiscard]] std::uint64_t filter_split_computations() noexcept;

}  // namespace cuconv::filter
