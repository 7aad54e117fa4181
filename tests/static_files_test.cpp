// Static pages (net/static_files): targets map under the web root and never escape it;
// content types by extension.
#include <doctest/doctest.h>

#include "net/static_files.hpp"

using namespace specd::net;

TEST_CASE("targets map to files under the root; / is index.html") {
  const std::filesystem::path root = "/srv/web";
  CHECK(resolve_static_path(root, "/") == root / "index.html");
  CHECK(resolve_static_path(root, "/trace") == root / "trace.html");  // the trace viewer
  CHECK(resolve_static_path(root, "/trace/") == root / "trace" / "index.html");
  CHECK(resolve_static_path(root, "/app.js") == root / "app.js");
  CHECK(resolve_static_path(root, "/js/") == root / "js" / "index.html");
  CHECK(resolve_static_path(root, "/a%20b.css") == root / "a b.css");
  CHECK(resolve_static_path(root, "/./x//y.html") == root / "x" / "y.html");
}

TEST_CASE("traversal, NUL, backslashes and bad escapes are refused") {
  const std::filesystem::path root = "/srv/web";
  for (const char* bad :
       {"/../etc/passwd", "/a/../../b", "/%2e%2e/x", "/a%00b", "/a\\b", "/%zz", "/%4", "relative", ""}) {
    CAPTURE(bad);
    CHECK(resolve_static_path(root, bad) == std::nullopt);
  }
}

TEST_CASE("content types by extension") {
  CHECK(std::string(content_type_for("index.html")) == "text/html; charset=utf-8");
  CHECK(std::string(content_type_for("app.js")) == "text/javascript; charset=utf-8");
  CHECK(std::string(content_type_for("style.css")) == "text/css; charset=utf-8");
  CHECK(std::string(content_type_for("data.json")) == "application/json");
  CHECK(std::string(content_type_for("logo.svg")) == "image/svg+xml");
  CHECK(std::string(content_type_for("blob.bin")) == "application/octet-stream");
}
