// POSIX implementation of MappedFile: open, fstat, mmap(PROT_READ, MAP_PRIVATE), close. The
// descriptor is closed right after mapping (the mapping keeps the file alive). No Windows path.
#include "core/io/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common/errors.h"

namespace snapkv {

namespace {

[[noreturn]] void fail_io(const std::string& who, const std::string& path, const char* what, int err) {
    throw FileError(FileError::Kind::Io, who + ": " + path + ": cannot " + what + ": " + std::strerror(err));
}

}  // namespace

void release_pages(const void* data, size_t bytes) noexcept {
#ifdef MADV_PAGEOUT
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(data);
    const uintptr_t first = (begin + page - 1) / page * page, last = (begin + bytes) / page * page;
    if (data != nullptr && page > 0 && last > first)
        (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_PAGEOUT);
#else
    (void)data;
    (void)bytes;
#endif
}

MappedFile::MappedFile(const std::string& path, const std::string& who) : m_path(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail_io(who, path, "open", errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        fail_io(who, path, "stat", err);
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw FileError(FileError::Kind::Io, who + ": " + path + ": not a regular file");
    }
    m_size = static_cast<size_t>(st.st_size);
    if (m_size > 0) {
        void* p = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            fail_io(who, path, "map", err);
        }
        m_data = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : m_path(std::move(other.m_path)), m_data(other.m_data), m_size(other.m_size) {
    other.m_data = nullptr;
    other.m_size = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        release();
        m_path = std::move(other.m_path);
        m_data = other.m_data;
        m_size = other.m_size;
        other.m_data = nullptr;
        other.m_size = 0;
    }
    return *this;
}

void MappedFile::release() noexcept {
    if (m_data != nullptr) ::munmap(const_cast<uint8_t*>(m_data), m_size);
    m_data = nullptr;
    m_size = 0;
}

}  // namespace snapkv
