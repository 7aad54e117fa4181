#include "tools/loadgen/level_stats.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace specd::loadgen {

namespace {

double nearest_rank(const std::vector<double>& sorted, double q) {
  const auto n = static_cast<double>(sorted.size());
  const auto rank = static_cast<size_t>(std::max(1.0, std::ceil(q * n)));
  return sorted[std::min(rank, sorted.size()) - 1];
}

boost::json::object percentiles_json(const Percentiles& p) {
  return {{"count", p.count},     {"p50", round3(p.p50)}, {"p90", round3(p.p90)},
          {"p99", round3(p.p99)}, {"max", round3(p.max)}, {"mean", round3(p.mean)}};
}

template <class Map>
boost::json::object counts_json(const Map& counts) {
  boost::json::object o;
  for (const auto& [key, n] : counts) o[key] = n;
  return o;
}

}  // namespace

Percentiles percentiles(std::vector<double> samples) {
  Percentiles p;
  if (samples.empty()) return p;
  std::sort(samples.begin(), samples.end());
  p.count = static_cast<int64_t>(samples.size());
  p.p50 = nearest_rank(samples, 0.50);
  p.p90 = nearest_rank(samples, 0.90);
  p.p99 = nearest_rank(samples, 0.99);
  p.max = samples.back();
  p.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return p;
}

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

int64_t LevelStats::error_count() const {
  int64_t n = 0;
  for (const auto& [code, count] : errors) n += count;
  return n;
}

LevelStats summarize(int32_t clients, const std::vector<StreamRecord>& records, int64_t peak_in_flight, double seconds,
                     bool count_answers) {
  LevelStats s;
  s.clients = clients;
  s.requests = static_cast<int64_t>(records.size());
  s.peak_in_flight = peak_in_flight;
  s.seconds = seconds;
  std::vector<double> ttft, itl, ibl, total;
  for (const auto& r : records) {
    s.tokens += r.tokens;
    s.drafted += r.drafted;
    s.accepted += r.accepted;
    s.retried += r.retries > 0 ? 1 : 0;
    if (r.error) {
      s.errors[*r.error] += 1;
      continue;
    }
    s.streams_ok += 1;
    s.finish_reasons[r.finish_reason] += 1;
    if (count_answers) s.answers[r.text] += 1;
    if (r.ttft_ms >= 0) ttft.push_back(r.ttft_ms);
    itl.insert(itl.end(), r.inter_token_ms.begin(), r.inter_token_ms.end());
    ibl.insert(ibl.end(), r.inter_burst_ms.begin(), r.inter_burst_ms.end());
    total.push_back(r.total_ms);
  }
  std::sort(ttft.begin(), ttft.end());
  std::sort(itl.begin(), itl.end());
  s.ttft_ms = percentiles(ttft);
  s.inter_token_ms = percentiles(itl);
  s.ttft_sorted_ms = std::move(ttft);
  s.inter_token_sorted_ms = std::move(itl);
  s.inter_burst_ms = percentiles(std::move(ibl));
  s.total_ms = percentiles(std::move(total));
  s.turns = summarize_turns(records);
  return s;
}

std::vector<TurnStats> summarize_turns(const std::vector<StreamRecord>& records) {
  int32_t count = 0;
  for (const auto& r : records) count = std::max(count, r.turn);
  std::vector<TurnStats> turns(static_cast<size_t>(count));
  std::vector<std::vector<double>> ttft(turns.size()), prompt(turns.size()), cached(turns.size());
  for (const auto& r : records) {
    if (r.turn < 1) continue;
    const auto i = static_cast<size_t>(r.turn - 1);
    turns[i].requests += 1;
    if (r.error) {
      turns[i].errors += 1;
      continue;
    }
    turns[i].streams_ok += 1;
    if (r.ttft_ms >= 0) ttft[i].push_back(r.ttft_ms);
    if (r.prompt_tokens >= 0) prompt[i].push_back(static_cast<double>(r.prompt_tokens));
    if (r.cached_tokens >= 0) cached[i].push_back(static_cast<double>(r.cached_tokens));
  }
  for (size_t i = 0; i < turns.size(); ++i) {
    turns[i].turn = static_cast<int32_t>(i + 1);
    turns[i].ttft_ms = percentiles(std::move(ttft[i]));
    if (!prompt[i].empty()) turns[i].mean_prompt_tokens = percentiles(std::move(prompt[i])).mean;
    if (!cached[i].empty()) turns[i].mean_cached_tokens = percentiles(std::move(cached[i])).mean;
  }
  return turns;
}

