// Human-readable units shared by core, the CLI and the app: byte sizes ("377.0 MiB") and elapsed
// wall time in milliseconds. Plain functions, no locale, no Qt; they format, they do not measure
// memory or keep timers.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace snapkv {

// Powers of 1024 with one decimal: "12.0 GiB", "377.0 MiB", "16.0 KiB", "100 B" (TiB above).
std::string format_bytes(int64_t bytes);

// "4,096": thousands separated by commas (the CLI and the app print token counts so).
std::string group_thousands(int64_t n);
// "0.4 s", "41 s", "3 min 20 s", "2.5 h"
std::string format_seconds(double seconds);

// Milliseconds from t0 to now on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace snapkv
