// See atomic_file.h. POSIX calls (mkstemp, write, fsync, close, rename) so that each step's error
// is seen; std::ofstream reports neither a short write on a full disk nor a failing close.
#include "core/common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common/errors.h"

namespace snapkv {
namespace {

namespace fs = std::filesystem;
using Kind = FileError::Kind;

[[noreturn]] void fail(const std::string& path, const std::string& reason, bool existed) {
    throw FileError(Kind::Io,
                    "cannot write '" + path + "': " + reason + (existed ? "; the old file is unchanged" : ""));
}

// Writes all of data to fd; returns 0 or the errno of the failing write, *done = bytes written.
int write_all(int fd, std::string_view data, size_t* done) {
    *done = 0;
    while (*done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + *done, data.size() - *done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EIO;
        *done += static_cast<size_t>(n);
    }
    return 0;
}

// A write that failed part-way: the errno and the bytes written before it.
struct WriteFailed {
    int err;
    size_t done;
};

// Runs produce with a sink writing every piece to fd; WriteFailed on the first failing write.
void produce_to(int fd, const std::function<void(const ByteSink&)>& produce) {
    size_t total = 0;
    produce([&](std::string_view piece) {
        size_t done = 0;
        if (const int err = write_all(fd, piece, &done); err != 0) throw WriteFailed{err, total + done};
        total += done;
    });
}

// Devices and FIFOs: no temporary file can stand in for them.
void write_in_place(const std::string& path, const std::function<void(const ByteSink&)>& produce) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(path, std::strerror(errno), false);
    try {
        produce_to(fd, produce);
    } catch (const WriteFailed& w) {
        ::close(fd);
        fail(path, std::string(std::strerror(w.err)) + " (after " + std::to_string(w.done) + " bytes)", false);
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0) fail(path, std::string("closing failed: ") + std::strerror(errno), false);
}

mode_t default_mode() {
    const mode_t mask = ::umask(0);  // read the umask (there is no getter) and restore it
    ::umask(mask);
    return 0666 & ~mask;
}

}  // namespace

void create_parent_dirs(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    if (parent.empty()) return;
    fs::path prefix;
    for (const fs::path& part : parent) {
        prefix /= part;
        std::error_code ec;
        const fs::file_status st = fs::status(prefix, ec);
        if (fs::is_directory(st)) continue;
        if (fs::exists(st))
            throw FileError(Kind::Io,
                            "cannot write '" + path + "': '" + prefix.string() + "' exists and is not a folder");
        if (!fs::create_directory(prefix, ec) && ec)
            throw FileError(Kind::Io, "cannot write '" + path + "': the folder '" + prefix.string() +
                                          "' is missing and cannot be created: " + ec.message());
    }
}

void write_file_atomic(const std::string& path, std::string_view data) {
    write_file_atomic(path, [&](const ByteSink& write) { write(data); });
}

void write_file_atomic(const std::string& path, const std::function<void(const ByteSink&)>& produce) {
    if (path.empty()) throw FileError(Kind::Io, "cannot write a file with an empty name");
    std::string target = path;
    struct stat st {};
    bool existed = ::stat(path.c_str(), &st) == 0;
    if (existed && S_ISDIR(st.st_mode)) fail(path, "it is a folder", false);
    if (existed && !S_ISREG(st.st_mode)) return write_in_place(path, produce);
    // A link to a file: replace the file it points to, not the link.
    std::error_code ec;
    if (existed && fs::is_symlink(fs::symlink_status(path, ec))) {
        const fs::path real = fs::canonical(path, ec);
        if (!ec) target = real.string();
    }
    create_parent_dirs(target);

    const fs::path t(target);
    const std::string dir = t.has_parent_path() ? t.parent_path().string() : std::string(".");
    std::string tmp = (fs::path(dir) / ("." + t.filename().string() + ".tmp-XXXXXX")).string();
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) fail(path, "cannot create a temporary file in '" + dir + "': " + std::strerror(errno), existed);
    auto abandon = [&](const std::string& reason) {
        ::unlink(tmp.c_str());
        fail(path, reason, existed);
    };
    try {
        produce_to(fd, produce);
    } catch (const WriteFailed& w) {
        ::close(fd);
        abandon(std::string(std::strerror(w.err)) + " (after " + std::to_string(w.done) + " bytes)");
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    // mkstemp makes the file 0600: give it the old file's mode, or what a plain open would.
    if (::fchmod(fd, existed ? (st.st_mode & 07777) : default_mode()) != 0) {
        const int err = errno;
        ::close(fd);
        abandon(std::string("setting the permissions failed: ") + std::strerror(err));
    }
    if (::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        abandon(std::string("flushing to disk failed: ") + std::strerror(err));
    }
    if (::close(fd) != 0) abandon(std::string("closing failed: ") + std::strerror(errno));
    if (::rename(tmp.c_str(), target.c_str()) != 0)
        abandon(std::string("renaming the temporary file over it failed: ") + std::strerror(errno));
}

}  // namespace snapkv
