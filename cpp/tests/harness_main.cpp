// A test program's entry (harness.hpp):
//   test_x               every case
//   test_x NAME...       the cases named (exit status 77 when they all
//                        skipped: they cannot run on this machine)
//   test_x --list        the cases' names
//   test_x --count N     fails unless the program holds N cases (ctest's
//                        check that it runs every case the program holds)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness.hpp"

using smoothece::testing::Case;
using smoothece::testing::cases;
using smoothece::testing::failures;
using smoothece::testing::skipped;

namespace {

const Case* find(const char* name) {
    for (const Case& c : cases())
        if (std::strcmp(c.name, name) == 0) return &c;
    return nullptr;
}

void run(const Case& c) {
    std::printf("== %s\n", c.name);
    c.run();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
        for (const Case& c : cases()) std::printf("%s\n", c.name);
        return 0;
    }
    if (argc == 3 && std::strcmp(argv[1], "--count") == 0) {
        const auto expected = std::strtoull(argv[2], nullptr, 10);
        std::printf("%zu cases, ctest knows %llu\n", cases().size(), expected);
        return cases().size() == expected ? 0 : 1;
    }
    if (argc == 1) {
        for (const Case& c : cases()) run(c);
    } else {
        for (int i = 1; i < argc; ++i) {
            const Case* c = find(argv[i]);
            if (c == nullptr) {
                std::printf("no case named %s (--list names them)\n", argv[i]);
                return 2;
            }
            run(*c);
        }
    }
    std::printf("%d failure(s)\n", failures());
    if (failures() > 0) return 1;
    const int ran = argc == 1 ? static_cast<int>(cases().size()) : argc - 1;
    return ran > 0 && skipped() == ran ? smoothece::testing::kSkipped : 0;
}
