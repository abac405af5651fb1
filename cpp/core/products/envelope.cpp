#include "products/envelope.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace smoothece {
namespace {

bool little_endian() {
    const std::uint16_t one = 1;
    unsigned char first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

void need_little_endian() {
    if (!little_endian()) throw std::runtime_error("sketch bytes need a little-endian machine");
}

constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ULL, kPrime2 = 0xC2B2AE3D27D4EB4FULL,
                        kPrime3 = 0x165667B19E3779F9ULL, kPrime4 = 0x85EBCA77C2B2AE63ULL,
                        kPrime5 = 0x27D4EB2F165667C5ULL;

inline std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline std::uint64_t read64(const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline std::uint32_t read32(const char* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline std::uint64_t xxh_round(std::uint64_t acc, std::uint64_t input) {
    acc += input * kPrime2;
    return rotl(acc, 31) * kPrime1;
}
inline std::uint64_t xxh_merge(std::uint64_t acc, std::uint64_t v) {
    acc ^= xxh_round(0, v);
    return acc * kPrime1 + kPrime4;
}

std::string mebibytes(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
    return text;
}

}  // namespace

const KindFormat& format_of(SketchKind kind) {
    static const KindFormat formats[3] = {
        {{'S', 'M', 'E', 'C', 'E', 'S', 'K', '\0'}, "sketch", 4, 64},
        {{'S', 'M', 'E', 'C', 'E', 'G', 'K', '\0'}, "grouped sketch", 5, 56},
        {{'S', 'M', 'E', 'C', 'E', 'C', 'S', '\0'}, "comparison sketch", 1, 72},
    };
    return formats[static_cast<int>(kind)];
}

std::uint64_t checksum64(const char* p, std::size_t size) {
    need_little_endian();
    const char* const end = p + size;
    std::uint64_t h;
    if (size >= 32) {
        std::uint64_t v1 = kPrime1 + kPrime2, v2 = kPrime2, v3 = 0, v4 = 0 - kPrime1;
        for (const char* limit = end - 32; p <= limit; p += 32) {
            v1 = xxh_round(v1, read64(p));
            v2 = xxh_round(v2, read64(p + 8));
            v3 = xxh_round(v3, read64(p + 16));
            v4 = xxh_round(v4, read64(p + 24));
        }
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = xxh_merge(h, v1);
        h = xxh_merge(h, v2);
        h = xxh_merge(h, v3);
        h = xxh_merge(h, v4);
    } else {
        h = kPrime5;
    }
    h += static_cast<std::uint64_t>(size);
    for (; end - p >= 8; p += 8) h = rotl(h ^ xxh_round(0, read64(p)), 27) * kPrime1 + kPrime4;
    if (end - p >= 4) {
        h = rotl(h ^ (static_cast<std::uint64_t>(read32(p)) * kPrime1), 23) * kPrime2 + kPrime3;
        p += 4;
    }
    for (; p < end; ++p) h = rotl(h ^ (static_cast<std::uint64_t>(static_cast<unsigned char>(*p)) * kPrime5), 11) * kPrime1;
    h ^= h >> 33;
    h *= kPrime2;
    h ^= h >> 29;
    h *= kPrime3;
    h ^= h >> 32;
    return h;
}

std::uint64_t fnv1a64(const char* data, std::size_t size) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i < size; ++i) {
        h ^= static_cast<unsigned char>(data[i]);
        h *= 0x100000001b3ULL;
    }
    return h;
}

void corrupt(SketchKind kind, const std::string& what) { throw CorruptSketch(what, format_of(kind).name); }

std::uint64_t default_read_memory(std::size_t bytes) {
    const std::uint64_t scaled = static_cast<std::uint64_t>(bytes) > UINT64_MAX / kReadExpansion
                                     ? UINT64_MAX
                                     : static_cast<std::uint64_t>(bytes) * kReadExpansion;
    return std::max(kMinReadMemory, scaled);
}

void MemoryBudget::lend(std::uint64_t bytes, SketchKind kind) const {
    MemoryBudget after = *this;
    after.take(bytes, kind);
}

void MemoryBudget::take(std::uint64_t bytes, SketchKind kind) {
    if (bytes > limit_ - used_) {
        const std::string name = format_of(kind).name;
        throw SketchTooLarge(name + " bytes need more memory to read than max_memory allows (" +
                             mebibytes(used_ > UINT64_MAX - bytes ? UINT64_MAX : used_ + bytes) + " at least, " +
                             mebibytes(limit_) + " allowed; by default " + mebibytes(kMinReadMemory) + " or " +
                             std::to_string(kReadExpansion) +
                             " times the bytes' size, whichever is more): pass a larger max_memory to from_bytes if "
                             "the bytes come from a source you trust");
    }
    used_ += bytes;
}

void ByteWriter::varint(std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

void ByteWriter::runs(const std::vector<double>& v) {
    auto zero = [](double x) { return x == 0.0 && !std::signbit(x); };
    std::size_t i = 0;
    while (i < v.size()) {
        std::size_t zeros = 0, literals = 0;
        while (i + zeros < v.size() && zero(v[i + zeros])) ++zeros;
        while (i + zeros + literals < v.size() && !zero(v[i + zeros + literals])) ++literals;
        varint(zeros);
        varint(literals);
        for (std::size_t k = 0; k < literals; ++k) put(v[i + zeros + k]);
        i += zeros + literals;
    }
}

std::uint64_t ByteReader::varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        need(1);
        const auto byte = static_cast<unsigned char>(s_[pos_++]);
        if (shift == 63 && byte > 1) break;  // more than 64 bits
        v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            if (byte == 0 && shift > 0) corrupt(kind_, "a variable-length integer is not in its shortest form");
            return v;
        }
    }
    corrupt(kind_, "a variable-length integer is too long");
}

