// Value types that cross from the session worker to the GUI thread, and their Qt meta-type
// registration. Big results travel as shared pointers to const copies: immutable values, never
// pointers into the Session's state. Deliberately no behaviour here.
#pragma once

#include <QMetaType>
#include <QString>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/session/session.h"

namespace studio {

// Tokens a comparison may generate: the compare view's spin box, session files and --max-tokens.
constexpr int kMaxNewTokens = 4096;

// Softmax rows of the observation-window queries of one head over the keys.
struct AttentionRows {
    int64_t layer = 0;
    int64_t head = 0;    // index in the selection (a KV head in kv-head GQA mode)
    int64_t window = 0;  // W rows
    int64_t nKeys = 0;   // L columns
    bool queryAgnostic = false;
    QString label;            // "query head 4" or "mean of query heads 3-5 (KV head 1)"
    std::vector<float> rows;  // [W, L] row-major
};

using SelectionPtr = std::shared_ptr<const snapkv::Selection>;
using AttentionPtr = std::shared_ptr<const AttentionRows>;
using ComparePtr = std::shared_ptr<const snapkv::CompareResult>;
using CancelPtr = std::shared_ptr<std::atomic<bool>>;

// What a retune produced: the selection, optionally a second one for the overlap statistic, the
// focused head's attention rows and the compressed cache size.
struct RetuneResult {
    quint64 id = 0;
    SelectionPtr selection;
    SelectionPtr other;      // null unless an overlap policy was asked for
    AttentionPtr attention;  // null if the focused head could not be read
    int64_t kvBytesFull = 0;
    int64_t kvBytesKept = 0;
    QString cacheNote;  // why the kept cache is larger than the full one, or empty
    double selectMs = 0;
};
using RetunePtr = std::shared_ptr<const RetuneResult>;

void registerMetaTypes();

}  // namespace studio

Q_DECLARE_METATYPE(snapkv::ModelInfo)
Q_DECLARE_METATYPE(snapkv::PrefillSummary)
Q_DECLARE_METATYPE(studio::SelectionPtr)
Q_DECLARE_METATYPE(studio::AttentionPtr)
Q_DECLARE_METATYPE(studio::ComparePtr)
Q_DECLARE_METATYPE(studio::RetunePtr)
