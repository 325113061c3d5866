// See kv_type.h.
#include "core/kv/kv_type.h"

#include <algorithm>
#include <cctype>

#include "core/common/errors.h"

namespace snapkv {

bool parse_kv_type(const std::string& text, KvType* out) {
    std::string s = text;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    KvType t;
    if (s == "f32" || s == "float32") t = KvType::F32;
    else if (s == "f16" || s == "float16") t = KvType::F16;
    else if (s == "bf16" || s == "bfloat16") t = KvType::BF16;
    else if (s == "q8_0" || s == "q8") t = KvType::Q8_0;
    else return false;
    if (out) *out = t;
    return true;
}

KvType kv_type_from_name(const std::string& text) {
    KvType t = KvType::F32;
    if (!parse_kv_type(text, &t)) throw InputError("cache type '" + text + "' is not one of f32, f16, bf16, q8_0");
    return t;
}

}  // namespace snapkv
