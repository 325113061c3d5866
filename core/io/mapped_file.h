// A whole file mapped read-only into memory (POSIX mmap), unmapped when the object dies. The GGUF
// and safetensors readers parse straight from the mapping, so weights are never copied twice.
// It does not interpret the bytes and does not keep the file descriptor open; an empty file maps to
// data() == nullptr with size() == 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace snapkv {

class MappedFile {
public:
    // who: the message prefix ("gguf", "safetensors"). Throws FileError(Io) naming the path and
    // the system error when the file cannot be opened, stat'ed or mapped.
    MappedFile(const std::string& path, const std::string& who);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;

    const std::string& path() const { return m_path; }
    const uint8_t* data() const { return m_data; }
    size_t size() const { return m_size; }

private:
    void release() noexcept;

    std::string m_path;
    const uint8_t* m_data = nullptr;
    size_t m_size = 0;
};

// Asks the kernel to take back the resident pages that lie wholly inside [data, data + bytes)
// (madvise MADV_PAGEOUT), so that memory read once (a layer's weights during an analysis) stops
// counting against the process. Contents never change: file pages are read again on the next
// access, anonymous ones kept (or swapped). No effect where the kernel lacks it (before 5.4).
void release_pages(const void* data, size_t bytes) noexcept;

}  // namespace snapkv