boost::json::value TurnStats::to_json() const {
  const auto mean_or_null = [](double mean) {
    return mean < 0 ? boost::json::value(nullptr) : boost::json::value(round3(mean));
  };
  return boost::json::object{{"turn", turn},
                             {"requests", requests},
                             {"streams", streams_ok},
                             {"errors", errors},
                             {"ttft_ms", percentiles_json(ttft_ms)},
                             {"mean_prompt_tokens", mean_or_null(mean_prompt_tokens)},
                             {"mean_cached_tokens", mean_or_null(mean_cached_tokens)}};
}

std::string turns_table(const std::vector<TurnStats>& turns) {
  if (turns.empty()) return "";
  char line[256];
  std::snprintf(line, sizeof line, "%4s %8s %6s %12s %10s %10s %10s %13s %13s\n", "turn", "requests", "errors",
                "TTFT p50 ms", "p90 ms", "max ms", "mean ms", "prompt tokens", "cached tokens");
  std::string text = line;
  const auto mean_text = [](double mean, char(&out)[32]) {
    if (mean < 0) return "-";
    std::snprintf(out, sizeof out, "%.1f", mean);
    return static_cast<const char*>(out);
  };
  for (const auto& t : turns) {
    char prompt[32], cached[32];
    std::snprintf(line, sizeof line, "%4d %8lld %6lld %12.1f %10.1f %10.1f %10.1f %13s %13s\n", t.turn,
                  static_cast<long long>(t.requests), static_cast<long long>(t.errors), t.ttft_ms.p50, t.ttft_ms.p90,
                  t.ttft_ms.max, t.ttft_ms.mean, mean_text(t.mean_prompt_tokens, prompt),
                  mean_text(t.mean_cached_tokens, cached));
    text += line;
  }
  return text;
}

boost::json::value LevelStats::to_json() const {
  boost::json::object o{
      {"clients", clients},
      {"requests", requests},
      {"streams", streams_ok},
      {"errors", error_count()},
      {"errors_by_code", counts_json(errors)},
      {"finish_reasons", counts_json(finish_reasons)},
      {"peak_in_flight", peak_in_flight},
      {"seconds", std::round(seconds * 1e6) / 1e6},  // microseconds: a fast level lasts a few ms
      {"tokens", tokens},
      {"tokens_per_second", round3(tokens_per_second())},
      {"drafted", drafted},
      {"accepted", accepted},
      // null without drafts: target-only runs, and SSE streams (which carry no counters)
      {"acceptance_rate", drafted > 0 ? boost::json::value(round3(acceptance_rate())) : boost::json::value(nullptr)},
      {"ttft_ms", percentiles_json(ttft_ms)},
      {"inter_token_ms", percentiles_json(inter_token_ms)},
      {"inter_burst_ms", percentiles_json(inter_burst_ms)},
      {"request_ms", percentiles_json(total_ms)},
      {"retried", retried},
  };
  if (!answers.empty()) o["answers"] = counts_json(answers);
  if (turns.empty()) return o;
  boost::json::array turn_json;
  for (const auto& t : turns) turn_json.push_back(t.to_json());
  o["turns"] = std::move(turn_json);
  return o;
}

int64_t max_concurrent_without_errors(const std::vector<LevelStats>& levels) {
  int64_t best = 0;
  for (const auto& level : levels) {
    if (level.error_count() == 0 && level.streams_ok == level.requests) best = std::max(best, level.peak_in_flight);
  }
  return best;
}

}  // namespace specd::loadgen
