// Result records and their JSON text (include/elliptica/core/record.hpp).
#include "elliptica/core/record.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace elliptica {

namespace {

Record::Field make(const std::string& key, Record::Kind kind) {
  Record::Field f;
  f.key = key;
  f.kind = kind;
  return f;
}

void json_string(std::ostringstream& os, const std::string& v) {
  os << '"';
  for (const char ch : v) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      os << '\\' << ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      os << buf;
    } else {
      os << ch;
    }
  }
  os << '"';
}

void write(std::ostringstream& os, const Record& r, int indent) {
  const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
  os << '{';
  bool first = true;
  for (const auto& f : r.fields()) {
    os << (first ? "\n" : ",\n") << pad;
    first = false;
    json_string(os, f.key);
    os << ": ";
    switch (f.kind) {
      case Record::Kind::Bool: os << (f.b ? "true" : "false"); break;
      case Record::Kind::Int: os << f.i; break;
      case Record::Kind::Real:
        if (std::isfinite(f.d)) os << f.d;
        else os << "null";
        break;
      case Record::Kind::String: json_string(os, f.s); break;
      case Record::Kind::Object: write(os, f.records.front(), indent + 2); break;
      case Record::Kind::List:
        os << '[';
        for (std::size_t k = 0; k < f.records.size(); ++k) {
          os << (k ? ",\n" : "\n") << pad << "  ";
          write(os, f.records[k], indent + 4);
        }
        if (!f.records.empty()) os << '\n' << pad;
        os << ']';
        break;
    }
  }
  if (!first) os << '\n' << std::string(static_cast<std::size_t>(indent), ' ');
  os << '}';
}

}  // namespace

Record& Record::set(const std::string& key, bool v) {
  auto f = make(key, Kind::Bool);
  f.b = v;
  fields_.push_back(std::move(f));
  return *this;
}
Record& Record::set(const std::string& key, long long v) {
  auto f = make(key, Kind::Int);
  f.i = v;
  fields_.push_back(std::move(f));
  return *this;
}
Record& Record::set(const std::string& key, double v) {
  auto f = make(key, Kind::Real);
  f.d = v;
  fields_.push_back(std::move(f));
  return *this;
}
Record& Record::set(const std::string& key, const std::string& v) {
  auto f = make(key, Kind::String);
  f.s = v;
  fields_.push_back(std::move(f));
  return *this;
}
Record& Record::set(const std::string& key, const Record& v) {
  auto f = make(key, Kind::Object);
  f.records.push_back(v);
  fields_.push_back(std::move(f));
  return *this;
}
Record& Record::set(const std::string& key, const std::vector<Record>& v) {
  auto f = make(key, Kind::List);
  f.records = v;
  fields_.push_back(std::move(f));
  return *this;
}
Record& Record::merge(const Record& r) {
  fields_.insert(fields_.end(), r.fields_.begin(), r.fields_.end());
  return *this;
}

std::string to_json(const Record& r, int indent) {
  std::ostringstream os;
  os.precision(10);
  write(os, r, indent);
  return os.str();
}

std::string json_quote(const std::string& s) {
  std::ostringstream os;
  json_string(os, s);
  return os.str();
}

}  // namespace elliptica