double ByteReader::finite() {
    const double v = get<double>();
    if (!std::isfinite(v)) corrupt(kind_, "a non-finite number in the payload");
    return v;
}

std::string ByteReader::bytes(std::uint64_t size) {
    need(size);
    std::string out = s_.substr(pos_, static_cast<std::size_t>(size));
    pos_ += static_cast<std::size_t>(size);
    return out;
}

std::size_t ByteReader::skip(std::uint64_t size) {
    need(size);
    const std::size_t at = pos_;
    pos_ += static_cast<std::size_t>(size);
    return at;
}

std::uint64_t ByteReader::scan_runs(std::uint64_t size) {
    std::uint64_t covered = 0, literals = 0;
    while (covered < size) {
        const std::uint64_t zeros = varint(), count = varint();
        if (zeros > size - covered || count > size - covered - zeros) corrupt(kind_, "an array overruns its length");
        if (zeros + count == 0) corrupt(kind_, "an empty run in an array");
        if (count > left() / sizeof(double)) corrupt(kind_, "the payload is shorter than its contents");
        pos_ += static_cast<std::size_t>(count * sizeof(double));
        covered += zeros + count;
        literals += count;
    }
    return literals;
}

std::vector<double> ByteReader::runs(std::uint64_t size) {
    std::vector<double> v;
    v.reserve(static_cast<std::size_t>(size));
    while (v.size() < size) {
        const std::uint64_t zeros = varint(), literals = varint();
        if (zeros > size - v.size() || literals > size - v.size() - zeros) corrupt(kind_, "an array overruns its length");
        if (zeros + literals == 0) corrupt(kind_, "an empty run in an array");
        v.insert(v.end(), static_cast<std::size_t>(zeros), 0.0);
        for (std::uint64_t k = 0; k < literals; ++k) {
            const double x = finite();
            if (x == 0.0 && !std::signbit(x)) corrupt(kind_, "a zero written as a literal");
            v.push_back(x);
        }
    }
    return v;
}

std::string seal(SketchKind kind, const std::string& fields, const std::string& payload) {
    need_little_endian();
    const KindFormat& format = format_of(kind);
    if (fields.size() + kEnvelopeBytes != format.header_bytes) throw std::logic_error("a header of the wrong size");
    ByteWriter w;
    w.out.reserve(format.header_bytes + payload.size() + kChecksumBytes);
    w.out.append(format.magic, sizeof format.magic);
    w.put(format.version);
    w.put(format.header_bytes);
    w.put(static_cast<std::uint64_t>(payload.size()));
    w.out += fields;
    w.out += payload;
    w.put(checksum64(w.out.data(), w.out.size()));
    return w.out;
}

std::uint32_t read_version(const std::string& bytes, SketchKind kind) {
    need_little_endian();
    const KindFormat& format = format_of(kind);
    if (bytes.size() < 12 || std::memcmp(bytes.data(), format.magic, sizeof format.magic) != 0) {
        if (bytes.size() >= 8 && std::memcmp(bytes.data(), "SMECE", 5) == 0)
            for (SketchKind other : {SketchKind::Calibration, SketchKind::Grouped, SketchKind::Comparison})
                if (std::memcmp(bytes.data(), format_of(other).magic, 8) == 0)
                    corrupt(kind, std::string("these are the bytes of a ") + format_of(other).name + ", not of a " +
                                      format.name);
        corrupt(kind, bytes.size() < 12 ? "too short (" + std::to_string(bytes.size()) + " bytes)"
                                        : std::string("not smoothece ") + format.name + " bytes (wrong magic bytes)");
    }
    std::uint32_t version;
    std::memcpy(&version, bytes.data() + 8, sizeof version);
    return version;
}

Envelope open_envelope(const std::string& bytes, SketchKind kind) {
    const KindFormat& format = format_of(kind);
    Envelope e;
    e.version = read_version(bytes, kind);
    if (e.version != format.version) throw std::logic_error("open_envelope reads the current version only");
    if (bytes.size() < format.header_bytes + kChecksumBytes)
        corrupt(kind, "too short (" + std::to_string(bytes.size()) + " bytes)");
    const std::size_t body_end = bytes.size() - kChecksumBytes;
    std::uint64_t stored;
    std::memcpy(&stored, bytes.data() + body_end, sizeof stored);
    if (stored != checksum64(bytes.data(), body_end)) corrupt(kind, "checksum mismatch (the bytes were altered or truncated)");
    ByteReader header(bytes, 12, kEnvelopeBytes, kind);
    const auto header_bytes = header.get<std::uint32_t>();
    const auto payload = header.get<std::uint64_t>();
    if (header_bytes != format.header_bytes) corrupt(kind, "bad header length");
    if (payload != body_end - header_bytes) corrupt(kind, "the payload length does not match the bytes' size");
    e.fields = kEnvelopeBytes;
    e.payload = header_bytes;
    e.payload_end = body_end;
    return e;
}

}  // namespace smoothece
