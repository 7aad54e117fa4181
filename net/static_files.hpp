#pragma once
// Static pages under the web root: request targets mapped to files without escaping
// the root, and content types by extension. Pure functions; any thread.
#include <filesystem>
#include <optional>
#include <string_view>

namespace specd::net {

// The file for a GET of `path` (no query): "/" is index.html, "/trace" trace.html; percent escapes decoded;
// nullopt for "..", NUL, backslashes or a bad escape.
std::optional<std::filesystem::path> resolve_static_path(const std::filesystem::path& root, std::string_view path);

// "text/html; charset=utf-8", "application/javascript", ...; "application/octet-stream" otherwise.
const char* content_type_for(const std::filesystem::path& file);

}  // namespace specd::net
