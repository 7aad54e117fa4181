#include "engine/base/text_file.hpp"

#include <fstream>
#include <iterator>

#include "engine/base/errors.hpp"

namespace specd {

std::string read_whole_file(const std::filesystem::path& path, std::string_view what) {
  const std::string name = std::string("cannot read ") + std::string(what) + " " + path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecdError(ErrorCode::missing_file, name);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw SpecdError(ErrorCode::missing_file, name + ": read error");
  return bytes;
}

}  // namespace specd
