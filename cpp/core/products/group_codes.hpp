// The caller's group keys as codes 0..K−1 (the bindings hand over numpy keys
// of bool, integer, float, datetime, timedelta or string dtype).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/buffer.hpp"

namespace smoothece {

// Group codes of keys: each distinct key (compared as the bytes of its
// element, with −0.0 read as 0.0) gets a code in [0, K): integer keys in a
// narrow range in ascending order of their bytes as a word (a direct table),
// others in order of first appearance (a hash). `first` holds the row where
// each code's key first appears. Keys of 8 bytes, contiguous, that are the
// words 0..K−1 with every one present are their own codes: then `identity`
// is K and codes and first stay empty (no pass writes 8 bytes a row).
struct Factorized {
    RowVector<std::int64_t> codes;
    std::vector<std::int64_t> first;
    std::int64_t identity = 0;
};
Factorized factorize(const char* data, std::int64_t size, std::int64_t stride, std::int64_t itemsize, bool floating,
                     std::int64_t threads);

}  // namespace smoothece
