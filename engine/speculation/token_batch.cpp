#include "engine/speculation/token_batch.hpp"

#include <ATen/ATen.h>

#include <algorithm>

namespace specd {

at::Tensor token_batch(const std::vector<std::span<const int32_t>>& rows, std::vector<int64_t>& lengths) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  at::Tensor out = at::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)}, at::kLong);
  auto acc = out.accessor<int64_t, 2>();
  lengths.clear();
  for (size_t b = 0; b < rows.size(); ++b) {
    for (size_t t = 0; t < rows[b].size(); ++t) acc[b][t] = rows[b][t];
    lengths.push_back(static_cast<int64_t>(rows[b].size()));
  }
  return out;
}

}  // namespace specd
