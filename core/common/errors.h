// Typed errors thrown by core. Every message names where (file or parameter), which item, the
// value found and what was allowed. Callers (CLI, GUI worker) catch snapkv::Error and show what().
// Deliberately no error codes or global state: one exception type per kind of failure.
#pragma once

#include <stdexcept>
#include <string>

namespace snapkv {

// Control bytes other than newline and tab, written as \xNN. Messages quote names and values
// read from files: an embedded NUL would end what() early (and the rest of the message with it),
// other control bytes would reach the terminal.
inline std::string printable_message(const std::string& msg) {
    static const char* const hex = "0123456789abcdef";
    std::string out;
    out.reserve(msg.size());
    for (const char ch : msg) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += ch;
        }
    }
    return out;
}

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& msg) : std::runtime_error(printable_message(msg)) {}
    explicit Error(const char* msg) : Error(std::string(msg)) {}
};

// A model, tokenizer or document file that cannot be read as what it claims to be.
class FileError : public Error {
public:
    enum class Kind {
        Io,             // cannot open / read / map
        BadMagic,       // not a GGUF / safetensors file
        BadVersion,     // unsupported format version
        Truncated,      // the file ends before an item it declares
        BadCount,       // absurd number of tensors / metadata entries / array elements
        BadSize,        // absurd string length, dimension count or dimension
        Overflow,       // an offset or size overflows or points past the end
        BadValue,       // a metadata value of the wrong type or out of range
        UnknownType,    // an unknown tensor or metadata type id
        MissingTensor,  // a tensor the architecture needs is absent
        ShapeMismatch,  // a tensor's shape disagrees with the hyperparameters
        Unsupported,    // a valid file we do not support (architecture, tensor type)
        BadJson,        // config.json / tokenizer.json / index malformed
    };
    FileError(Kind kind, const std::string& msg) : Error(msg), m_kind(kind) {}
    Kind kind() const { return m_kind; }

private:
    Kind m_kind;
};

// Invalid user parameters (window, kernel, budget, sampling settings, empty document, ...).
class InputError : public Error {
public:
    using Error::Error;
};

// Thrown when a cancel flag is observed; not a failure, the caller keeps what it had.
class Cancelled : public Error {
public:
    Cancelled() : Error("cancelled") {}
};

}  // namespace snapkv
