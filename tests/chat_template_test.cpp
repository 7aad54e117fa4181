// Chat templates: exact prompt strings and ids for the Llama 3 templates (expected
// values rendered by @lenml/tokenizers' Jinja engine) and the default pair's
// speaker-turns template, rendered by engine/jinja; where a template is looked for,
// and the errors of a missing or failing one.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "engine/tokenizer/chat_template.hpp"
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"

using namespace specd;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = SPECD_SOURCE_DIR;
const fs::path kLlama3Dir = SPECD_LLAMA3_TOKENIZER_DIR;

struct Conversation {
  std::string name;
  std::vector<ChatMessage> messages;
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Conversation> load_conversations(const char* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load((kSource / "tests/data/llama3_tokenizer_fixtures.json").string());
  std::vector<Conversation> out;
  for (simdjson::dom::element c : doc[key].get_array()) {
    Conversation conv{std::string(std::string_view(c["name"])), {}, std::string(std::string_view(c["text"])), {}};
    for (simdjson::dom::element m : c["messages"].get_array()) {
      conv.messages.push_back({std::string(std::string_view(m["role"])), std::string(std::string_view(m["content"]))});
    }
    for (int64_t id : c["ids"].get_array()) conv.ids.push_back(static_cast<int32_t>(id));
    out.push_back(std::move(conv));
  }
  REQUIRE(out.size() == 4);
  return out;
}

const BpeTokenizer& llama3() {
  REQUIRE_MESSAGE(fs::exists(kLlama3Dir / "tokenizer.json"),
                  "missing " << kLlama3Dir << ": run scripts/fetch_llama3_tokenizer.sh (scripts/setup.sh does)");
  static const BpeTokenizer tokenizer(kLlama3Dir / "tokenizer.json");
  return tokenizer;
}

SpecdError chat_error(const fs::path& dir) {
  try {
    (void)ChatTemplate::from_model_dir(dir);
  } catch (const SpecdError& e) {
    return e;
  }
  FAIL("expected a SpecdError for " << dir);
  return SpecdError(ErrorCode::bad_value, "unreachable");
}

fs::path dir_with_config(const std::string& name, const std::string& json) {
  const fs::path dir = fs::temp_directory_path() / ("specd_chat_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json") << json;
  return dir;
}

}  // namespace

TEST_CASE("Llama 3 template: text and ids match apply_chat_template for every conversation") {
  const ChatTemplate chat = ChatTemplate::from_model_dir(kLlama3Dir);
  CHECK(chat.origin() == (kLlama3Dir / "tokenizer_config.json").string());
  for (const auto& c : load_conversations("chat")) {
    CAPTURE(c.name);
    CHECK(chat.render(c.messages) == c.text);
    CHECK(chat.encode(c.messages, llama3()) == c.ids);
  }
}

