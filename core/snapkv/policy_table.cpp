// Lookups over kPolicyTable (policy_table.h): by id, by name or alias, and the name lists the CLI
// help, the GUI and error messages print.
#include "core/snapkv/policy_table.h"

#include "core/common/errors.h"

namespace snapkv {
namespace {

// Row i must describe Policy(i): the GUI's list index and the enum value are the same number.
constexpr bool rows_in_enum_order() {
    for (size_t i = 0; i < kPolicyCount; ++i)
        if (static_cast<size_t>(kPolicyTable[i].id) != i) return false;
    return true;
}

void split_aliases(const char* aliases, std::vector<std::string>& out) {
    std::string cur;
    for (const char* c = aliases; *c; ++c) {
        if (*c == ',') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else if (*c != ' ') {
            cur += *c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
}

}  // namespace

const PolicyInfo& policy_info(Policy p) {
    static_assert(sizeof(kPolicyTable) > 0, "the policy table is empty");
    const auto i = static_cast<size_t>(p);
    if (i >= kPolicyCount) throw InputError("policy: " + std::to_string(i) + " is not a row of the policy table");
    // (The order is checked once here rather than with static_assert: the table holds function
    // addresses, which are not constant expressions for every compiler's constexpr evaluation.)
    static const bool ordered = rows_in_enum_order();
    if (!ordered) throw Error("policy table: rows are not in enum order");
    return kPolicyTable[i];
}

std::vector<Policy> all_policies() {
    std::vector<Policy> out;
    for (const PolicyInfo& row : kPolicyTable) out.push_back(row.id);
    return out;
}

std::string policy_name(Policy p) { return policy_info(p).name; }

std::vector<std::string> policy_names() {
    std::vector<std::string> out;
    for (const PolicyInfo& row : kPolicyTable) out.emplace_back(row.name);
    return out;
}

std::vector<std::string> policy_spellings() {
    std::vector<std::string> out = policy_names();
    for (const PolicyInfo& row : kPolicyTable) split_aliases(row.aliases, out);
    return out;
}

std::string policy_list_text() {
    std::string s;
    for (const PolicyInfo& row : kPolicyTable) s += (s.empty() ? "" : ", ") + std::string(row.name);
    return s;
}

Policy parse_policy(const std::string& s) {
    for (const PolicyInfo& row : kPolicyTable) {
        if (s == row.name) return row.id;
        std::vector<std::string> aliases;
        split_aliases(row.aliases, aliases);
        for (const auto& a : aliases)
            if (s == a) return row.id;
    }
    throw InputError("policy: '" + s + "' is not a policy; allowed: " + policy_list_text());
}

}  // namespace snapkv
