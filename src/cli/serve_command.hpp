// SPDX-License-Identifier: Apache-2.0
#pragma once
// `cuconv serve`: the resident process that runs clients' commands (docs/serve.md).
namespace cuconv::cli {

/// Parses `cuconv serve [--socket PATH] [--idle-exit S] [--max-clients N] [--devices ...]
/// [--gpu-memory SIZE]`, warms the GPU (CUDA context and kernels, beside the first clients) and
/// serves until idle or SIGTERM; returns the exit code.
[[nodiscard]] int run_serve_command(int argc, const char* const* argv);

}  // namespace cuconv::cli
