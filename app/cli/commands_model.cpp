// Model-level subcommands: `snapkv info` (architecture, hyperparameters, tensor types, tokenizer,
// template), `snapkv tokenize`, and `snapkv logits`, which writes the float32 logits at every
// position of a prompt as JSON, so that any model file can be checked against another
// implementation (transformers, llama.cpp) position by position. No SnapKV here.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/cli_checks.h"
#include "app/cli/command_options.h"
#include "app/cli/commands.h"
#include "core/common/errors.h"
#include "core/common/units.h"
#include "core/session/session.h"

namespace snapkv::cli {
namespace {

using json = nlohmann::json;

struct LogitsOpts {
    std::string model, device = "cpu", dtype = "float32", weights = "native", cache_type = "f32";
    std::string ids, prompt, out;
};

// "1, 2,3" -> {1, 2, 3}; InputError naming the option and the bad item.
std::vector<int32_t> parse_ids(const std::string& text) {
    std::vector<int32_t> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
        if (b == std::string::npos)
            throw InputError("--ids: empty item in '" + text + "'; expected integers separated by commas");
        item = item.substr(b, e - b + 1);
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size() || v < 0 || v > INT32_MAX)
            throw InputError("--ids: '" + item + "' is not a token id; expected integers from 0 separated by commas");
        out.push_back(static_cast<int32_t>(v));
    }
    if (out.empty()) throw InputError("--ids: no token ids given");
    return out;
}

void cmd_logits(const LogitsOpts& o, const std::atomic<bool>* cancel) {
    if (o.ids.empty() == o.prompt.empty()) throw InputError("logits: give exactly one of --ids and --prompt");
    check_output_not_input("--json", o.out, {{"the model (--model)", o.model}});
    Session s;
    s.load_model(o.model, {o.device, o.dtype, o.weights, o.cache_type});
    PromptSpec p;
    if (!o.ids.empty()) p.ids = parse_ids(o.ids);
    else p.text = o.prompt;
    const LogitsOutput r = s.logits(p, cancel);
    json rows = json::array();
    for (size_t t = 0; t < r.ids.size(); ++t) {
        const float* row = r.logits.data() + t * static_cast<size_t>(r.n_vocab);
        rows.push_back(std::vector<float>(row, row + r.n_vocab));
    }
    const std::string text = json{{"ids", r.ids}, {"n_vocab", r.n_vocab}, {"logits", std::move(rows)}}.dump();
    if (o.out == "-") {
        std::cout << text << "\n";
        return;
    }
    std::ofstream f(o.out, std::ios::binary);
    if (!f) throw InputError("--json: cannot write '" + o.out + "'");
    f << text << "\n";
    if (!f) throw InputError("--json: writing '" + o.out + "' failed");
}

// "none (prompts are raw)" or "the model's (N lines, M bytes); named: tool_use".
std::string chat_template_text(const ModelInfo& i) {
    if (i.chat_template.empty()) return "none (prompts are raw)";
    const auto lines = std::count(i.chat_template.begin(), i.chat_template.end(), '\n') + 1;
    std::string out = "the model's (" + std::to_string(lines) + " lines, " + std::to_string(i.chat_template.size()) +
                      " bytes)";
    for (size_t k = 0; k < i.chat_template_names.size(); ++k)
        out += (k == 0 ? "; named: " : ", ") + i.chat_template_names[k];
    return out;
}

void cmd_info(const Common& c, bool as_json) {
    auto s = open_session(c, true);
    const ModelInfo i = s->model_info();
    const ModelConfig& k = i.config;
    std::map<std::string, int> types;
    for (const auto& t : i.tensors) types[t.type]++;
    if (as_json) {
        json j = {{"path", i.path},
                  {"format", i.format},
                  {"arch", k.arch},
                  {"name", k.name},
                  {"n_layer", k.n_layer},
                  {"n_embd", k.n_embd},
                  {"n_ff", k.n_ff},
                  {"n_head", k.n_head},
                  {"n_head_kv", k.n_head_kv},
                  {"head_dim", k.head_dim},
                  {"n_rot", k.n_rot},
                  {"n_vocab", k.n_vocab},
                  {"n_ctx_train", k.n_ctx_train},
                  {"rope_freq_base", k.rope_freq_base},
                  {"rope_neox", k.rope_neox},
                  {"rope_scaling", k.rope_scaling.type},
                  {"rms_eps", k.rms_eps},
                  {"qkv_bias", k.qkv_bias},
                  {"tied_embeddings", k.tied_embeddings},
                  {"tensor_types", types},
                  {"n_tensors", i.tensors.size()},
                  {"tokenizer", i.tokenizer_kind},
                  {"chat_template", i.chat_template.empty() ? json(nullptr) : json(i.chat_template)},
                  {"chat_template_names", i.chat_template_names},
                  {"weights", i.weights},
                  {"cache_type", i.cache_type},
                  {"weight_bytes", i.weight_bytes}};
        j["architecture"] = arch_json(k);
        write_json(j, "");
        return;
    }
    std::cout << "file           " << i.path << " (" << i.format << ")\n"
              << "architecture   " << k.arch << "  name: " << k.name << "\n"
              << "layers         " << k.n_layer << "\n"
              << "embedding      " << k.n_embd << "   feed-forward " << k.n_ff << "\n"
              << "heads          " << k.n_head << " query, " << k.n_head_kv << " key/value, head_dim " << k.head_dim
              << "\n"
              << "vocabulary     " << k.n_vocab << "   context " << k.n_ctx_train << "\n"
              << "rope           base " << k.rope_freq_base << ", " << k.n_rot << " dims, "
              << (k.rope_neox ? "NeoX" : "normal") << " layout, scaling " << k.rope_scaling.type << "\n"
              << "rms eps        " << k.rms_eps << "   qkv bias " << (k.qkv_bias ? "yes" : "no")
              << "   tied embeddings " << (k.tied_embeddings ? "yes" : "no") << "\n"
              << arch_text(k) << "tensors        " << i.tensors.size() << ":";
    for (const auto& [t, n] : types) std::cout << " " << n << " " << t;
    std::cout << "\n"
              << "tokenizer      " << i.tokenizer_kind << "\n"
              << "chat template  " << chat_template_text(i) << "\n"
              << "weights        " << format_bytes(i.weight_bytes) << " "
              << (i.weights == "f32"         ? "as " + i.dtype
                  : i.weights == "native-q8" ? "in the file's formats, 8-bit inputs (native-q8)"
                                             : "in the file's formats (native)")
              << " on " << i.device << "\n";
}

