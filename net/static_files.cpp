#include "net/static_files.hpp"

#include <string>

#include "net/request_target.hpp"

namespace specd::net {

std::optional<std::filesystem::path> resolve_static_path(const std::filesystem::path& root, std::string_view path) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  auto decoded = percent_decode(path);
  if (!decoded) return std::nullopt;
  std::string& p = *decoded;
  if (p.find('\0') != std::string::npos || p.find('\\') != std::string::npos) return std::nullopt;
  if (p == "/trace") return root / "trace.html";  // the trace viewer's address (README "Traces")
  std::filesystem::path relative;
  size_t start = 1;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    std::string_view segment(p.data() + start, end - start);
    if (segment == "..") return std::nullopt;
    if (!segment.empty() && segment != ".") relative /= std::string(segment);
    start = end + 1;
  }
  if (relative.empty() || p.back() == '/') relative /= "index.html";
  return root / relative;
}

const char* content_type_for(const std::filesystem::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".html" || ext == ".htm") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
  if (ext == ".gif") return "image/gif";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".wasm") return "application/wasm";
  if (ext == ".txt") return "text/plain; charset=utf-8";
  if (ext == ".woff2") return "font/woff2";
  return "application/octet-stream";
}

}  // namespace specd::net
