// The C++ tests' registry. TEST(name) { ... } defines a case (at the start of
// a line, name in lower case: CMakeLists.txt reads these lines and makes each
// case a ctest of its own); check(ok, what) records one check of the case
// that runs; skip(why) says the case cannot run here (ctest shows it as
// skipped). A test program (harness_main.cpp) runs the cases named on its
// command line, or all of them, and fails when a check fails.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace smoothece::testing {

struct Case {
    const char* name;
    void (*run)();
};

inline std::vector<Case>& cases() {
    static std::vector<Case> all;
    return all;
}

// Failed checks of the cases run so far.
inline int& failures() {
    static int count = 0;
    return count;
}

// Cases run so far that said they cannot run here.
inline int& skipped() {
    static int count = 0;
    return count;
}

// The exit status of a program whose cases all skipped (ctest's SKIP_RETURN_CODE).
constexpr int kSkipped = 77;

struct Registration {
    Registration(const char* name, void (*run)()) { cases().push_back({name, run}); }
};

inline void check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures();
}

inline void skip(const std::string& why) {
    std::printf("skip %s\n", why.c_str());
    ++skipped();
}

}  // namespace smoothece::testing

#define TEST(name)                                                                            \
    static void test_##name();                                                                \
    static const ::smoothece::testing::Registration registration_##name(#name, &test_##name); \
    static void test_##name()
