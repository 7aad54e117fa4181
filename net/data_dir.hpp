#pragma once
// Where specd finds the data it ships with: models/ (the committed pair), conf/
// (specd.toml, the benchmark prompts) and tools/web/ (the chat page and trace viewer).
// An installation keeps them in <prefix>/share/specd; a build directory holds
// share/specd/ as links into the source tree (CMakeLists.txt). Both keep the source
// tree's layout, so conf/specd.toml's relative paths hold everywhere. Found from the
// executable's location, never from a path compiled in.
#include <filesystem>
#include <string>

namespace specd::net {

// $SPECD_DATA_DIR when set; else share/specd under the nearest directory, from the
// executable's own upwards, that has share/specd/conf/specd.toml. Throws
// SpecdError(missing_file) naming where it looked. Looked up once per process.
const std::filesystem::path& data_dir();

// The lookup, for tests: `exe` the executable's path, `env` $SPECD_DATA_DIR (empty: unset).
std::filesystem::path find_data_dir(const std::filesystem::path& exe, const std::string& env);

}  // namespace specd::net
