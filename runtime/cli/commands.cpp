#include "runtime/cli/commands.h"

namespace tachyon {

// Declared here, defined in runtime/cli/cmd_*.cpp. Keep the list in the order
// `tachyon --help` shows it.
cli::command_spec make_version_command();
cli::command_spec make_chat_render_command();
cli::command_spec make_run_command();
cli::command_spec make_eval_command();
cli::command_spec make_generate_command();
cli::command_spec make_tokenize_command();
cli::command_spec make_quantize_command();
cli::command_spec make_inspect_command();
cli::command_spec make_logits_command();
cli::command_spec make_bench_decode_command();
cli::command_spec make_bench_agents_command();
cli::command_spec make_bench_synth_model_command();
cli::command_spec make_bench_memory_command();
cli::command_spec make_bench_matmul_command();
cli::command_spec make_bench_attention_command();
cli::command_spec make_bench_constraint_command();
cli::command_spec make_bench_logs_command();
cli::command_spec make_bench_queue_command();
cli::command_spec make_runs_list_command();
cli::command_spec make_runs_show_command();
cli::command_spec make_tool_command();
cli::command_spec make_logs_inspect_command();
cli::command_spec make_logs_parse_command();
cli::command_spec make_serve_command();
cli::command_spec make_mcp_serve_command();
cli::command_spec make_worker_command();

std::vector<cli::command_spec> all_commands() {
    std::vector<cli::command_spec> out;
    out.push_back(make_run_command());
    out.push_back(make_eval_command());
    out.push_back(make_generate_command());
    out.push_back(make_tokenize_command());
    out.push_back(make_quantize_command());
    out.push_back(make_inspect_command());
    out.push_back(make_logits_command());
    out.push_back(make_bench_decode_command());
    out.push_back(make_bench_agents_command());
    out.push_back(make_bench_synth_model_command());
    out.push_back(make_bench_memory_command());
    out.push_back(make_bench_matmul_command());
    out.push_back(make_bench_attention_command());
    out.push_back(make_bench_constraint_command());
    out.push_back(make_bench_logs_command());
    out.push_back(make_bench_queue_command());
    out.push_back(make_runs_list_command());
    out.push_back(make_runs_show_command());
    out.push_back(make_tool_command());
    out.push_back(make_logs_inspect_command());
    out.push_back(make_logs_parse_command());
    out.push_back(make_serve_command());
    out.push_back(make_mcp_serve_command());
    out.push_back(make_worker_command());
    out.push_back(make_chat_render_command());
    out.push_back(make_version_command());
    return out;
}

}  // namespace tachyon
