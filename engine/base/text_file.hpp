#pragma once
// The one way a file is read whole (configs, templates, indexes, corpora, test data).
#include <filesystem>
#include <string>
#include <string_view>

namespace specd {

// The file's bytes. Throws SpecdError(missing_file, "cannot read WHAT PATH") when it
// cannot be opened or read; `what` names it for the user ("config", "chat template").
std::string read_whole_file(const std::filesystem::path& path, std::string_view what);

}  // namespace specd
