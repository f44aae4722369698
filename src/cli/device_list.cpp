// SPDX-License-Identifier: Apache-2.0
// `--devices` (device_list.hpp).
#include "cli/device_list.hpp"

#include "common/whole_number.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <algorithm>
#include <optional>
#include <string_view>

namespace cuconv::cli {

std::vector<int> parse_devices(const std::string& text, bool uses_gpu) {
  if (text.empty() || !uses_gpu) return {};
  const int count = cuda_device_count();
  if (text == "all") {
    std::vector<int> all(static_cast<std::size_t>(count));
    for (int d = 0; d < count; ++d) all[static_cast<std::size_t>(d)] = d;
    return all;  // none: the CPU fallback, announced with the no-device warning
  }
  std::vector<int> devices;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view field = rest.substr(0, comma);
    const std::optional<int> parsed = common::parse_whole_number<int>(field);
    if (!parsed || *parsed < 0)
      throw Error(ErrorKind::usage, "--devices '" + text + "': expected 'all' or device indices like 0,1");
    const int device = *parsed;
    if (std::find(devices.begin(), devices.end(), device) != devices.end())
      throw Error(ErrorKind::usage, "--devices '" + text + "': device " + std::to_string(device) + " is named twice");
    devices.push_back(device);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (count == 0) throw Error(ErrorKind::gpu, "--devices " + text + ": no usable CUDA device");
  for (int device : devices)
    if (device >= count)
      throw Error(ErrorKind::usage, "--devices " + text + ": there is no device " + std::to_string(device) + " (" +
                                        std::to_string(count) + " CUDA device(s): 0.." + std::to_string(count - 1) +
                                        ")");
  return devices;
}

}  // namespace cuconv::cli