void cmd_tokenize(const Common& c, const std::string& text, bool no_bos, bool as_json) {
    auto s = open_session(c, true);
    const std::vector<int32_t> ids = s->tokenize(text, !no_bos, true);
    json pieces = json::array();
    for (int32_t id : ids) pieces.push_back(s->token_text(id));
    if (as_json) {
        write_json({{"ids", ids}, {"pieces", pieces}}, "");
        return;
    }
    for (size_t i = 0; i < ids.size(); ++i)
        std::cout << std::setw(7) << ids[i] << "  " << pieces[i].get<std::string>() << "\n";
}

}  // namespace

json arch_json(const ModelConfig& c) {
    json layers = json::array();
    for (const LayerConfig& lc : c.layers)
        layers.push_back({{"sliding_window", lc.sliding_window},
                          {"rope_freq_base", lc.rope_freq_base},
                          {"rope_scaled", lc.rope_scaled}});
    return {{"features", model_features(c)},
            {"sliding_window", c.sliding_window},
            {"sliding_layers", sliding_layers_text(c)},
            {"attn_scale", c.attn_scale},
            {"attn_softcap", c.attn_softcap},
            {"final_softcap", c.final_softcap},
            {"qk_norm", c.qk_norm},
            {"post_norms", c.post_norms},
            {"ffn_activation", c.ffn_act == FfnActivation::GeluTanh ? "gelu_tanh" : "silu"},
            {"embd_scale", c.embd_scale},
            {"layers", layers}};
}

std::string arch_text(const ModelConfig& c) {
    const std::vector<std::string> f = model_features(c);
    if (f.empty()) return "features       none beyond Llama 2's\n";
    std::string out;
    for (size_t i = 0; i < f.size(); ++i) out += (i == 0 ? "features       " : "               ") + f[i] + "\n";
    return out;
}

void register_model_commands(CLI::App& app, const std::atomic<bool>* cancel) {
    static LogitsOpts o;
    auto* cmd = app.add_subcommand("logits", "Float32 logits at every position of a prompt, as JSON");
    cmd->add_option("--model,-m", o.model, "GGUF file or Hugging Face folder")->required();
    cmd->add_option("--device", o.device, "cpu, cuda or cuda:N")->capture_default_str();
    cmd->add_option("--dtype", o.dtype, "float32, float16 or bfloat16 (the last two on CUDA)")->capture_default_str();
    cmd->add_option("--weights", o.weights,
                    "native: the file's weight formats in memory; native-q8: the same with 8-bit inputs to "
                    "decode's products; f32: dequantized at load")
        ->capture_default_str();
    add_cache_type(cmd, o.cache_type);
    cmd->add_option("--ids", o.ids, "Token ids, comma separated (used verbatim)");
    cmd->add_option("--prompt,-p", o.prompt, "Text, tokenized with the model's vocab (BOS as the vocab says)");
    cmd->add_option("--json", o.out,
                    "Output file ('-' for stdout): {\"ids\": [...], \"n_vocab\": V, \"logits\": [[...], ...]}")
        ->required();
    cmd->callback([cancel] { cmd_logits(o, cancel); });
    // Options live as long as the app: one static block per subcommand.
    {
        static Common c;
        static bool as_json = false;
        auto* cmd = app.add_subcommand("info", "Architecture, hyperparameters, tensor types, tokenizer, template");
        add_common(cmd, c);
        cmd->add_flag("--json", as_json, "Print JSON");
        cmd->callback([] { cmd_info(c, as_json); });
    }
    {
        static Common c;
        static std::string text;
        static bool as_json = false, no_bos = false;
        auto* cmd = app.add_subcommand("tokenize", "Token ids and pieces of a text");
        add_common(cmd, c);
        cmd->add_option("--text,-t", text, "Text to tokenize")->required();
        cmd->add_flag("--no-bos", no_bos, "Do not add BOS/EOS even if the model's metadata says so");
        cmd->add_flag("--json", as_json, "Print {\"ids\": [...], \"pieces\": [...]}");
        cmd->callback([] { cmd_tokenize(c, text, no_bos, as_json); });
    }
}

}  // namespace snapkv::cli
