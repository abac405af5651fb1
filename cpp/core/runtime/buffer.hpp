// Buffers of one value per row (10^7 rows: 80 MB), filled by a parallel
// pass right after they are made.
#pragma once

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace smoothece {

// An allocator for such buffers. It leaves new elements uninitialised
// (resize does not write the buffer once with zeros before the pass writes
// it), and asks Linux for transparent huge pages for large ones, as numpy
// does for its arrays: where THP is in "madvise" mode, first touching 80 MB
// then costs ~40 page faults instead of ~20,000.
template <class T>
struct RowAllocator {
    using value_type = T;
    static constexpr std::size_t kHugePage = std::size_t{1} << 21;

    RowAllocator() = default;
    template <class U>
    RowAllocator(const RowAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < 2 * kHugePage) return static_cast<T*>(::operator new(bytes));
        void* p = ::operator new(bytes, std::align_val_t{kHugePage});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint: failure changes nothing
#endif
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (n * sizeof(T) < 2 * kHugePage) ::operator delete(p);
        else ::operator delete(p, std::align_val_t{kHugePage});
    }
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;  // default-initialised: no write for numbers
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

template <class T, class U>
bool operator==(const RowAllocator<T>&, const RowAllocator<U>&) noexcept {
    return true;
}
template <class T, class U>
bool operator!=(const RowAllocator<T>&, const RowAllocator<U>&) noexcept {
    return false;
}

template <class T>
using RowVector = std::vector<T, RowAllocator<T>>;

}  // namespace smoothece
