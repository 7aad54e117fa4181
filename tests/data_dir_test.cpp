// Where specd finds its data (net/data_dir): $SPECD_DATA_DIR, else share/specd in or
// above the executable's directory (an installed prefix, or the build directory's links
// into the source tree).
#include "net/data_dir.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>

#include "engine/base/errors.hpp"

using namespace specd;
namespace fs = std::filesystem;

namespace {

struct TempTree {
  TempTree() : root(fs::temp_directory_path() / ("specd_data_dir_" + std::to_string(::getpid()))) {
    fs::remove_all(root);
  }
  ~TempTree() { fs::remove_all(root); }
  void file(const fs::path& relative) {
    fs::create_directories((root / relative).parent_path());
    std::ofstream(root / relative) << "\n";
  }
  fs::path root;
};

}  // namespace

TEST_CASE("an installed specd finds share/specd beside its bin/; a build's tools find it further up") {
  TempTree t;
  t.file("prefix/share/specd/conf/specd.toml");
  t.file("prefix/bin/specd");
  CHECK(net::find_data_dir(t.root / "prefix/bin/specd", "") == t.root / "prefix/share/specd");
  t.file("build/share/specd/conf/specd.toml");
  CHECK(net::find_data_dir(t.root / "build/specd", "") == t.root / "build/share/specd");
  CHECK(net::find_data_dir(t.root / "build/tests/some_test", "") == t.root / "build/share/specd");
}

TEST_CASE("a share/specd without conf/specd.toml is not specd's data; SPECD_DATA_DIR wins") {
  TempTree t;
  t.file("elsewhere/share/specd/models/README.md");
  CHECK_THROWS_AS(net::find_data_dir(t.root / "elsewhere/bin/specd", ""), SpecdError);
  try {
    net::find_data_dir(t.root / "elsewhere/bin/specd", "");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::missing_file);
    CHECK(std::string(e.what()).find("SPECD_DATA_DIR") != std::string::npos);
  }
  CHECK(net::find_data_dir(t.root / "elsewhere/bin/specd", "/opt/specd-data") == "/opt/specd-data");
}

TEST_CASE("this test, run from the build directory, finds the source tree's data through the build's links") {
  const fs::path& dir = net::data_dir();
  CHECK(dir.filename() == "specd");
  CHECK(fs::equivalent(dir / "conf" / "specd.toml", fs::path(SPECD_SOURCE_DIR) / "conf" / "specd.toml"));
  CHECK(fs::equivalent(dir / "models" / "target", fs::path(SPECD_SOURCE_DIR) / "models" / "target"));
  CHECK(fs::equivalent(dir / "tools" / "web", fs::path(SPECD_SOURCE_DIR) / "tools" / "web"));
}
