// Whole-file output that never leaves a half-written target: the data goes to a temporary file in
// the target's folder, every write, the flush to disk and the close are checked, then the
// temporary is renamed over the target. On failure the old file is untouched, the temporary is
// removed and a FileError says why. Special files (/dev/stdout, /dev/full, FIFOs) are written in
// place, every write checked. No Qt, no LibTorch: the CLI and the tests use it; the GUI has
// QSaveFile.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace snapkv {

// Throws FileError(Io): "cannot write '<path>': <reason>; the old file is unchanged". Creates
// missing parent folders first (create_parent_dirs). Not for concurrent writers of one path.
void write_file_atomic(const std::string& path, std::string_view data);

// The same for output too large to build as one string first (a 50 MB selection JSON):
// produce(write) calls write with the bytes in order, each piece written as it comes. An
// exception from produce abandons the temporary file and propagates.
using ByteSink = std::function<void(std::string_view)>;
void write_file_atomic(const std::string& path, const std::function<void(const ByteSink&)>& produce);

// Creates the folders above path that do not exist yet. Throws FileError(Io) naming the folder
// that cannot be created, or the path component that exists but is not a folder.
void create_parent_dirs(const std::string& path);

}  // namespace snapkv
