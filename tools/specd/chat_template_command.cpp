// `specd chat-template`: renders a Jinja chat template with variables from a JSON file
// (messages, tools, add_generation_prompt, bos_token, ...), so a user sees the exact
// prompt a model gets. Prints the render and nothing else; a template error goes to
// stderr (through main) with a non-zero exit.
#include <iostream>

#include "engine/base/text_file.hpp"
#include "engine/jinja/json_input.hpp"
#include "engine/jinja/template.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace {

struct ChatTemplateArgs {
  std::string template_file, input_file;
};

void run_chat_template(const ChatTemplateArgs& a) {
  const jinja::Template tmpl = jinja::Template::compile(read_whole_file(a.template_file, "--template"));
  const jinja::Value variables = jinja::value_from_json(read_whole_file(a.input_file, "--input"));
  if (!variables.is_mapping())
    throw SpecdError(ErrorCode::bad_value, "--input " + a.input_file + ": not a JSON object");
  std::cout << tmpl.render(variables) << std::flush;
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
  auto args = std::make_shared<ChatTemplateArgs>();
  auto* cmd = app.add_subcommand("chat-template", "Render a Jinja chat template with variables from a JSON file");
  cmd->add_option("--template", args->template_file, "the template (a .jinja file)")->required();
  cmd->add_option("--input", args->input_file,
                  "a JSON object of the template's variables: messages, tools, add_generation_prompt, bos_token, ...")
      ->required();
  cmd->callback([args] { run_chat_template(*args); });
}

}  // namespace specd::cli
