// SPDX-License-Identifier: Apache-2.0
// The cuDNN peer of cuconv_bench, beside bench/npp_peer.cu: a one-channel f32 convolution (cross-correlation, N=C=K=1,
// NCHW, stride 1, padding k/2 so the output has the input's size) on the same image shapes and filter sizes, timed the
// same way (median of CUDA events after warm-up) next to a device-to-device copy of the same bytes measured in the same
// process. Standalone (CUDA + cuDNN only). The GPU nodes have no cuDNN, so scripts/cudnn-peer-pack.sh packs its headers
// and the needed libraries into cudnn-peer.tar.xz, which is carried there; then, on the node:
//
//   tar -xJf cudnn-peer.tar.xz -C /tmp/cudnn    (make /tmp/cudnn first)
//   nvcc -O2 -std=c++17 -arch=native bench/cudnn_peer.cu -I/tmp/cudnn/include -L/tmp/cudnn/lib -lcudnn -o cudnn_peer
//   LD_LIBRARY_PATH=/tmp/cudnn/lib:/usr/local/cuda/lib64 ./cudnn_peer [--reps R] > cudnn.jsonl
//
// With the small JIT-only pack (`cudnn-peer-pack.sh --set jit`, the default: libcudnn, libcudnn_graph and
// libcudnn_engines_runtime_compiled, no legacy libraries and no precompiled kernels) only the graph API works; built
// with cuDNN 9.12 or 9.13 the program then sets CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY itself (unless it is set), and the
// runtime-compiled engines compile with the node's libnvrtc.so.13, hence /usr/local/cuda/lib64 on the library path.
//
// Options: --reps R (timed runs, default 30); --api auto|legacy|graph (default auto: the legacy API, and the graph API
// where the legacy one gives nothing, e.g. without its libraries); --max-workspace-mib M (default 4096); --tf32 (let
// cuDNN use TF32 tensor cores; by default only FMA math, i.e. full f32 like cuconv); --graph-candidates N (how many
// engine configurations of the heuristics the graph API builds and times, default 8; each one of a runtime-compiled
// engine is compiled by NVRTC first); --size N and --filter K (that image size or filter size alone: a fault inside
// cuDNN ends the process, so scripts/gpu-check.sh runs each case in its own).
//
// Legacy API: cudnnFindConvolutionForwardAlgorithmEx runs every algorithm that fits the workspace limit; the fastest
// one that succeeds (and is not a tensor-core one unless --tf32) is timed with cudnnConvolutionForward.
// Graph API: one convolution-forward operation, engine configurations from heuristics modes A and FALLBACK, each
// built into an execution plan and timed briefly; the fastest is timed like the rest.
//
// Differences from cuconv's work:
// - cuDNN pads with zeros only; cuconv's border modes (replicate, reflect, ...) read clamped or mirrored pixels. The
//   arithmetic per output pixel is the same (k*k multiply-adds), the border handling is simpler for cuDNN.
// - cuDNN may pick an FFT algorithm for large filters: the same result by other (fewer) arithmetic; "algo" says which.
// - No 8-bit case: cuDNN's int8 convolution wants NHWC with channel counts that are multiples of 4 and int8 weights,
//   which is not cuconv's computation (float weights applied to u8 pixels), so there is nothing like for like.
// - The weights come from the same generator and seed as npp_peer's f32 cases (same values).
//
// One JSON object per line: a copy line per image ("copy (cudnn_peer)"), then per filter size either the timing
// (variant "cudnn", api, algo, algo_id, math, workspace_bytes, median_ms, gbps, roof_percent) or an "error".
#include "peer_timing.hpp"

#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using peer::check;
using peer::time_median_ms;

enum class Api { kAuto, kLegacy, kGraph };

struct Options {
  int reps = 30;
  Api api = Api::kAuto;
  std::size_t max_workspace = std::size_t{4} << 30;
  bool tf32 = false;
  int graph_candidates = 8;
  int only_size = 0;    // --size: this image size alone (0: all)
  int only_filter = 0;  // --filter: this filter size alone (0: all)
};

// What one filter size gave: a timing, or the reason there is none.
struct Outcome {
  std::string error;  // empty when timed
  const char* api = "";
  std::string algo;
  long long algo_id = -1;
  const char* math = "";
  std::size_t workspace = 0;
  double ms = 0;
};

Outcome failure(const std::string& what, cudnnStatus_t status) {
  Outcome o;
  o.error = what + ": " + cudnnGetErrorString(status);
  return o;
}

