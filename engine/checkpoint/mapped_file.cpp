#include "engine/checkpoint/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "engine/base/errors.hpp"

namespace specd {

MappedFile MappedFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw SpecdError(ErrorCode::missing_file,
                     name + (err == ENOENT ? ": no such file" : ": cannot open: " + std::string(std::strerror(err))));
  }
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const size_t size = regular ? static_cast<size_t>(st.st_size) : 0;
  void* mapping = regular && size > 0 ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (!regular) throw SpecdError(ErrorCode::missing_file, name + ": not a regular file");
  MappedFile file;
  if (size == 0) return file;
  if (mapping == MAP_FAILED)
    throw SpecdError(ErrorCode::missing_file, name + ": cannot map: " + std::string(std::strerror(map_errno)));
  file.mapping_ = mapping;
  file.size_ = size;
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    mapping_ = std::exchange(other.mapping_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() noexcept {
  if (mapping_) ::munmap(mapping_, size_);
  mapping_ = nullptr;
  size_ = 0;
}

void release_pages(const std::byte* data, size_t bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + page - 1) & ~(page - 1);
  const uintptr_t last = (begin + bytes) & ~(page - 1);
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace specd
