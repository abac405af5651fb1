// The byte format every sketch is written in (CalibrationSketch,
// GroupedSketch, ComparisonSketch): one envelope, one checksum, one reader
// that trusts nothing, and a bound on what reading may allocate.
//
// Envelope, little-endian (docs/design.md, "Sketch bytes"):
//   0   8  magic, one per kind
//   8   4  u32 format version
//   12  4  u32 header length H (from byte 0 to the payload; fixed per kind and version)
//   16  8  u64 payload length P
//   24  .. the kind's header fields, up to H
//   H   P  the payload
//   H+P 8  u64 XXH64 (seed 0) of bytes [0, H + P)
// and nothing after it. The checksum detects what a transport or a disk does
// to bytes (flips, truncation, splices); it is not an authenticity check, so
// every field is also checked against what a real sketch can hold.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/errors.hpp"

namespace smoothece {

enum class SketchKind : std::uint8_t { Calibration = 0, Grouped = 1, Comparison = 2 };

struct KindFormat {
    char magic[8];
    const char* name;            // in messages: "sketch", "grouped sketch", "comparison sketch"
    std::uint32_t version;       // the version written
    std::uint32_t header_bytes;  // H of that version
};
const KindFormat& format_of(SketchKind kind);

constexpr std::size_t kEnvelopeBytes = 24;  // magic, version, header length, payload length
constexpr std::size_t kChecksumBytes = 8;

// XXH64 with seed 0 (the xxHash specification): the envelope's checksum.
std::uint64_t checksum64(const char* data, std::size_t size);
// FNV-1a, 64 bit: the checksum of CalibrationSketch bytes of versions 2 and 3.
std::uint64_t fnv1a64(const char* data, std::size_t size);

// "corrupt <kind>: <what>" (CorruptSketch, a ValueError in Python).
[[noreturn]] void corrupt(SketchKind kind, const std::string& what);

// Memory the reader may allocate for one object, all its parts together.
// By default the larger of kMinReadMemory and kReadExpansion times the
// bytes' size: reading a real sketch takes at most 56 times its bytes (an
// atom: 72 bytes kept and 40 while read, from 2 bytes or more; a grid about
// 2 times its bytes unless its rows crowd into a few blocks, and while one
// grid is read and checked, 88 bytes an interval), so bytes from elsewhere
// cannot make a reader allocate far more than they could describe. The
// floor reads any one grid of up to 2^20 intervals (the logit default).
constexpr std::uint64_t kMinReadMemory = std::uint64_t{128} << 20;
constexpr std::uint64_t kReadExpansion = 64;
std::uint64_t default_read_memory(std::size_t bytes);

class MemoryBudget {
public:
    explicit MemoryBudget(std::uint64_t limit) : limit_(limit) {}
    // Takes `bytes` before they are allocated; SketchTooLarge if the limit would be passed.
    void take(std::uint64_t bytes, SketchKind kind);
    // Checks that `bytes` more may be allocated for a while (all of it freed
    // before the next take); SketchTooLarge if not.
    void lend(std::uint64_t bytes, SketchKind kind) const;
    std::uint64_t limit() const { return limit_; }
    std::uint64_t used() const { return used_; }

private:
    std::uint64_t limit_, used_ = 0;
};

class ByteWriter {
public:
    template <class T>
    void put(const T& v) {
        out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    }
    void varint(std::uint64_t v);
    // An array as runs (zeros, literals, the literal doubles) until it is covered.
    void runs(const std::vector<double>& v);
    std::string out;
};

class ByteReader {
public:
    ByteReader(const std::string& s, std::size_t begin, std::size_t end, SketchKind kind)
        : s_(s), pos_(begin), end_(end), kind_(kind) {}
    template <class T>
    T get() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, s_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::uint64_t varint();
    double finite();  // a finite double, else corrupt
    // The next `size` bytes, as a string.
    std::string bytes(std::uint64_t size);
    // The next `size` bytes, left in place: their offset in the whole.
    std::size_t skip(std::uint64_t size);
    // Checks that runs cover `size` values exactly, without reading them
    // into memory; returns how many literals they hold (the reader's
    // position moves past them).
    std::uint64_t scan_runs(std::uint64_t size);
    // Reads what scan_runs checked.
    std::vector<double> runs(std::uint64_t size);
    bool done() const { return pos_ == end_; }
    std::size_t pos() const { return pos_; }
    std::size_t left() const { return end_ - pos_; }
    SketchKind kind() const { return kind_; }

private:
    void need(std::uint64_t n) const {
        if (n > end_ - pos_) corrupt(kind_, "the payload is shorter than its contents");
    }
    const std::string& s_;
    std::size_t pos_, end_;
    SketchKind kind_;
};

// The envelope around `fields` (the kind's header fields, H − 24 bytes) and `payload`.
std::string seal(SketchKind kind, const std::string& fields, const std::string& payload);

// Where the parts of checked envelope bytes lie.
struct Envelope {
    std::uint32_t version = 0;
    std::size_t fields = 0, payload = 0, payload_end = 0;  // offsets
};
// Checks the magic, the lengths and the checksum of bytes of the version
// this build writes (CorruptSketch if they do not hold); the caller has
// read the version first (read_version) and dispatched older ones elsewhere.
Envelope open_envelope(const std::string& bytes, SketchKind kind);
// The format version at byte 8, after checking the magic (CorruptSketch if
// the bytes are too short or foreign).
std::uint32_t read_version(const std::string& bytes, SketchKind kind);

}  // namespace smoothece
