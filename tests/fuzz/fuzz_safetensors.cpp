// libFuzzer target: a .safetensors file (8-byte header length, JSON header, data) through
// SafetensorsFile: header parsing, entry validation, overlaps, metadata.
#include "core/common/errors.h"
#include "core/io/safetensors_reader.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = snapkv::fuzz::write_input("model.safetensors", data, size);
    try {
        snapkv::SafetensorsFile f(path);
        for (const snapkv::SafetensorsTensor& t : f.tensors()) (void)f.data(t);
        (void)f.metadata();
    } catch (const snapkv::Error&) {}
    return 0;
}
