// The errors the core throws. The bindings translate each into one Python
// exception with the same fields, so no caller ever parses a message.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace smoothece {

// A row (or a whole argument) breaks the input contract. `index` is the
// first bad row (−1 when the argument as a whole is bad, e.g. all weights
// zero), `value` its value, `count` how many rows are bad, `size` how many
// there are. The message says all of it; the fields let callers (the CLI,
// Dask) relocate the error into their own coordinates.
class InputError : public std::invalid_argument {
public:
    InputError(const std::string& message, std::string argument_, std::int64_t index_ = -1, double value_ = 0.0,
               std::int64_t count_ = 0, std::int64_t size_ = 0)
        : std::invalid_argument(message),
          argument(std::move(argument_)),
          index(index_),
          value(value_),
          count(count_),
          size(size_) {}

    std::string argument;  // "f", "y", "weights", "threads", ...
    std::int64_t index;
    double value;
    std::int64_t count;
    std::int64_t size;
};

// A sketch's bytes (or its merged state) are not a consistent sketch:
// "corrupt <kind>: <what>".
class CorruptSketch : public std::invalid_argument {
public:
    explicit CorruptSketch(const std::string& what, const std::string& kind = "sketch")
        : std::invalid_argument("corrupt " + kind + ": " + what) {}
};

// Reading a sketch's bytes would allocate more than the reader allows
// (products/envelope.hpp).
class SketchTooLarge : public std::invalid_argument {
public:
    explicit SketchTooLarge(const std::string& message) : std::invalid_argument(message) {}
};

// The caller asked to stop (Ctrl-C reached the bindings' interrupt check).
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("interrupted") {}
};

}  // namespace smoothece
