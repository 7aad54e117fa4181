// The Jinja renderer against Jinja2 itself: every case of ../shared/data/templates/
// cases.jsonl (56 real chat templates, seven conversations each, rendered the way
// transformers' apply_chat_template renders them) must come out byte for byte, and
// every case Jinja2 refused must be refused with the same error. tests/data/jinja/
// more_cases.jsonl adds eleven harder conversations per template (parallel tool calls,
// content parts, null content, nested schemas, ...), rendered by Jinja2 the same way
// (make_more_cases.py beside it).
#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/base/text_file.hpp"
#include "engine/jinja/json_input.hpp"
#include "engine/jinja/template.hpp"

using namespace specd::jinja;
namespace fs = std::filesystem;

namespace {

const fs::path kTemplates = fs::path(SPECD_SOURCE_DIR) / "../shared/data/templates";

// The cases were rendered with strftime_now pinned to 2024-07-26 12:00.
std::tm pinned_time() {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 12;
  tm.tm_wday = 5;
  tm.tm_yday = 207;
  return tm;
}

struct Case {
  std::string template_name, name, input, text, error;
  bool expects_error = false;
};

std::vector<Case> load_cases(const fs::path& file) {
  std::vector<Case> cases;
  std::ifstream in(file);
  REQUIRE_MESSAGE(in, "missing " << file.string());
  simdjson::dom::parser parser;
  std::string line;
  while (std::getline(in, line)) {
    simdjson::dom::element e = parser.parse(line);
    Case c;
    c.template_name = std::string(std::string_view(e["template"]));
    c.name = std::string(std::string_view(e["case"]));
    c.input = simdjson::minify(e["input"]);
    std::string_view text;
    if (e["text"].get(text) == simdjson::SUCCESS) {
      c.text = std::string(text);
    } else {
      c.error = std::string(std::string_view(e["error"]));
      c.expects_error = true;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

TemplateOptions pinned_options() {
  TemplateOptions options;
  options.clock = pinned_time;
  return options;
}

struct Tally {
  int exact = 0, refused = 0, expected_errors = 0;
};

// Renders every case; each must equal Jinja2's text, or be refused with Jinja2's error.
Tally check_cases(const std::vector<Case>& cases) {
  std::map<std::string, Template> compiled;
  Tally tally;
  for (const Case& c : cases) {
    INFO(c.template_name << " / " << c.name);
    auto it = compiled.find(c.template_name);
    if (it == compiled.end()) {
      it = compiled
               .emplace(c.template_name,
                        Template::compile(specd::read_whole_file(kTemplates / c.template_name, "test data"),
                                          pinned_options()))
               .first;
    }
    Value variables = value_from_json(c.input);
    if (!c.expects_error) {
      std::string text;
      try {
        text = it->second.render(variables);
      } catch (const TemplateError& e) {
        FAIL_CHECK("refused: " << std::string(e.what()));
        continue;
      }
      CHECK(text == c.text);
      tally.exact += text == c.text;
      continue;
    }
    ++tally.expected_errors;
    try {
      std::string text = it->second.render(variables);
      FAIL_CHECK("rendered where Jinja2 raised " << c.error);
    } catch (const TemplateError& e) {
      CHECK(e.python_form() == c.error);
      tally.refused += e.python_form() == c.error;
    }
  }
  return tally;
}

}  // namespace

TEST_CASE("every case of the 56 real chat templates renders as Jinja2 rendered it, or is refused as it was") {
  const std::vector<Case> cases = load_cases(kTemplates / "cases.jsonl");
  REQUIRE(cases.size() == 392);
  const Tally t = check_cases(cases);
  MESSAGE("byte-exact renders: " << t.exact << " of " << cases.size() - t.expected_errors
                                 << "; errors refused with Jinja2's message: " << t.refused << " of "
                                 << t.expected_errors);
  CHECK(t.exact + t.refused == 392);
}

TEST_CASE("eleven harder conversations per template render as Jinja2 rendered them, or are refused as they were") {
  const std::vector<Case> cases = load_cases(fs::path(SPECD_SOURCE_DIR) / "tests/data/jinja/more_cases.jsonl");
  REQUIRE(cases.size() == 616);
  const Tally t = check_cases(cases);
  MESSAGE("byte-exact renders: " << t.exact << " of " << cases.size() - t.expected_errors
                                 << "; errors refused with Jinja2's message: " << t.refused << " of "
                                 << t.expected_errors);
  CHECK(t.exact + t.refused == 616);
}
