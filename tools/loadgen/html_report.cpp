#include "tools/loadgen/html_report.hpp"

#include <boost/json.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include "json/json_serialize.hpp"
#include "tools/loadgen/report_assets.hpp"

namespace specd::loadgen {

namespace {

// Replaces the one `marker` in `page`; a template without it is a build defect.
void fill(std::string& page, std::string_view marker, std::string_view content) {
  const size_t at = page.find(marker);
  if (at == std::string::npos) throw std::logic_error("report template has no " + std::string(marker));
  page.replace(at, marker.size(), content);
}

// JSON inside <script>: "</" would end the element early (a prompt may hold "</script>");
// "<\/" is the same string to a JSON parser.
std::string script_safe(std::string json) {
  for (size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 3)) json.insert(at + 1, "\\");
  return json;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

boost::json::array cdf_points(const std::vector<double>& sorted, size_t max_points) {
  boost::json::array points;
  const size_t n = sorted.size();
  const size_t count = std::min(n, std::max<size_t>(max_points, 1));
  for (size_t j = 1; j <= count; ++j) {
    const size_t rank = (j * n + count - 1) / count;  // ceil(j n / count): 1..n, ending at n
    const double fraction = std::round(1e6 * static_cast<double>(rank) / static_cast<double>(n)) / 1e6;
    points.push_back(boost::json::array{round3(sorted[rank - 1]), fraction});
  }
  return points;
}

std::string render_html_report(const boost::json::object& report, const std::vector<LevelStats>& levels) {
  boost::json::array cdfs;
  for (const auto& level : levels) {
    cdfs.push_back(boost::json::object{{"clients", level.clients},
                                       {"ttft_ms", cdf_points(level.ttft_sorted_ms)},
                                       {"inter_token_ms", cdf_points(level.inter_token_sorted_ms)}});
  }
  const boost::json::object data{{"report", report}, {"cdfs", std::move(cdfs)}, {"generated_at", utc_now()}};
  std::string page(assets::report_template);
  fill(page, "@@UPLOT_CSS@@", assets::uplot_css);
  fill(page, "@@UPLOT_JS@@", assets::uplot_js);
  fill(page, "@@CHARTS_JS@@", assets::charts_js);
  fill(page, "@@REPORT_DATA@@", script_safe(serialize_json(data)));
  return page;
}

std::string report_path_problem(const std::string& path) {
  std::ofstream file(path, std::ios::app);
  if (file) return "";
  return "cannot write '" + path + "': " + std::strerror(errno);
}

void write_html_report(const std::string& path, const std::string& html) {
  std::ofstream file(path, std::ios::trunc);
  file << html;
  file.close();
  if (!file) throw std::runtime_error("cannot write the report " + path + ": " + std::strerror(errno));
}

}  // namespace specd::loadgen
