#pragma once
// The files loadgen's HTML report inlines, compiled in from the source tree by
// tools/loadgen/embed_assets.cmake (report_assets.cpp in the build tree). Immutable.
#include <string_view>

namespace specd::loadgen::assets {

extern const std::string_view report_template;  // tools/loadgen/report_template.html
extern const std::string_view charts_js;        // tools/web/charts.js, shared with the trace viewer
extern const std::string_view uplot_js;         // tools/web/vendor/uplot/uPlot.iife.min.js (MIT)
extern const std::string_view uplot_css;        // tools/web/vendor/uplot/uPlot.min.css

}  // namespace specd::loadgen::assets
