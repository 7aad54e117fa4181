#pragma once
// A read-only private memory mapping of a whole regular file: what the checkpoint readers
// (safetensors, GGUF) parse and hand out tensor pointers into. Move-only; the mapping
// lives until its last owner is destroyed.
#include <cstddef>
#include <filesystem>

namespace specd {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws SpecdError(missing_file) naming the file when it cannot be opened, is not a
  // regular file, or cannot be mapped. An empty file gives an empty mapping (data()
  // null, size() 0): each format says what it needed instead.
  static MappedFile open(const std::filesystem::path& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::byte* data() const { return static_cast<const std::byte*>(mapping_); }
  size_t size() const { return size_; }

 private:
  void unmap() noexcept;
  void* mapping_ = nullptr;
  size_t size_ = 0;
};

// Drops the pages of [data, data + bytes) from the resident set once they have been
// copied out. Only whole pages inside the range: neighbours may share its first and last
// page. Advice only: on failure the pages simply stay until the mapping is closed.
void release_pages(const std::byte* data, size_t bytes);

}  // namespace specd