Outcome failure(const std::string& what) {
  Outcome o;
  o.error = what;
  return o;
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return r;
}

// The device buffers of one image shape and filter size, and the workspace shared by all cases.
struct Buffers {
  int size = 0;
  int k = 0;
  float* in = nullptr;
  float* out = nullptr;
  float* kernel = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

const char* fwd_algo_name(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "UNKNOWN";
  }
}

const char* math_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_conversion";
    case CUDNN_FMA_MATH:
      return "fma";
    default:
      return "unknown";
  }
}

#define PEER_TRY(what, call)                                                      \
  do {                                                                            \
    const cudnnStatus_t peer_status_ = (call);                                    \
    if (peer_status_ != CUDNN_STATUS_SUCCESS) return failure(what, peer_status_); \
  } while (0)

// ---- Legacy API: cudnnFindConvolutionForwardAlgorithmEx + cudnnConvolutionForward ----

struct LegacyDescriptors {
  cudnnTensorDescriptor_t x = nullptr;
  cudnnTensorDescriptor_t y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~LegacyDescriptors() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
};

Outcome run_legacy(cudnnHandle_t handle, cudaStream_t stream, const Options& opt, const Buffers& b) {
  LegacyDescriptors d;
  PEER_TRY("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&d.x));
  PEER_TRY("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&d.y));
  PEER_TRY("cudnnCreateFilterDescriptor", cudnnCreateFilterDescriptor(&d.w));
  PEER_TRY("cudnnCreateConvolutionDescriptor", cudnnCreateConvolutionDescriptor(&d.conv));
  PEER_TRY("cudnnSetTensor4dDescriptor",
           cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, b.size, b.size));
  PEER_TRY("cudnnSetTensor4dDescriptor",
           cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, b.size, b.size));
  PEER_TRY("cudnnSetFilter4dDescriptor",
           cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, b.k, b.k));
  // Zero padding of k/2 on each side keeps the output at the input's size (cuDNN knows no other border).
  PEER_TRY(
      "cudnnSetConvolution2dDescriptor",
      cudnnSetConvolution2dDescriptor(d.conv, b.k / 2, b.k / 2, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  // CUDNN_DEFAULT_MATH would let cuDNN use TF32 tensor cores for f32 data on Ampere and later.
  PEER_TRY("cudnnSetConvolutionMathType",
           cudnnSetConvolutionMathType(d.conv, opt.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  int n = 0, c = 0, h = 0, w = 0;
  PEER_TRY("cudnnGetConvolution2dForwardOutputDim",
           cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w));
  if (n != 1 || c != 1 || h != b.size || w != b.size) return failure("unexpected output shape");

  int max_count = 0;
  PEER_TRY("cudnnGetConvolutionForwardAlgorithmMaxCount",
           cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max_count, 1)));
  int returned = 0;
  PEER_TRY("cudnnFindConvolutionForwardAlgorithmEx",
           cudnnFindConvolutionForwardAlgorithmEx(handle, d.x, b.in, d.w, b.kernel, d.conv, d.y, b.out,
                                                  static_cast<int>(perf.size()), &returned, perf.data(), b.workspace,
                                                  b.workspace_bytes));
  // The results come fastest first.
  const cudnnConvolutionFwdAlgoPerf_t* chosen = nullptr;
  std::string tried;
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<std::size_t>(i)];
    const bool tensor_op = p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= b.workspace_bytes && (opt.tf32 || !tensor_op)) {
      chosen = &p;
      break;
    }
    tried += std::string(tried.empty() ? "" : ", ") + fwd_algo_name(p.algo) + " " + cudnnGetErrorString(p.status);
  }
  if (chosen == nullptr) return failure("no algorithm succeeded (" + tried + ")");
  PEER_TRY("cudnnSetConvolutionMathType", cudnnSetConvolutionMathType(d.conv, chosen->mathType));

  const float alpha = 1.0f, beta = 0.0f;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  const double ms = time_median_ms(opt.reps, stream, [&] {
    const cudnnStatus_t s = cudnnConvolutionForward(handle, &alpha, d.x, b.in, d.w, b.kernel, d.conv, chosen->algo,
                                                    b.workspace, chosen->memory, &beta, d.y, b.out);
    if (s != CUDNN_STATUS_SUCCESS) status = s;
  });
  if (status != CUDNN_STATUS_SUCCESS) return failure("cudnnConvolutionForward", status);
  Outcome o;
  o.api = "legacy";
  o.algo = fwd_algo_name(chosen->algo);
  o.algo_id = static_cast<long long>(chosen->algo);
  o.math = math_name(chosen->mathType);
  o.workspace = chosen->memory;
  o.ms = ms;
  return o;
}

