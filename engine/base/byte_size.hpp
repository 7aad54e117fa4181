#pragma once
// Byte sizes as people write them in configuration: "4GiB", "512 MiB", "1.5GB", "8000000".
#include <cstdint>
#include <string>
#include <string_view>

namespace specd {

// Binary (KiB, MiB, GiB, TiB) and decimal (kB, MB, GB, TB) units, case-insensitive, or
// none (bytes). Throws SpecdError(bad_value) naming `what` for anything else, a negative
// size or one beyond int64.
int64_t parse_byte_size(std::string_view text, const std::string& what);

// "4.00 GiB", "512.0 MiB", "96 B": for start-up lines and errors.
std::string format_bytes(int64_t bytes);

}  // namespace specd
