// See json_text.h. The depth check is a single pass over the bytes that tracks strings (and their
// escapes) the way a JSON lexer does, so brackets inside strings do not count.
#include "core/io/json_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/common/errors.h"

namespace snapkv {

nlohmann::json parse_json_text(std::string_view text, const std::string& where, int max_depth) {
    using Kind = FileError::Kind;
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;  // the escaped character cannot end the string
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                throw FileError(Kind::BadJson, where + "JSON nested more than " + std::to_string(max_depth) +
                                                   " levels deep (at byte " + std::to_string(i) +
                                                   "); real files nest a few levels");
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        throw FileError(Kind::BadJson, where + "not valid JSON: " + e.what());
    }
}

nlohmann::json read_json_file(const std::string& path, const std::string& where, int max_depth, uint64_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileError(FileError::Kind::Io, where + "cannot open: " + std::strerror(errno));
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes)
        throw FileError(FileError::Kind::BadSize, where + "file is " + std::to_string(size) + " bytes, more than the " +
                                                      std::to_string(max_bytes) + " allowed for this kind of file");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw FileError(FileError::Kind::Io, where + "cannot read: " + std::strerror(errno));
    return parse_json_text(ss.str(), where, max_depth);
}

}  // namespace snapkv
