// loadgen's HTML report: the CDF points it carries, the page's markers all filled, JSON
// that cannot end its <script> early, and a path that cannot be written refused up front.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <filesystem>

#include "json/json_serialize.hpp"
#include "tools/loadgen/html_report.hpp"

using namespace specd::loadgen;

TEST_CASE("cdf_points keeps every sample when there are few, evenly spaced ranks when there are many") {
  CHECK(specd::serialize_json(cdf_points({1, 2, 4, 8})) == "[[1,0.25],[2,0.5],[4,0.75],[8,1]]");
  CHECK(cdf_points({}).empty());
  std::vector<double> many;
  for (int i = 1; i <= 1000; ++i) many.push_back(i * 0.5);
  const auto points = cdf_points(many, 4);
  CHECK(specd::serialize_json(points) == "[[125,0.25],[250,0.5],[375,0.75],[500,1]]");
  CHECK(cdf_points(many, 400).size() == 400);
  CHECK(specd::serialize_json(cdf_points(many, 400).back()) == "[500,1]");
  CHECK(specd::serialize_json(cdf_points({1.23456789})) == "[[1.235,1]]");  // milliseconds to the microsecond
}

TEST_CASE("the report page inlines its libraries and data and escapes </ in the data") {
  LevelStats level;
  level.clients = 2;
  level.ttft_sorted_ms = {3, 5};
  level.inter_token_sorted_ms = {1};
  const boost::json::object report{{"prompt", "a </script><b> b"}, {"levels", boost::json::array{}}};
  const std::string page = render_html_report(report, {level});
  CHECK(page.find("@@") == std::string::npos);
  CHECK(page.find("var uPlot=") != std::string::npos);
  CHECK(page.find("specd.charts = {") != std::string::npos);
  CHECK(page.find(R"("prompt":"a <\/script><b> b")") != std::string::npos);
  CHECK(page.find(R"("cdfs":[{"clients":2,"ttft_ms":[[3,0.5],[5,1]],"inter_token_ms":[[1,1]]}])") != std::string::npos);
  // The data's script element is the only one the prompt could have closed.
  const size_t data = page.find(R"(<script type="application/json" id="report-data">)");
  REQUIRE(data != std::string::npos);
  CHECK(page.find("</script>", data) == page.find("</script>", page.find(R"("generated_at")", data)));
}

TEST_CASE("a report path that cannot be written is refused with the reason") {
  CHECK(report_path_problem("/nonexistent-dir/report.html") ==
        "cannot write '/nonexistent-dir/report.html': No such file or directory");
  const auto dir = std::filesystem::temp_directory_path();
  CHECK(report_path_problem(dir.string()) == "cannot write '" + dir.string() + "': Is a directory");
  const auto ok = dir / "specd_loadgen_report_test.html";
  CHECK(report_path_problem(ok.string()).empty());
  std::filesystem::remove(ok);
  CHECK_THROWS_WITH(write_html_report("/nonexistent-dir/r.html", "x"),
                    "cannot write the report /nonexistent-dir/r.html: No such file or directory");
}
