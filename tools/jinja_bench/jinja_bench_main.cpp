// specd_jinja_bench: the time to render one chat prompt through a model's Jinja template,
// printed as JSON (median and p99 in microseconds). The conversation is a long agent
// session: a system prompt, four tools with JSON-schema parameters, and TURNS rounds of
// user question, assistant tool call, tool result and assistant answer. The default
// template is Llama 3.1's (tools rendered with tojson(indent=4) in the first user turn).
// Wall-clock percentiles include preemption by other processes (on a loaded 2-core host
// a render that loses the CPU waits a scheduler slice, about 4 ms); the cpu_ figures are
// the thread's own CPU time per render, which does not.
// Usage: specd_jinja_bench [--template FILE] [--turns N] [--renders N] [--print-input FILE]
// (--print-input writes the variables as JSON, to check the render against Jinja2.)
#include <boost/json.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/jinja/json_input.hpp"
#include "engine/jinja/template.hpp"
#include "json/json_number.hpp"
#include "json/json_serialize.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

json::object tool(const char* name, const char* description, json::object properties, json::array required) {
  return {{"type", "function"},
          {"function",
           {{"name", name},
            {"description", description},
            {"parameters",
             {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}}}}}};
}

json::array tools() {
  return {
      tool("get_weather", "Current weather and a three-day forecast for a city",
           {{"city", {{"type", "string"}, {"description", "City name, e.g. Lisbon"}}},
            {"unit", {{"type", "string"}, {"enum", {"celsius", "fahrenheit"}}}}},
           {"city"}),
      tool("search_web", "Search the web and return the top results with snippets",
           {{"query", {{"type", "string"}}}, {"max_results", {{"type", "integer"}, {"minimum", 1}, {"maximum", 20}}}},
           {"query"}),
      tool("run_python", "Run a Python snippet in a sandbox and return stdout",
           {{"code", {{"type", "string"}}}, {"timeout_s", {{"type", "number"}}}}, {"code"}),
      tool("send_email", "Send an email on the user's behalf",
           {{"to", {{"type", "array"}, {"items", {{"type", "string"}}}}},
            {"subject", {{"type", "string"}}},
            {"body", {{"type", "string"}}}},
           {"to", "subject", "body"}),
  };
}

// One round: a question, a call with arguments as an object, its result, an answer.
void add_round(json::array& messages, int i) {
  const std::string n = std::to_string(i);
  messages.push_back(json::object{
      {"role", "user"},
      {"content", "Question " + n + ": what is the weather in city number " + n +
                      ", and could you compare it with last week's average? Please be specific about wind and "
                      "humidity, and mention anything unusual."}});
  messages.push_back(json::object{
      {"role", "assistant"},
      {"content", ""},
      {"tool_calls",
       {{{"id", "call" + n},
         {"type", "function"},
         {"function", {{"name", "get_weather"}, {"arguments", {{"city", "City " + n}, {"unit", "celsius"}}}}}}}}});
  messages.push_back(
      json::object{{"role", "tool"},
                   {"tool_call_id", "call" + n},
                   {"content",
                    "{\"temperature\": 21.5, \"wind_kmh\": 14, \"humidity\": 0.62, \"conditions\": \"partly cloudy\", "
                    "\"forecast\": [\"sun\", \"rain\", \"sun\"]}"}});
  messages.push_back(json::object{
      {"role", "assistant"},
      {"content", "In City " + n +
                      " it is 21.5 °C and partly cloudy, with a light wind of 14 km/h and 62% humidity. That is "
                      "about two degrees warmer than last week's average; rain is expected the day after tomorrow, "
                      "which is unusual for the season."}});
}

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  try {
    fs::path template_file =
        fs::path(SPECD_SOURCE_DIR) / "../shared/data/templates/meta-llama-Llama-3.1-8B-Instruct.jinja";
    int turns = 20, renders = 2000;
    std::string input_out;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string arg = argv[i];
      if (arg == "--template") {
        template_file = argv[i + 1];
      } else if (arg == "--turns") {
        turns = std::max(1, std::atoi(argv[i + 1]));
      } else if (arg == "--print-input") {
        input_out = argv[i + 1];
      } else if (arg == "--renders") {
        renders = std::max(10, std::atoi(argv[i + 1]));
      } else {
        throw specd::SpecdError(specd::ErrorCode::invalid_argument, "unknown option " + arg);
      }
    }
    json::array messages{json::object{{"role", "system"}, {"content", "You are a careful assistant with tools."}}};
    for (int i = 0; i < turns; ++i) add_round(messages, i);
    messages.push_back(json::object{{"role", "user"}, {"content", "Thanks. Now email the summary to my team."}});
    const json::object input{{"messages", messages},
                             {"tools", tools()},
                             {"add_generation_prompt", true},
                             {"bos_token", "<|begin_of_text|>"},
                             {"eos_token", "<|eot_id|>"}};
    if (!input_out.empty()) std::ofstream(input_out, std::ios::binary) << specd::serialize_json(input);
    const specd::jinja::Value variables = specd::jinja::value_from_json(specd::serialize_json(input));

    const auto compile_start = std::chrono::steady_clock::now();
    const auto tmpl = specd::jinja::Template::compile(specd::read_whole_file(template_file, "template"));
    const double compile_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - compile_start).count();

    std::vector<double> samples, cpu_samples;
    samples.reserve(renders);
    cpu_samples.reserve(renders);
    size_t bytes = 0;
    for (int r = 0; r < renders; ++r) {
      const double cpu_start = thread_cpu_us();
      const auto start = std::chrono::steady_clock::now();
      const std::string text = tmpl.render(variables);
      samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
      cpu_samples.push_back(thread_cpu_us() - cpu_start);
      bytes = text.size();
    }
    std::puts(specd::serialize_json(json::object{{"template", template_file.filename().string()},
                                                 {"messages", messages.size()},
                                                 {"tools", 4},
                                                 {"rendered_bytes", bytes},
                                                 {"renders", renders},
                                                 {"compile_us", specd::round_to(compile_us, 1)},
                                                 {"median_us", specd::round_to(percentile(samples, 0.5), 1)},
                                                 {"p90_us", specd::round_to(percentile(samples, 0.9), 1)},
                                                 {"p99_us", specd::round_to(percentile(samples, 0.99), 1)},
                                                 {"cpu_median_us", specd::round_to(percentile(cpu_samples, 0.5), 1)},
                                                 {"cpu_p99_us", specd::round_to(percentile(cpu_samples, 0.99), 1)}})
                  .c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd_jinja_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