// ---- Graph (backend) API: operation graph, heuristics, execution plans, cudnnBackendExecute ----

class Descriptor {
 public:
  Descriptor() = default;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor(Descriptor&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(d_, other.d_);
    return *this;
  }
  ~Descriptor() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  cudnnStatus_t create(cudnnBackendDescriptorType_t type) { return cudnnBackendCreateDescriptor(type, &d_); }
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t* ptr() { return &d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

cudnnStatus_t set_attr(const Descriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                       int64_t count, const void* values) {
  return cudnnBackendSetAttribute(d.get(), name, type, count, values);
}

// A 4-d f32 tensor (N, C, H, W). With C = 1 the NCHW and NHWC layouts are the same bytes; the strides are written the
// NHWC way (channel stride 1), the layout the runtime-compiled engines ask for.
cudnnStatus_t make_tensor(Descriptor& t, int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t dims[4] = {n, c, h, w};
  const int64_t strides[4] = {c * h * w, 1, w * c, c};
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  const int64_t alignment = 16;
  cudnnStatus_t s = t.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  if (s == CUDNN_STATUS_SUCCESS) s = set_attr(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  if (s == CUDNN_STATUS_SUCCESS) s = set_attr(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  if (s == CUDNN_STATUS_SUCCESS) s = set_attr(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  if (s == CUDNN_STATUS_SUCCESS) s = set_attr(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  if (s == CUDNN_STATUS_SUCCESS) s = set_attr(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(t.get());
  return s;
}

// One engine configuration built into a plan, with what it is.
struct Plan {
  Descriptor plan;
  Descriptor pack;
  int64_t engine = -1;
  std::size_t workspace = 0;
  bool tensor_core = false;
};

// Engine index and numerical notes of an engine configuration.
cudnnStatus_t describe_config(const Descriptor& config, int64_t* engine, bool* tensor_core) {
  Descriptor e;
  int64_t count = 0;
  cudnnStatus_t s = e.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                 e.ptr());
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendGetAttribute(e.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, engine);
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendGetAttribute(e.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes);
  *tensor_core = false;
  for (int64_t i = 0; s == CUDNN_STATUS_SUCCESS && i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i)
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
        notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
      *tensor_core = true;
  return s;
}

Outcome run_graph(cudnnHandle_t handle, cudaStream_t stream, const Options& opt, const Buffers& b) {
  const int64_t uid_x = 'x', uid_w = 'w', uid_y = 'y';
  Descriptor x, w, y, conv, op, graph;
  PEER_TRY("tensor x", make_tensor(x, uid_x, 1, 1, b.size, b.size));
  PEER_TRY("tensor w", make_tensor(w, uid_w, 1, 1, b.k, b.k));
  PEER_TRY("tensor y", make_tensor(y, uid_y, 1, 1, b.size, b.size));

  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2, ones[2] = {1, 1}, pad[2] = {b.k / 2, b.k / 2};  // zero padding, as in the legacy path
  PEER_TRY("convolution descriptor", conv.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  PEER_TRY("conv compute type", set_attr(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  PEER_TRY("conv mode", set_attr(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  PEER_TRY("conv dims", set_attr(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial));
  PEER_TRY("conv dilations", set_attr(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones));
  PEER_TRY("conv strides", set_attr(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones));
  PEER_TRY("conv pre-padding", set_attr(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  PEER_TRY("conv post-padding", set_attr(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  PEER_TRY("conv finalize", cudnnBackendFinalize(conv.get()));

  const float alpha = 1.0f, beta = 0.0f;
  const cudnnBackendDescriptor_t x_d = x.get(), w_d = w.get(), y_d = y.get(), conv_d = conv.get();
  PEER_TRY("forward operation", op.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
  PEER_TRY("op x", set_attr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x_d));
  PEER_TRY("op w", set_attr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w_d));
  PEER_TRY("op y", set_attr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y_d));
  PEER_TRY("op conv",
           set_attr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_d));
  PEER_TRY("op alpha", set_attr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
  PEER_TRY("op beta", set_attr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  PEER_TRY("op finalize", cudnnBackendFinalize(op.get()));

  const cudnnBackendDescriptor_t op_d = op.get();
  PEER_TRY("operation graph", graph.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  PEER_TRY("graph ops", set_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op_d));
  PEER_TRY("graph handle", set_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  PEER_TRY("graph finalize", cudnnBackendFinalize(graph.get()));

  // Engine configurations, best first, from heuristics mode A, then the fallback list.
  std::vector<Descriptor> configs;
  std::string notes;
  const cudnnBackendDescriptor_t graph_d = graph.get();
  for (const cudnnBackendHeurMode_t heur_mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Descriptor heur;
    int64_t count = 0;
    cudnnStatus_t s = heur.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    if (s == CUDNN_STATUS_SUCCESS)
      s = set_attr(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_d);
    if (s == CUDNN_STATUS_SUCCESS) s = set_attr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(heur.get());
    if (s == CUDNN_STATUS_SUCCESS)
      s = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                   nullptr);
    std::vector<Descriptor> found(static_cast<std::size_t>(std::max<int64_t>(count, 0)));
    std::vector<cudnnBackendDescriptor_t> raw;
    for (Descriptor& f : found) {
      if (s == CUDNN_STATUS_SUCCESS) s = f.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      raw.push_back(f.get());
    }
    if (s == CUDNN_STATUS_SUCCESS && count > 0)
      s = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                   &count, raw.data());
    if (s != CUDNN_STATUS_SUCCESS) {
      notes += std::string(notes.empty() ? "" : "; ") + "heuristics " +
               (heur_mode == CUDNN_HEUR_MODE_A ? "A" : "fallback") + ": " + cudnnGetErrorString(s);
      continue;
    }
    for (int64_t i = 0; i < count && i < static_cast<int64_t>(found.size()); ++i)
      configs.push_back(std::move(found[static_cast<std::size_t>(i)]));
  }
  if (configs.empty()) return failure("no engine configuration" + (notes.empty() ? "" : " (" + notes + ")"));

  // Build and briefly time up to graph_candidates plans; keep the fastest.
  void* pointers[3] = {b.in, b.kernel, b.out};
  const int64_t uids[3] = {uid_x, uid_w, uid_y};
  Plan best;
  double best_ms = 0;
  int built = 0, skipped_tf32 = 0, skipped_workspace = 0, failed = 0;
  for (const Descriptor& config : configs) {
    if (built >= opt.graph_candidates) break;
    Plan p;
    if (describe_config(config, &p.engine, &p.tensor_core) != CUDNN_STATUS_SUCCESS) {
      ++failed;
      continue;
    }
    if (p.tensor_core && !opt.tf32) {
      ++skipped_tf32;
      continue;
    }
    const cudnnBackendDescriptor_t config_d = config.get();
    int64_t workspace = 0, count = 0;
    cudnnStatus_t s = p.plan.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (s == CUDNN_STATUS_SUCCESS)
      s = set_attr(p.plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    if (s == CUDNN_STATUS_SUCCESS)
      s = set_attr(p.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config_d);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(p.plan.get());  // a runtime-compiled engine compiles here
    if (s == CUDNN_STATUS_SUCCESS)
      s = cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                   &workspace);
    if (s != CUDNN_STATUS_SUCCESS) {
      ++failed;
      continue;
    }
    ++built;
    p.workspace = static_cast<std::size_t>(workspace);
    if (p.workspace > b.workspace_bytes) {
      ++skipped_workspace;
      continue;
    }
    void* workspace_ptr = b.workspace;
    s = p.pack.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    if (s == CUDNN_STATUS_SUCCESS) s = set_attr(p.pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    if (s == CUDNN_STATUS_SUCCESS)
      s = set_attr(p.pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
    if (s == CUDNN_STATUS_SUCCESS)
      s = set_attr(p.pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace_ptr);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(p.pack.get());
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendExecute(handle, p.plan.get(), p.pack.get());  // first run
    if (s != CUDNN_STATUS_SUCCESS) {
      ++failed;
      continue;
    }
    cudnnStatus_t run_status = CUDNN_STATUS_SUCCESS;
    const double ms = time_median_ms(1, stream, [&] {
      const cudnnStatus_t r = cudnnBackendExecute(handle, p.plan.get(), p.pack.get());
      if (r != CUDNN_STATUS_SUCCESS) run_status = r;
    });
    if (run_status != CUDNN_STATUS_SUCCESS) {
      ++failed;
      continue;
    }
    if (best.engine < 0 || ms < best_ms) {
      best = std::move(p);
      best_ms = ms;
    }
  }
  if (best.engine < 0)
    return failure("no engine ran (" + std::to_string(configs.size()) + " configurations, " + std::to_string(failed) +
                   " failed, " + std::to_string(skipped_tf32) + " tensor-core ones skipped (--tf32 allows them), " +
                   std::to_string(skipped_workspace) + " over the workspace limit" +
                   (notes.empty() ? "" : "; " + notes) + ")");

  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  const double ms = time_median_ms(opt.reps, stream, [&] {
    const cudnnStatus_t s = cudnnBackendExecute(handle, best.plan.get(), best.pack.get());
    if (s != CUDNN_STATUS_SUCCESS) status = s;
  });
  if (status != CUDNN_STATUS_SUCCESS) return failure("cudnnBackendExecute", status);
  Outcome o;
  o.api = "graph";
  o.algo = "engine " + std::to_string(best.engine);
  o.algo_id = static_cast<long long>(best.engine);
  o.math = best.tensor_core ? "tensor_core" : "fma";
  o.workspace = best.workspace;
  o.ms = ms;
  return o;
}

#undef PEER_TRY

Outcome run_case(cudnnHandle_t handle, cudaStream_t stream, const Options& opt, const Buffers& b) {
  if (opt.api == Api::kGraph) return run_graph(handle, stream, opt, b);
  Outcome legacy = run_legacy(handle, stream, opt, b);
  if (opt.api == Api::kLegacy || legacy.error.empty()) return legacy;
  Outcome graph = run_graph(handle, stream, opt, b);
  if (graph.error.empty()) return graph;
  return failure("legacy: " + legacy.error + "; graph: " + graph.error);
}

// The workspace for every case: the limit, or as much below it as the device gives.
void allocate_workspace(Buffers& b, std::size_t limit) {
  for (std::size_t bytes = limit; bytes >= (std::size_t{1} << 20); bytes /= 2) {
    if (cudaMalloc(&b.workspace, bytes) == cudaSuccess) {
      b.workspace_bytes = bytes;
      if (bytes < limit) std::fprintf(stderr, "cudnn_peer: workspace limited to %zu MiB\n", bytes >> 20);
      return;
    }
    (void)cudaGetLastError();  // clear the failed allocation
  }
  b.workspace = nullptr;
  b.workspace_bytes = 0;
}

bool parse(int argc, char** argv, Options& opt) {
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--reps") == 0 && has_value) {
      opt.reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--api") == 0 && has_value) {
      const char* v = argv[++i];
      if (std::strcmp(v, "auto") == 0)
        opt.api = Api::kAuto;
      else if (std::strcmp(v, "legacy") == 0)
        opt.api = Api::kLegacy;
      else if (std::strcmp(v, "graph") == 0)
        opt.api = Api::kGraph;
      else
        return false;
    } else if (std::strcmp(argv[i], "--max-workspace-mib") == 0 && has_value) {
      opt.max_workspace = static_cast<std::size_t>(std::strtoull(argv[++i], nullptr, 10)) << 20;
    } else if (std::strcmp(argv[i], "--graph-candidates") == 0 && has_value) {
      opt.graph_candidates = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--size") == 0 && has_value) {
      opt.only_size = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--filter") == 0 && has_value) {
      opt.only_filter = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--tf32") == 0) {
      opt.tf32 = true;
    } else {
      return false;
    }
  }
  return opt.reps > 0 && opt.graph_candidates > 0;
}

}  // namespace

int main(int argc, char** argv) {
  peer::program = "cudnn_peer";
  Options opt;
  if (!parse(argc, argv, opt)) {
    std::fprintf(stderr,
                 "usage: cudnn_peer [--reps R] [--api auto|legacy|graph] [--max-workspace-mib M] [--tf32] "
                 "[--graph-candidates N] [--size N] [--filter K]\n");
    return 2;
  }

  // Before cuDNN loads its sub-libraries (at the first call): without the precompiled engines (the small JIT-only
  // pack), cuDNN 9.12 and 9.13 must be told CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY, or they try to load them; 9.16 and later
  // switch to JIT by themselves (AUTO, their values being AUTO, FULL, JIT). 9.14 and 9.15 were not looked at.
  if (CUDNN_VERSION < 91400 && std::getenv("CUDNN_LIB_CONFIG") == nullptr) {
    if (void* precompiled = dlopen("libcudnn_engines_precompiled.so.9", RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(precompiled);
    } else {
      setenv("CUDNN_LIB_CONFIG", "GRAPH_JIT_ONLY", 1);
      std::fprintf(stderr, "cudnn_peer: no libcudnn_engines_precompiled.so.9: CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY\n");
    }
  }

  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");
  cudnnHandle_t handle = nullptr;
  const cudnnStatus_t created = cudnnCreate(&handle);
  if (created != CUDNN_STATUS_SUCCESS) {
    char detail[512] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    std::printf("{\"variant\":\"cudnn\",\"error\":\"cudnnCreate: %s %s\"}\n", cudnnGetErrorString(created),
                json_escape(detail).c_str());
    return 1;
  }
  if (cudnnSetStream(handle, stream) != CUDNN_STATUS_SUCCESS) {
    std::printf("{\"variant\":\"cudnn\",\"error\":\"cudnnSetStream failed\"}\n");
    return 1;
  }
  const std::size_t runtime_version = cudnnGetVersion();
  std::fprintf(stderr, "cudnn_peer: cuDNN %zu (headers %d), its CUDA runtime %zu\n", runtime_version, CUDNN_VERSION,
               cudnnGetCudartVersion());

  const int sizes[] = {4096, 8192, 16384};
  const int filter_sizes[] = {3, 5, 9, 15, 31};
  std::mt19937 rng(7);  // the same weights as npp_peer's f32 cases
  std::uniform_real_distribution<float> weight(-0.3f, 1.0f);
  const char* image = "f32 1ch";

  Buffers b;
  allocate_workspace(b, opt.max_workspace);
  for (int size : sizes) {
    if (opt.only_size != 0 && size != opt.only_size) {
      for (int k : filter_sizes)  // keep the weights of the cases that run as in a full run
        for (int t = 0; t < k * k; ++t) weight(rng);
      continue;
    }
    b.size = size;
    const std::size_t plane_bytes = static_cast<std::size_t>(size) * size * sizeof(float);
    check(cudaMalloc(&b.in, plane_bytes), "malloc");
    check(cudaMalloc(&b.out, plane_bytes), "malloc");
    check(cudaMemset(b.in, 0x3c, plane_bytes), "memset");  // contents do not change cuDNN's time
    const double bytes = 2.0 * static_cast<double>(plane_bytes);
    const double copy_ms = time_median_ms(opt.reps, stream, [&] {
      check(cudaMemcpyAsync(b.out, b.in, plane_bytes, cudaMemcpyDeviceToDevice, stream), "copy");
    });
    std::printf(
        "{\"image\":\"%s\",\"size\":%d,\"filter\":0,\"variant\":\"copy (cudnn_peer)\",\"median_ms\":%.5f,"
        "\"gbps\":%.1f}\n",
        image, size, copy_ms, bytes / copy_ms * 1e-6);
    std::fflush(stdout);
    for (int k : filter_sizes) {
      std::vector<float> host_kernel(static_cast<std::size_t>(k) * k);
      for (float& w : host_kernel) w = weight(rng) / (k * k);
      if (opt.only_filter != 0 && k != opt.only_filter) continue;
      b.k = k;
      check(cudaMalloc(&b.kernel, host_kernel.size() * sizeof(float)), "malloc");
      check(cudaMemcpy(b.kernel, host_kernel.data(), host_kernel.size() * sizeof(float), cudaMemcpyHostToDevice),
            "upload");
      const Outcome o = run_case(handle, stream, opt, b);
      check(cudaStreamSynchronize(stream), "sync");
      check(cudaFree(b.kernel), "free");
      b.kernel = nullptr;
      if (!o.error.empty()) {
        std::printf("{\"image\":\"%s\",\"size\":%d,\"filter\":%d,\"variant\":\"cudnn\",\"error\":\"%s\"}\n", image,
                    size, k, json_escape(o.error).c_str());
      } else {
        std::printf(
            "{\"image\":\"%s\",\"size\":%d,\"filter\":%d,\"variant\":\"cudnn\",\"api\":\"%s\",\"algo\":\"%s\","
            "\"algo_id\":%lld,\"math\":\"%s\",\"workspace_bytes\":%zu,\"median_ms\":%.5f,\"gbps\":%.1f,"
            "\"roof_percent\":%.1f}\n",
            image, size, k, o.api, o.algo.c_str(), o.algo_id, o.math, o.workspace, o.ms, bytes / o.ms * 1e-6,
            100.0 * copy_ms / o.ms);
      }
      std::fflush(stdout);
    }
    check(cudaFree(b.in), "free");
    check(cudaFree(b.out), "free");
  }
  if (b.workspace) check(cudaFree(b.workspace), "free");
  cudnnDestroy(handle);
  check(cudaStreamDestroy(stream), "stream");
  return 0;
}
