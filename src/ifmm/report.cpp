// The IFMM report as a result record (include/elliptica/ifmm/ifmm.hpp).
#include "elliptica/ifmm/ifmm.hpp"

namespace elliptica::ifmm {

Record to_record(const IfmmReport& r) {
  std::vector<Record> levels;
  for (const auto& l : r.levels)
    levels.push_back(Record()
                         .set("level", l.level)
                         .set("boxes", l.boxes)
                         .set("colours", l.colours)
                         .set("node_parallel", l.node_parallel)
                         .set("unknowns", l.unknowns)
                         .set("initial_max_rank", l.initial_max_rank)
                         .set("max_rank", l.max_rank)
                         .set("mean_rank", l.mean_rank)
                         .set("seconds", l.seconds)
                         .set("bytes", l.bytes));
  return Record()
      .set("name", r.name)
      .set("epsilon", r.epsilon)
      .set("sigma", r.sigma)
      .set("top", r.top)
      .set("bottom", r.bottom)
      .set("leaf_level", r.leaf_level)
      .set("order", r.order)
      .set("seconds", r.seconds)
      .set("bytes", r.bytes)
      .set("peak_bytes", r.peak_bytes)
      .set("top_size", r.top_size)
      .set("top_seconds", r.top_seconds)
      .set("levels", levels);
}

}  // namespace elliptica::ifmm
