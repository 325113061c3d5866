// format_bytes: the one byte formatter (the CLI tables, the app's cache report, core's notes).
#include "core/common/units.h"

#include <cmath>
#include <cstdio>

namespace snapkv {

std::string format_bytes(int64_t b) {
    char buf[32];
    if (b >= (int64_t(1) << 40)) std::snprintf(buf, sizeof buf, "%.1f TiB", double(b) / double(int64_t(1) << 40));
    else if (b >= (int64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(int64_t(1) << 30));
    else if (b >= (int64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(int64_t(1) << 20));
    else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024.0);
    else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
    return buf;
}

std::string group_thousands(int64_t n) {
    std::string digits = std::to_string(n < 0 ? -n : n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return n < 0 ? "-" + out : out;
}

std::string format_seconds(double seconds) {
    char buf[64];
    if (seconds < 10) std::snprintf(buf, sizeof buf, "%.1f s", seconds);
    else if (seconds < 120) std::snprintf(buf, sizeof buf, "%.0f s", seconds);
    else if (seconds < 7200) {
        const auto s = static_cast<int64_t>(std::lround(seconds));
        std::snprintf(buf, sizeof buf, "%lld min %lld s", static_cast<long long>(s / 60),
                      static_cast<long long>(s % 60));
    } else {
        std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
    }
    return buf;
}

}  // namespace snapkv
