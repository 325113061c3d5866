// SnapKV (Li et al. 2024, arXiv 2404.14469; FasterDecoding/SnapKV snapkv_utils.py): the window
// queries' attention summed over the window, pooled with kernel K, and per head the top C - W
// prefix positions. The scoring is shared with PyramidKV and AdaKV (pooled_votes, policy_rule.h).
#include "core/snapkv/policy_rule.h"

namespace snapkv {

const PolicyRule& snapkv_rule() {
    static const PooledVotesRule rule;
    return rule;
}

}  // namespace snapkv
