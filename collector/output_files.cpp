#include "collector/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <streambuf>

namespace nb {

namespace {

// std::ostream over a file descriptor we opened ourselves (O_EXCL,
// O_NOFOLLOW), which std::ofstream cannot do.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  ~FdBuf() override { sync(); }
  bool failed() const { return failed_; }
  int sync() override {
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) { failed_ = true; break; }
      p += n;
    }
    setp(buf_, buf_ + sizeof buf_);
    return failed_ ? -1 : 0;
  }
  int overflow(int c) override {
    if (sync() != 0) return traits_type::eof();
    if (c != traits_type::eof()) { *pptr() = static_cast<char>(c); pbump(1); }
    return c == traits_type::eof() ? 0 : c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize done = 0;
    while (done < n) {
      const std::streamsize room = epptr() - pptr();
      if (room == 0) {
        if (sync() != 0) break;
        continue;
      }
      const std::streamsize k = std::min(room, n - done);
      std::memcpy(pptr(), s + done, static_cast<size_t>(k));
      pbump(static_cast<int>(k));
      done += k;
    }
    return done;
  }

 private:
  int fd_;
  bool failed_ = false;
  char buf_[1 << 16];
};

bool make_parents(const std::string& path, std::string& error) {
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] != '/') continue;
    const std::string dir = path.substr(0, i);
    if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
      error = "cannot create directory " + dir + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace

// A file appears under its name only when complete: the name is claimed
// first (create_output_file's checks: no overwrite unless asked, never
// through a symlink), the content goes to <name>.partial, which is renamed
// over the claim at the end. A process killed mid-write (a second signal, a
// crash) leaves an empty file and a .partial, never a truncated file that
// looks finished.
bool write_output_file(const std::string& path, bool overwrite, const std::function<void(std::ostream&)>& fill,
                       std::string& problem) {
  const int claim = create_output_file(path, overwrite, problem);
  if (claim < 0) return false;
  ::close(claim);
  const std::string partial = path + ".partial";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) {
    problem = "cannot create " + partial + ": " + std::strerror(errno);
    return false;
  }
  bool failed;
  {
    FdBuf buf(fd);
    std::ostream os(&buf);
    fill(os);
    os.flush();
    failed = buf.failed();
  }
  if (::close(fd) != 0) failed = true;
  if (failed) {
    problem = "could not write all of " + partial + ": " + std::strerror(errno);
    ::unlink(partial.c_str());  // a full disk keeps neither the torso nor the empty claim
    ::unlink(path.c_str());
    return false;
  }
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    problem = "could not rename " + partial + " to " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}


int create_output_file(const std::string& path, bool overwrite, std::string& error) {
  if (!make_parents(path, error)) return -1;
  int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
  flags |= overwrite ? O_TRUNC : O_EXCL;
  const int fd = ::open(path.c_str(), flags, 0666);  // the user's umask applies
  if (fd < 0) {
    if (errno == EEXIST) error = path + " exists; not overwritten (set NB_OVERWRITE=1 to replace it)";
    else if (errno == ELOOP) error = path + " is a symbolic link; not written";
    else error = "cannot create " + path + ": " + std::strerror(errno);
  }
  return fd;
}

}  // namespace nb
