#pragma once
// heed's exceptions (docs/design.md, "Errors"). Every public entry point checks its input once and
// throws one of these with the actual shapes or names; kernels behind it check nothing.

#include <stdexcept>
#include <string>

namespace heed {

/// Common base of every heed exception: `catch (const heed::Error&)` catches them all,
/// while each one also derives from the matching standard exception.
class Error {
 public:
  virtual ~Error() = default;
  /// The message: what went wrong, with the shapes, names or file involved.
  [[nodiscard]] virtual const char* what() const noexcept = 0;

 protected:
  Error() = default;
  /// Copyable, as exceptions must be.
  Error(const Error&) = default;
  Error& operator=(const Error&) = default;  ///< Copy-assignable, as exceptions must be.
};

/// A tensor's shape or an option does not fit the operation (message gives both shapes).
class ShapeError : public std::invalid_argument, public Error {
 public:
  /// An error whose what() is `message`.
  explicit ShapeError(const std::string& message) : std::invalid_argument(message) {}
  [[nodiscard]] const char* what() const noexcept override { return std::invalid_argument::what(); }
};

/// A file or a named tensor is malformed, or holds what the caller cannot use.
class FormatError : public std::runtime_error, public Error {
 public:
  /// An error whose what() is `message`.
  explicit FormatError(const std::string& message) : std::runtime_error(message) {}
  [[nodiscard]] const char* what() const noexcept override { return std::runtime_error::what(); }
};

/// The operating system refused to open, read or write a file.
class IoError : public std::runtime_error, public Error {
 public:
  /// An error whose what() is `message`.
  explicit IoError(const std::string& message) : std::runtime_error(message) {}
  [[nodiscard]] const char* what() const noexcept override { return std::runtime_error::what(); }
};

}  // namespace heed
