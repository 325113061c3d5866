// libFuzzer target: a Hugging Face config.json through parse_json_text (nesting limit) and
// read_hf_config (every supported model type, both transformers config forms), then the checks
// the readers apply to the hyperparameters and the tensor list they imply.
#include "core/common/errors.h"
#include "core/io/arch_tensors.h"
#include "core/io/hf_config.h"
#include "core/io/json_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const nlohmann::json j = snapkv::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size),
                                                         "config.json: ");
        if (!j.is_object()) return 0;
        const snapkv::HfConfig hc = snapkv::read_hf_config(j, "config.json: ");
        snapkv::ConfigKeyNames keys;
        snapkv::validate_config(hc.config, "config.json: ", keys);
        if (hc.config.n_layer <= 64) (void)snapkv::expected_tensors(hc.config);
    } catch (const snapkv::Error&) {}
    return 0;
}
