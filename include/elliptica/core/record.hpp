#pragma once
/// @file record.hpp
/// Result records: an ordered list of named values (booleans, integers, reals, strings, nested
/// records, lists of records). A report (an IFMM factorisation's levels, a plan's set-up) is
/// turned into a Record once, in the module that owns it; the CLI writes it as JSON
/// (to_json) and the Python bindings return it as a dict, so both show the same field names.
#include <cstddef>
#include <string>
#include <vector>

namespace elliptica {

class Record {
 public:
  enum class Kind { Bool, Int, Real, String, Object, List };
  struct Field;

  Record& set(const std::string& key, bool v);
  Record& set(const std::string& key, int v) { return set(key, static_cast<long long>(v)); }
  Record& set(const std::string& key, long v) { return set(key, static_cast<long long>(v)); }
  Record& set(const std::string& key, long long v);
  Record& set(const std::string& key, unsigned long v) { return set(key, static_cast<long long>(v)); }
  Record& set(const std::string& key, unsigned long long v) { return set(key, static_cast<long long>(v)); }
  Record& set(const std::string& key, double v);
  Record& set(const std::string& key, const std::string& v);
  Record& set(const std::string& key, const char* v) { return set(key, std::string(v)); }
  Record& set(const std::string& key, const Record& v);                ///< nested record
  Record& set(const std::string& key, const std::vector<Record>& v);   ///< list of records
  /// Appends the fields of r (after this record's own).
  Record& merge(const Record& r);

  const std::vector<Field>& fields() const { return fields_; }

 private:
  std::vector<Field> fields_;
};

struct Record::Field {
  std::string key;
  Kind kind = Kind::Int;
  bool b = false;
  long long i = 0;
  double d = 0;
  std::string s;
  std::vector<Record> records;  ///< Object: exactly one; List: the elements
};

/// JSON text of r: an object with the fields in order; strings escaped (RFC 8259: quote,
/// backslash, control characters as \u00hh escapes), reals with 10 significant digits, non-finite reals
/// as null. `indent`: spaces before each nested line (the object's own braces unindented).
std::string to_json(const Record& r, int indent = 0);

/// s as a JSON string literal, quotes included (the escaping of to_json).
std::string json_quote(const std::string& s);

}  // namespace elliptica
