// Latency statistics and uPlot charts shared by the trace viewer (trace.html) and
// loadgen's HTML report (tools/loadgen/report_template.html inlines this file).
// uPlot (tools/web/vendor/uplot, MIT) draws the charts; this file only shapes the data.
'use strict';

(() => {
  const specd = (window.specd = window.specd || {});
  const PALETTE = ['#2f6fde', '#e0701e', '#2a9d5c', '#c2387c', '#7b4fd6', '#8a6d1c', '#1f9bb0', '#d23b3b'];

  // Nearest-rank percentile of sorted samples, as loadgen computes it (level_stats.cpp).
  function nearestRank(sorted, q) {
    if (!sorted.length) return null;
    const rank = Math.max(1, Math.ceil(q * sorted.length));
    return sorted[Math.min(rank, sorted.length) - 1];
  }

  function percentiles(samples) {
    const sorted = [...samples].sort((a, b) => a - b);
    return { count: sorted.length, p50: nearestRank(sorted, 0.5), p90: nearestRank(sorted, 0.9),
      p99: nearestRank(sorted, 0.99), max: sorted.length ? sorted[sorted.length - 1] : null };
  }

  // [x, fraction at or below x] steps of an empirical CDF, from sorted samples or from
  // loadgen's pre-computed [value, fraction] points.
  function cdfPoints(sorted) {
    return sorted.map((v, i) => [v, (i + 1) / sorted.length]);
  }

  // Several CDFs on one x axis: uPlot wants one shared x array, so each series has
  // values only at its own x (null elsewhere, bridged with spanGaps).
  function alignCdfs(curves) {
    const xs = [...new Set(curves.flatMap((c) => c.map((p) => p[0])))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const ys = curves.map((c) => {
      const y = new Array(xs.length).fill(null);
      for (const [x, f] of c) y[index.get(x)] = f;
      return y;
    });
    return [xs, ...ys];
  }

  function formatMs(v) {
    if (v === null || v === undefined || !Number.isFinite(v)) return '–';
    if (v >= 1000) return `${(v / 1000).toFixed(2)} s`;
    if (v >= 10) return `${v.toFixed(1)} ms`;
    return `${v.toFixed(2)} ms`;
  }

  function baseOptions(el, { title, xLabel, yLabel, height = 240 }) {
    const width = Math.max(260, el.clientWidth || 480);
    return {
      title, width, height,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      axes: [
        { label: xLabel, stroke: '#555', grid: { stroke: '#eee' }, ticks: { stroke: '#ddd' } },
        { label: yLabel, stroke: '#555', grid: { stroke: '#eee' }, ticks: { stroke: '#ddd' } },
      ],
    };
  }

  // A CDF chart: `curves` = [{label, points: [[x, fraction], ...]}]. Returns the uPlot.
  function cdfChart(el, curves, { title, xLabel, height }) {
    const opts = baseOptions(el, { title, xLabel, yLabel: 'fraction at or below', height });
    opts.scales = { x: { time: false }, y: { range: [0, 1] } };
    opts.legend = { show: curves.length > 1, live: true };
    opts.series = [{ label: xLabel, value: (u, v) => formatMs(v) }, ...curves.map((c, i) => ({
      label: c.label, stroke: PALETTE[i % PALETTE.length], width: 2, spanGaps: true,
      paths: uPlot.paths.stepped({ align: 1 }), points: { show: false },
      value: (u, v) => (v === null ? '–' : `${(100 * v).toFixed(1)}%`),
    }))];
    return new uPlot(opts, alignCdfs(curves.map((c) => c.points)), el);
  }

  // Lines against a shared x (client counts: a log2 axis, as ramps double; `linearX` for
  // counts that step by one, such as turns) with `series` = [{label, values}]; `yRange`
  // fixes the y axis (e.g. [0, 100] for percents).
  function lineChart(el, xs, series, { title, xLabel, yLabel, height, yRange, linearX = false }) {
    const opts = baseOptions(el, { title, xLabel, yLabel, height });
    const logX = !linearX && xs.every((x) => x > 0) && xs.length > 1;
    opts.scales = { x: { time: false, distr: logX ? 3 : 1, log: 2 }, y: yRange ? { range: yRange } : {} };
    if (linearX) opts.axes[0].incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];  // whole steps only
    opts.legend = { show: series.length > 1, live: true };
    opts.series = [{ label: xLabel }, ...series.map((s, i) => ({
      label: s.label, stroke: PALETTE[i % PALETTE.length], width: 2, points: { show: true, size: 7 },
    }))];
    return new uPlot(opts, [xs, ...series.map((s) => s.values)], el);
  }

  specd.charts = { PALETTE, nearestRank, percentiles, cdfPoints, alignCdfs, formatMs, cdfChart, lineChart };
})();
