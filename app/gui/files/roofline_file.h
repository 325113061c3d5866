// The last figures of `snapkv bench --roofline` (core/session/runtime.h's roofline_state_path) as
// a few lines of HTML for the About box: when and on what they were measured, the bounds, and each
// phase's share of its bound. Reads only; an absent file is a hint to run the benchmark, an
// unreadable one says why.
#pragma once

#include <QString>

namespace studio {

QString rooflineSummaryHtml(const QString& path);

}  // namespace studio