TEST_CASE("Llama 3.2 template: the date lines and system turn match the official template's output") {
  const ChatTemplate chat = ChatTemplate::from_model_dir(kSource / "tests/data/llama3_2_chat");
  for (const auto& c : load_conversations("chat_llama3_2")) {
    CAPTURE(c.name);
    CHECK(chat.render(c.messages) == c.text);
    CHECK(chat.encode(c.messages, llama3()) == c.ids);
  }
  const std::vector<ChatMessage> user{{"user", "Hi"}};
  ChatTemplate dated = chat;
  dated.set_date_string("01 Jan 2025");
  CHECK(dated.render(user) ==
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
        "Today Date: 01 Jan 2025\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_CASE("speaker-turns template of the default pair: exact strings and ids") {
  const fs::path dir = kSource / "models/target";
  const ChatTemplate chat = ChatTemplate::from_model_dir(dir);
  SentencePieceTokenizer tok(dir / "tokenizer.model");
  REQUIRE(tok.bos_id() == 1);
  REQUIRE(tok.eos_ids() == std::vector<int32_t>{2});
  const auto seg = [&](const std::string& s) { return tok.encode(s, false); };
  const auto join = [](std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };

  const std::vector<ChatMessage> system_user{{"system", "You are terse."}, {"user", "Who goes there?"}};
  CHECK(chat.render(system_user) == "<s>SYSTEM:\nYou are terse.</s>USER:\nWho goes there?</s>ASSISTANT:\n");
  CHECK(chat.encode(system_user, tok) ==
        join({{1}, seg("SYSTEM:\nYou are terse."), {2}, seg("USER:\nWho goes there?"), {2}, seg("ASSISTANT:\n")}));

  const std::vector<ChatMessage> multi{{"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};
  CHECK(chat.render(multi) == "<s>USER:\nHi</s>ASSISTANT:\nHello.</s>USER:\nBye</s>ASSISTANT:\n");
  const auto multi_ids = chat.encode(multi, tok);
  CHECK(
      multi_ids ==
      join({{1}, seg("USER:\nHi"), {2}, seg("ASSISTANT:\nHello."), {2}, seg("USER:\nBye"), {2}, seg("ASSISTANT:\n")}));
  CHECK(std::count(multi_ids.begin(), multi_ids.end(), 2) == 3);

  // Contents are not trimmed in this template; an empty system message keeps its turn.
  const std::vector<ChatMessage> empty_system{{"system", ""}, {"user", " x "}};
  CHECK(chat.render(empty_system) == "<s>SYSTEM:\n</s>USER:\n x </s>ASSISTANT:\n");
  CHECK(chat.encode(empty_system, tok) ==
        join({{1}, seg("SYSTEM:\n"), {2}, seg("USER:\n x "), {2}, seg("ASSISTANT:\n")}));
}

TEST_CASE(
    "the default pair's template renders tools, an assistant's tool_calls and tool turns in its documented syntax") {
  const ChatTemplate chat = ChatTemplate::from_model_dir(kSource / "models/target");
  const std::string tools =
      R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";
  std::vector<ChatMessage> turns{{"user", "Weather in Verona?"}, {"assistant", ""}, {"tool", "Fair, 21 C"}};
  turns[1].tool_calls.push_back({"call_1", "get_weather", R"({"city": "Verona"})"});
  turns[2].tool_call_id = "call_1";
  CHECK(chat.render(turns, tools) ==
        "<s>SYSTEM:\nYou can call these functions:\n"
        R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": )"
        R"({"city": {"type": "string"}}}}})"
        "\nTo call one, answer with <tool_call>{\"name\": NAME, \"arguments\": {...}}</tool_call> and nothing else.</s>"
        "USER:\nWeather in Verona?</s>ASSISTANT:\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": "
        "\"Verona\"}}</tool_call></s>TOOL:\nFair, 21 C</s>ASSISTANT:\n");
  // Without tools the prompt is what it was before the template learnt them.
  const std::vector<ChatMessage> plain{{"user", "Hi"}};
  CHECK(chat.render(plain) == "<s>USER:\nHi</s>ASSISTANT:\n");
  // Arguments that are not JSON reach the template as the text (tojson quotes it).
  turns[1].tool_calls[0].arguments = "not json";
  CHECK(chat.render(turns).find(R"(<tool_call>{"name": "get_weather", "arguments": "not json"}</tool_call>)") !=
        std::string::npos);
  CHECK_THROWS_AS(chat.render(plain, R"({"a":1})"), SpecdError);  // tools must be an array
}

TEST_CASE("a template's raise_exception is invalid_argument naming the template and its line") {
  const ChatTemplate chat(
      "{% for m in messages %}\n{% if m.role == 'tool' %}{{ raise_exception('no tools here') }}"
      "{% endif %}{{ m.content }}{% endfor %}",
      "test.jinja", "<s>", "</s>");
  const std::vector<ChatMessage> tool{{"tool", "x"}};
  try {
    (void)chat.render(tool);
    FAIL("expected an exception");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(std::string(e.what()) == "invalid_argument: template line 2: no tools here");
  }
  const std::vector<ChatMessage> user{{"user", "x"}};
  CHECK(chat.render(user) == "x");
}

TEST_CASE("sources in order: an explicit file, chat_template.jinja, tokenizer_config.json (string or list form)") {
  const fs::path dir = dir_with_config(
      "list_form",
      R"({"bos_token": "<B>", "eos_token": {"content": "<E>"}, "chat_template": [)"
      R"({"name": "tool_use", "template": "tools"}, {"name": "default", "template": "{{ bos_token }}listed"}]})");
  const std::vector<ChatMessage> user{{"user", "x"}};
  CHECK(ChatTemplate::from_model_dir(dir).render(user) == "<B>listed");
  std::ofstream(dir / "chat_template.jinja") << "{{ eos_token }}from the jinja file\n";
  CHECK(ChatTemplate::from_model_dir(dir).render(user) == "<E>from the jinja file");
  CHECK(ChatTemplate::from_model_dir(dir).origin() == (dir / "chat_template.jinja").string());
  const fs::path own = dir / "own.jinja";
  std::ofstream(own) << "{{ messages[0].content }} {{ bos_token }}";
  CHECK(ChatTemplate::from_model_dir(dir, own).render(user) == "x <B>");
  std::ofstream(own) << "line 1\n{% if %}";
  try {
    (void)ChatTemplate::from_model_dir(dir, own);
    FAIL("expected an exception");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(std::string(e.what()).find(own.string() + ": template line 2: ") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("a missing template or an unknown specd template name is unknown_chat_template naming the file") {
  for (const auto& [name, json] : std::vector<std::pair<std::string, std::string>>{
           {"none", R"({"bos_token": "<s>"})"}, {"specd_name", R"({"specd_chat_template": "pirate-speak"})"}}) {
    CAPTURE(name);
    const fs::path dir = dir_with_config(name, json);
    const SpecdError e = chat_error(dir);
    CHECK(e.code() == ErrorCode::unknown_chat_template);
    CHECK(std::string(e.what()).find((dir / "tokenizer_config.json").string()) != std::string::npos);
  }
  CHECK(chat_error(fs::temp_directory_path() / "specd_chat_no_such_dir").code() == ErrorCode::missing_file);
}

TEST_CASE("a role other than system, user, assistant, tool is invalid_argument") {
  const ChatTemplate chat = ChatTemplate::from_model_dir(kSource / "models/target");
  const std::vector<ChatMessage> bad{{"narrator", "x"}};
  try {
    (void)chat.render(bad);
    FAIL("expected an exception");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(std::string(e.what()).find("\"narrator\"") != std::string::npos);
  }
}

TEST_CASE("any Jinja template in tokenizer_config.json renders") {
  const fs::path dir = dir_with_config(
      "jinja", R"({"chat_template": "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"})");
  const std::vector<ChatMessage> messages{{"system", "s"}, {"user", "u"}, {"tool", "t"}};
  CHECK(ChatTemplate::from_model_dir(dir).render(messages) == "[system] s\n[user] u\n[tool] t\n");
}
