// libFuzzer target: a tokenizer.json through read_tokenizer_json and, when it is accepted, the
// tokenizer built from it encoding and decoding a fixed text (special tokens, bytes, spaces).
#include "core/common/errors.h"
#include "core/io/tokenizer_json.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = snapkv::fuzz::write_input("tokenizer.json", data, size);
    try {
        const snapkv::VocabData vocab = snapkv::read_tokenizer_json(path, "");
        const auto tok = snapkv::Tokenizer::create(vocab);
        const std::vector<int32_t> ids = tok->encode("Hello  world!\n<s>caf\xc3\xa9 123</s>", true, true);
        (void)tok->decode(ids);
    } catch (const snapkv::Error&) {}
    return 0;
}
