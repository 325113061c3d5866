// libFuzzer target: a SnapKV Studio session file through the core JSON helper the app can share
// (parse_json_text: nesting limit, then nlohmann), and the reads a session loader makes: typed
// lookups of every field, a dump (recursive) and a copy.
#include "core/common/errors.h"
#include "core/io/json_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const nlohmann::json j = snapkv::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size),
                                                         "session: ");
        const nlohmann::json copy = j;
        (void)copy.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
        if (!j.is_object()) return 0;
        for (const char* key : {"format", "model", "prompt", "params", "display", "focus", "view", "window"}) {
            const auto it = j.find(key);
            if (it == j.end()) continue;
            if (it->is_object())
                for (auto f = it->begin(); f != it->end(); ++f) (void)f.value().type_name();
        }
    } catch (const snapkv::Error&) {}
    return 0;
}
