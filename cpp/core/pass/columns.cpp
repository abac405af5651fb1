#include "pass/columns.hpp"

namespace smoothece {

void read_doubles(const Column& c, std::int64_t begin, std::int64_t count, double* out) {
    dispatch_dtype(c.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (c.stride == static_cast<std::int64_t>(sizeof(T))) {  // contiguous: its own loop, which vectorizes
            const T* p = reinterpret_cast<const T*>(c.data) + begin;
            for (std::int64_t k = 0; k < count; ++k) out[k] = static_cast<double>(p[k]);
        } else {
            for (std::int64_t k = 0; k < count; ++k) out[k] = static_cast<double>(c.at<T>(begin + k));
        }
        return 0;
    });
}

}  // namespace smoothece
