// ModelFile::open: picks the reader from what is on disk. A directory is a Hugging Face folder; a
// regular file must start with the GGUF magic. A lone .safetensors file is refused with a hint,
// since the config and tokenizer live next to it in the folder.
#include "core/io/model_file.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/common/errors.h"
#include "core/io/gguf_model.h"
#include "core/io/hf_model.h"

namespace snapkv {

namespace fs = std::filesystem;

std::unique_ptr<ModelFile> ModelFile::open(const std::string& path) {
    using Kind = FileError::Kind;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) throw FileError(Kind::Io, "model: " + path + ": no such file or directory");
    if (fs::is_directory(st)) return std::make_unique<HfModel>(path);
    if (!fs::is_regular_file(st)) throw FileError(Kind::Io, "model: " + path + ": not a regular file or a directory");

    char head[9] = {};
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileError(Kind::Io, "model: " + path + ": cannot open");
    in.read(head, 9);
    const std::streamsize got = in.gcount();
    if (got >= 4 && std::memcmp(head, "GGUF", 4) == 0) return std::make_unique<GgufModel>(path);

    // safetensors: u64 header length, then the JSON header, which starts with '{'.
    const bool st_ext = fs::path(path).extension() == ".safetensors";
    if (st_ext || (got == 9 && head[8] == '{'))
        throw FileError(Kind::Unsupported, "model: " + path +
                                               ": safetensors file given: pass the folder that holds "
                                               "it with config.json and tokenizer.json");
    return std::make_unique<GgufModel>(path);  // reports the bad magic with the bytes found
}

}  // namespace snapkv
