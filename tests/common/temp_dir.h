// A folder under the system temp dir, unique per process and object, removed with the object.
// Shared by the io and model tests; it does not depend on Catch (no REQUIRE on failure: a folder
// that cannot be created throws std::filesystem::filesystem_error).
#pragma once

#include <atomic>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace snapkv::test {

class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        m_path = std::filesystem::temp_directory_path() /
                 ("snapkv_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        std::filesystem::remove_all(m_path);
        std::filesystem::create_directories(m_path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return (m_path / name).string(); }
    std::string path() const { return m_path.string(); }

private:
    std::filesystem::path m_path;
};

}  // namespace snapkv::test
