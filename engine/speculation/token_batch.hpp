#pragma once
// Right-padded [rows, longest] token tensors for batched forwards; the model reads only
// `lengths` of each row. Shared by the draft and verify sides.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <span>
#include <vector>

namespace specd {

at::Tensor token_batch(const std::vector<std::span<const int32_t>>& rows, std::vector<int64_t>& lengths);

}  // namespace specd
