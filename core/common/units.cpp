// format_bytes: the one byte formatter (the CLI tables, the app's cache report, core's notes).
#include "core/common/units.h"

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

}  // namespace snapkv
