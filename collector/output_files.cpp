#include "collector/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

// Where a file's content goes while it is written: a new file of its own,
// created exclusively (never an existing name, never through a link), so
// nothing planted there is written through or truncated. `<name>.partial`
// when free, else `<name>.partial.<pid>.<n>`. Returns an fd, or -1 with
// `problem` set.
int open_temp(const std::string& path, std::string& temp, std::string& problem) {
  static std::atomic<unsigned> serial{0};
  temp = path + ".partial";
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;  // the user's umask applies
    if (errno != EEXIST) break;
    temp = path + ".partial." + std::to_string(getpid()) + "." + std::to_string(serial.fetch_add(1) + 1);
  }
  problem = "cannot create " + temp + ": " + std::strerror(errno) + "; " + path + " not written";
  return -1;
}

// Puts the finished `temp` under `path`: without `overwrite` only if nothing
// is there (link, which fails if something is), else by rename, which
// replaces a file without truncating it (its other hard links keep their
// content). Never over a symbolic link.
bool publish(const std::string& temp, const std::string& path, bool overwrite, std::string& problem) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    problem = path + " is a symbolic link; not written";
    return false;
  }
  if (!overwrite) {
    if (::link(temp.c_str(), path.c_str()) == 0) {
      ::unlink(temp.c_str());
      return true;
    }
    if (errno == EEXIST) {
      problem = exists_message(path);
      return false;
    }
    // A file system without hard links: rename, once nothing is there.
    if (::lstat(path.c_str(), &st) == 0) {
      problem = exists_message(path);
      return false;
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    problem = "could not rename " + temp + " to " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool make_parent_dirs(const std::string& path, std::string& problem) { return make_parents(path, problem); }

int open_unlinked(const std::string& near_path, std::string& problem) {
  const size_t slash = near_path.rfind('/');
  const std::string d = slash == std::string::npos ? "." : slash == 0 ? "/" : near_path.substr(0, slash);
  int fd = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // File systems without O_TMPFILE: a fresh name beside the output (under
  // its prefix, like every name nb makes), unlinked at once.
  static std::atomic<unsigned> serial{0};
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string name = near_path + ".scratch-" + std::to_string(getpid()) + "-" + std::to_string(serial.fetch_add(1));
    fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::unlink(name.c_str());
      return fd;
    }
    if (errno != EEXIST) break;
  }
  problem = "cannot create scratch files in " + d + ": " + std::strerror(errno);
  return -1;
}

std::string exists_message(const std::string& path) {
  return path + " exists; not overwritten (NB_OVERWRITE=1 or nbprof --overwrite replaces it; or choose another NB_OUT)";
}

bool write_output_file(const std::string& path, bool overwrite, const std::function<void(std::ostream&)>& fill,
                       std::string& problem) {
  if (!make_parents(path, problem)) return false;
  struct stat st {};
  if (!overwrite && ::lstat(path.c_str(), &st) == 0) {  // before any work
    problem = S_ISLNK(st.st_mode) ? path + " is a symbolic link; not written" : exists_message(path);
    return false;
  }
  std::string temp;
  const int fd = open_temp(path, temp, problem);
  if (fd < 0) return false;
  bool failed = false;
  int write_errno = 0;
  try {
    FdBuf buf(fd);
    std::ostream os(&buf);
    fill(os);
    os.flush();
    failed = buf.failed() || !os;  // a fill that could not produce all of its content sets badbit
    write_errno = errno;
  } catch (...) {
    // Out of memory while building the content: nothing under the name.
    ::close(fd);
    ::unlink(temp.c_str());
    problem = "out of memory while writing " + path + "; not written";
    return false;
  }
  if (::close(fd) != 0) failed = true;
  if (failed) {
    problem = "could not write all of " + temp + ": " + std::strerror(write_errno ? write_errno : errno);
    ::unlink(temp.c_str());  // a full disk keeps no torso
    return false;
  }
  if (!publish(temp, path, overwrite, problem)) {
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}

}  // namespace nb
