// libFuzzer target: a GGUF file through the whole reader (header, metadata, tensor infos, layout
// checks), the model mapping (config, vocabulary, tensor validation) and, when it opens, every
// tensor's read (non-finite scan + dequantization) and the metadata summary.
#include <vector>

#include "core/common/errors.h"
#include "core/io/gguf_model.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = snapkv::fuzz::write_input("model.gguf", data, size);
    try {
        snapkv::GgufModel m(path);
        (void)m.metadata_summary();
        std::vector<float> buf;
        for (const snapkv::TensorDesc& t : m.tensors()) {
            int64_t n = 1;
            for (int64_t d : t.shape) n *= d;
            if (n > (int64_t(1) << 24)) continue;  // valid but too large to be worth reading here
            buf.resize(static_cast<size_t>(n));
            try {
                m.read_f32(t.name, buf.data());
            } catch (const snapkv::Error&) {}
        }
    } catch (const snapkv::Error&) {}
    return 0;
}
