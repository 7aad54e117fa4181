#pragma once
// loadgen's HTML report (--report FILE.html): one self-contained page per run with the
// time-to-first-token and inter-token CDFs of every level, tokens/s and acceptance
// against clients, with --turns TTFT p50 and p90 against the turn, errors by code and the
// run's settings, drawn by the vendored uPlot and tools/web/charts.js (both inlined from
// report_assets). Main thread only.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "tools/loadgen/level_stats.hpp"

namespace specd::loadgen {

// The empirical CDF of `sorted` as [value, fraction at or below] points: every sample
// when there are at most `max_points`, else `max_points` evenly spaced ranks; always
// ends at [max, 1]. Empty for no samples.
boost::json::array cdf_points(const std::vector<double>& sorted, size_t max_points = 400);

// The page for `report` (the JSON loadgen prints) and the samples of its `levels`.
std::string render_html_report(const boost::json::object& report, const std::vector<LevelStats>& levels);

// Why `path` cannot be written ("cannot write 'x': No such file or directory"), or ""
// when it can; checked before the run so that a bad path costs no load. Creates the file.
std::string report_path_problem(const std::string& path);

// Throws std::runtime_error naming `path` when it cannot be written.
void write_html_report(const std::string& path, const std::string& html);

}  // namespace specd::loadgen
