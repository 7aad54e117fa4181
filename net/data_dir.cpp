#include "net/data_dir.hpp"

#include <cstdlib>

#include "engine/base/errors.hpp"

namespace specd::net {

namespace fs = std::filesystem;

fs::path find_data_dir(const fs::path& exe, const std::string& env) {
  if (!env.empty()) return env;
  std::error_code ec;
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    const fs::path candidate = dir / "share" / "specd";
    if (fs::is_regular_file(candidate / "conf" / "specd.toml", ec)) return candidate;
    if (dir == dir.root_path()) break;
  }
  throw SpecdError(ErrorCode::missing_file, "no share/specd/conf/specd.toml in " + exe.parent_path().string() +
                                                " or above it (set SPECD_DATA_DIR to specd's data directory)");
}

const fs::path& data_dir() {
  static const fs::path dir = [] {
    const char* env = std::getenv("SPECD_DATA_DIR");
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec && (env == nullptr || *env == '\0')) {
      throw SpecdError(ErrorCode::missing_file, "cannot read /proc/self/exe (set SPECD_DATA_DIR)");
    }
    return find_data_dir(exe, env ? env : "");
  }();
  return dir;
}

}  // namespace specd::net
